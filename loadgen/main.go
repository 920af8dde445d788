// Command gatebench-loadgen offers a constant arrival rate, open model, and measures every
// request's latency from the moment the schedule meant it to start.
//
// It runs the constant_rate phases of a gatebench workload document (gatebench.core.workload)
// one after the other, the next phase's arrivals continuing the schedule where the previous
// one's ended. Arrival k of n in a phase of duration d is due at k × d / n after the phase's
// start; it is sent when due whether or not earlier requests have been answered (an open
// model: a stalled server cannot slow the arrivals down), and its latency runs from that due
// time to the end of its response. So a server that stalls shows its whole queue in the
// latencies (no coordinated omission), and the engine's own delay in sending (its schedule
// lag) is recorded beside each request, so a late engine can never pass for a slow server.
//
// One dispatcher keeps the schedule and a pool of connection workers sends (engine.go), each
// request written as prepared bytes on a plain HTTP/1.1 connection (http1.go, request.go):
// no goroutine, allocation or text formatting per request.
//
// With -start-at EPOCH_MS the schedule starts at that wall-clock time (several testers sharing
// a rate start together); the backend reset and other controls of the first phase run before.
//
// With -realtime the engine's thread runs at the lowest real-time priority (sys.go), for a
// generator given a core of its own: woken by its timer, it no longer waits for another
// process's slice to end, which is where most of its schedule lag came from on a busy machine.
// Without the privilege it says so and runs as before.
//
// Arrivals ride a pool of kept-alive connections (-connections keep-alive, the default), as
// clients behind a real gateway do; -connections new opens a connection per request.
// At most -max-in-flight requests are outstanding: an arrival beyond that is refused and
// counted as an error of the target, entered at the request timeout (a lower bound), since only
// a target that holds requests fills the limit. An arrival the engine itself cannot send (it
// fell further behind its schedule than the request timeout, or the system refused a socket:
// no ephemeral port, no file descriptor) is dropped: the probe says the tester, not the target,
// ran out.
//
// Output: -out FILE, binary records batched per worker (the layout is in records.go), read by
// gatebench.core.loadlog.
//
// Standard library only (built like the backend by scripts/setup.d).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"
)

const format = "gatebench-workload/1"

type control struct {
	Method string `json:"method"`
	URL    string `json:"url"`
	Status int    `json:"status"`
	WaitMS int64  `json:"wait_ms"`
}

type injection struct {
	Kind       string  `json:"kind"`
	Rate       float64 `json:"rate"`
	DurationMS int64   `json:"duration_ms"`
}

type phaseSpec struct {
	ID         string                   `json:"id"`
	Index      int                      `json:"index"`
	Target     string                   `json:"target"`
	Measured   bool                     `json:"measured"`
	Seed       int64                    `json:"seed"`
	Injection  injection                `json:"injection"`
	Before     []control                `json:"before"`
	Params     map[string]generatorSpec `json:"params"`
	Request    requestSpec              `json:"request"`
	UserBase   int64                    `json:"user_base"`
	UserStride int64                    `json:"user_stride"`
	Answers    *answersSpec             `json:"answers"` // check every answer (answers.go)
}

type document struct {
	Format    string      `json:"format"`
	SecretEnv []string    `json:"secret_env"`
	SkipFile  string      `json:"skip_file"`
	Phases    []phaseSpec `json:"phases"`
}

func main() {
	workload := flag.String("workload", "", "the workload document (JSON)")
	out := flag.String("out", "", "where the records go")
	connections := flag.String("connections", "keep-alive", "keep-alive (a pool) or new (a connection per request)")
	maxInFlight := flag.Int("max-in-flight", 10000, "the most outstanding requests")
	startAt := flag.Int64("start-at", 0, "epoch ms at which the schedule starts (testers start together); 0: now")
	rt := flag.Bool("realtime", false, "run the engine thread at the lowest real-time priority (a core of its own)")
	flag.Parse()
	runtime.GOMAXPROCS(1) // one thread does the work: the runtime's own work goes on it too
	if *workload == "" || *out == "" {
		fail("usage: gatebench-loadgen -workload FILE -out FILE [-connections keep-alive|new] [-max-in-flight N] [-start-at EPOCH_MS] [-realtime]")
	}
	if *connections != "keep-alive" && *connections != "new" {
		fail("-connections: expected keep-alive or new, got %q", *connections)
	}
	if *maxInFlight < 1 {
		fail("-max-in-flight: expected at least 1, got %d", *maxInFlight)
	}
	doc, err := readDocument(*workload)
	if err != nil {
		fail("%s: %v", *workload, err)
	}
	secrets, tokens, err := readSecrets(doc)
	if err != nil {
		fail("%v", err)
	}
	newConnections := *connections == "new"
	phases := make([]*phase, 0, len(doc.Phases))
	for i, spec := range doc.Phases {
		p, err := preparePhase(spec, secrets, tokens, newConnections)
		if err != nil {
			fail("%s: /phases/%d: %v", *workload, i, err)
		}
		phases = append(phases, p)
	}
	file, err := os.Create(*out)
	if err != nil {
		fail("%v", err)
	}
	clk := newRealClock()
	rec := newRecorder(file)
	eng := newEngine(clk, rec, *maxInFlight)
	eng.net, err = newEpollNet(eng, clk, newConnections)
	if err != nil {
		fail("epoll: %v", err)
	}
	if *rt {
		eng.onThread = raisePriority()
	}

	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		eng.cancel()
	}()

	// the engine is one thread (network.go): its CPU share is of one core
	rec.header(clk.t0.UnixMicro(), runtime.GOMAXPROCS(0))
	start := clk.now() + 5*time.Millisecond
	if *startAt > 0 {
		start = time.UnixMilli(*startAt).Sub(clk.t0)
	}
	eng.run(phases, doc.SkipFile, start)
	if err := rec.flush(); err != nil {
		fail("writing %s: %v", *out, err)
	}
	if err := file.Close(); err != nil {
		fail("writing %s: %v", *out, err)
	}
	if eng.stopped() {
		os.Exit(130)
	}
}

// raisePriority gives the thread that calls it the real-time priority (sys.go) when it has not
// had it yet, saying once why when the system refuses. The priority is the thread's, and the
// engine's goroutine may change threads: between phases (the controls' HTTP calls block in Go's
// own poller) or after a system call the runtime saw (opening a connection), hence a look at
// each wake-up. It is not locked to a thread: the runtime's own work (the collector, a
// preemption) then runs on the same thread, where a locked one hands the P to an ordinary
// thread and waits for it back.
func raisePriority() func() {
	warned, raised := false, map[int]bool{}
	return func() {
		tid := gettid()
		if raised[tid] {
			return
		}
		raised[tid] = true
		if err := realtime(); err != nil && !warned {
			warned = true
			fmt.Fprintf(os.Stderr, "gatebench-loadgen: -realtime: %v; running at the ordinary priority\n", err)
		}
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "gatebench-loadgen: "+format+"\n", args...)
	os.Exit(2)
}

func readDocument(path string) (*document, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc document
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Format != format {
		return nil, fmt.Errorf("not a %s document (format: %q)", format, doc.Format)
	}
	return &doc, nil
}

// readSecrets reads every variable the document names (never the document itself), and the
// token files of per-user auth headers.
func readSecrets(doc *document) (map[string]string, map[string][]string, error) {
	secrets := map[string]string{}
	for _, name := range doc.SecretEnv {
		value, ok := os.LookupEnv(name)
		if !ok || value == "" {
			return nil, nil, fmt.Errorf("environment variable %s is not set (the plan's auth needs it)", name)
		}
		secrets[name] = value
	}
	tokens := map[string][]string{}
	for _, p := range doc.Phases {
		for _, h := range p.Request.Auth {
			if !h.PerUser {
				continue
			}
			var env string
			if json.Unmarshal(h.Env, &env) != nil {
				continue
			}
			if _, done := tokens[env]; done {
				continue
			}
			list, err := userTokens(secrets[env])
			if err != nil {
				return nil, nil, fmt.Errorf("the token file in %s: %v", env, err)
			}
			tokens[env] = list
		}
	}
	return secrets, tokens, nil
}

// phase is one phase, ready to run.
type phase struct {
	spec     phaseSpec
	count    int64
	duration time.Duration
	build    *builder
	timeout  time.Duration
}

func preparePhase(spec phaseSpec, secrets map[string]string, tokens map[string][]string, newConnections bool) (*phase, error) {
	if spec.Injection.Kind != "constant_rate" {
		return nil, fmt.Errorf("injection: gatebench-loadgen runs constant_rate phases only, got %q", spec.Injection.Kind)
	}
	if spec.Injection.Rate <= 0 || spec.Injection.DurationMS <= 0 {
		return nil, fmt.Errorf("injection: a rate above 0 and a duration are needed")
	}
	gens := map[string]*generator{}
	for name, g := range spec.Params {
		gen, err := newGenerator(name, g, spec.Seed)
		if err != nil {
			return nil, fmt.Errorf("params/%s: %v", name, err)
		}
		gens[name] = gen
	}
	b, err := newBuilder(spec.Request, gens, secrets, tokens, spec.UserBase, spec.UserStride, spec.Seed, newConnections)
	if err != nil {
		return nil, fmt.Errorf("request: %v", err)
	}
	if spec.Answers != nil {
		// every request names itself: none is the same as another
		b.answers, b.static = newAnswerCheck(spec.Answers, spec.ID), nil
	}
	// the count gatebench expects (Python's round: half to even, Injection.expected_requests)
	count := int64(math.RoundToEven(spec.Injection.Rate * float64(spec.Injection.DurationMS) / 1000.0))
	timeout := time.Duration(spec.Request.TimeoutMS) * time.Millisecond
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	return &phase{
		spec:     spec,
		count:    count,
		duration: time.Duration(spec.Injection.DurationMS) * time.Millisecond,
		build:    b,
		timeout:  timeout,
	}, nil
}

// skipped reports whether the run marked the phase's target as failed (its skip file).
func skipped(path, target string) bool {
	if path == "" {
		return false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == target {
			return true
		}
	}
	return false
}
