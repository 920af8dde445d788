package main

import (
	"context"
	"fmt"
	"io"
	"math/bits"
	"net/http"
	"sync/atomic"
	"time"
)

// The engine keeps the schedule; a network sends (network.go: one thread, non-blocking sockets
// and epoll, as wrk does it).
//
// The dispatcher waits, serving the network meanwhile, until the next arrival is due, then
// hands every arrival due by now to the network, each with its number k and due time; it never
// waits for an answer (an open model). The network writes each arrival's request on an idle
// kept-alive connection, or opens one when none is idle, so a stalled target sees as many
// connections as arrivals it holds (as with one client per arrival), up to 64 new ones it has
// not answered on yet (network.go, maxConnecting), and with kept-alive connections the pool
// settles at the concurrency the target needs.
//
// Waking up costs more than sending a request, so the dispatcher wakes at most every
// minWake: arrivals due within it leave together, at most that late, and the lag each one
// records says so.
//
// Times: an arrival's latency runs from its due time to the end of its response; its lag from
// its due time to the moment its request began to leave (or, held for a connection the target
// had not taken up, to the moment the engine took it up), so an engine that fell behind can
// never pass for a slow target, nor a target that holds connections for a slow engine.

// minWake is the shortest time between two wake-ups of the dispatcher.
const minWake = 200 * time.Microsecond

type arrival struct {
	phase *phase
	index int // the phase's position in the run
	k     int64
	due   time.Duration
}

type phaseEnd struct {
	index      int
	start, end time.Duration
	scheduled  int64
	cpu        time.Duration
	control    string
}

type phaseCounters struct {
	sent        int64
	connections int64
}

// exchange is the outcome of one request.
type exchange struct {
	lag     time.Duration // from the due time to the moment the request began to leave
	end     time.Duration // when its response ended (or it failed)
	status  int
	err     error
	opened  bool   // a connection was opened for it
	refused bool   // the system refused a socket: the tester's failure
	wrong   string // a wrong answer, in gatebench.core.answers' words (answers.go); "": right
}

// network sends the requests: the real one is network.go's; tests drive fakes.
type network interface {
	// send begins the arrival's request now.
	send(a arrival, now time.Duration)
	// wait serves the network until the clock reaches until (or the run is stopped).
	wait(until time.Duration)
	// busy is the number of requests outstanding.
	busy() int
	// connections is the number of connections open or opening.
	connections() int
	// close ends every request in flight and closes every connection.
	close()
}

type engine struct {
	clk         clock
	rec         *recorder
	net         network
	maxInFlight int
	counters    []*phaseCounters
	records     []record
	control     *http.Client
	lastWake    time.Duration
	peak        int // the most connections open at once
	cancelled   atomic.Bool
	// onThread, when set, runs on the engine's thread as each phase's schedule starts and at
	// each wake-up (main.go's -realtime: the thread's priority)
	onThread func()
}

func newEngine(clk clock, rec *recorder, maxInFlight int) *engine {
	return &engine{
		clk:         clk,
		rec:         rec,
		maxInFlight: max(1, maxInFlight),
		records:     make([]record, 0, batchSize),
		control: &http.Client{
			Transport:     &http.Transport{Proxy: nil, DisableCompression: true},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// cancel stops the schedule (SIGTERM, SIGINT: called from another goroutine); the engine's
// own thread ends what is in flight.
func (e *engine) cancel() { e.cancelled.Store(true) }

func (e *engine) stopped() bool { return e.cancelled.Load() }

// run sends every phase's arrivals on schedule (the next phase's schedule continuing where the
// previous one's ended), waits for every request, then writes one E frame per phase.
func (e *engine) run(phases []*phase, skipFile string, start time.Duration) {
	ends := make([]phaseEnd, 0, len(phases))
	for i, p := range phases {
		if e.stopped() {
			break
		}
		end := phaseEnd{index: p.spec.Index, scheduled: p.count}
		e.counters = append(e.counters, &phaseCounters{})
		end.control = e.controls(p.spec.Before)
		if skipped(skipFile, p.spec.Target) {
			now := e.clk.now()
			end.start, end.end = now, now
			ends = append(ends, end)
			continue
		}
		// controls take time: the schedule starts once they are done
		if now := e.clk.now(); now > start {
			start = now
		}
		if e.onThread != nil {
			e.onThread()
		}
		e.waitUntil(start)
		cpu0 := cpuTime()
		e.dispatch(p, i, start)
		end.start, end.end = start, start+p.duration
		end.cpu = cpuTime() - cpu0
		ends = append(ends, end)
		start = end.end
	}
	for e.net.busy() > 0 {
		if e.stopped() {
			e.net.close()
			break
		}
		e.net.wait(e.clk.now() + longestWait)
	}
	e.net.close()
	e.rec.batch(e.records)
	e.records = e.records[:0]
	for i, end := range ends {
		c := e.counters[i]
		if end.control != "" {
			e.rec.control(end.index, end.control)
		}
		e.rec.end(end, c.sent, c.connections)
	}
}

// waitUntil serves the network until the clock reaches t, in waits of at most longestWait
// (the run may be stopped meanwhile).
func (e *engine) waitUntil(t time.Duration) {
	for !e.stopped() {
		now := e.clk.now()
		if now >= t {
			return
		}
		e.net.wait(min(t, now+longestWait))
	}
}

// due is arrival k's time: start + k × duration / count, exactly (128-bit product).
func due(start time.Duration, duration time.Duration, k, count int64) time.Duration {
	hi, lo := bits.Mul64(uint64(duration), uint64(k))
	q, _ := bits.Div64(hi, lo, uint64(count))
	return start + time.Duration(q)
}

// dispatch hands arrival k of the phase to the network at start + k × duration / count.
func (e *engine) dispatch(p *phase, index int, start time.Duration) {
	for k := int64(0); k < p.count; {
		next := due(start, p.duration, k, p.count)
		now := e.clk.now()
		if next > now {
			e.waitUntil(max(next, e.lastWake+minWake))
			e.lastWake = e.clk.now()
			if e.onThread != nil {
				e.onThread()
			}
			if e.stopped() {
				return
			}
			continue
		}
		// every arrival due by now, in order
		for ; k < p.count; k++ {
			at := due(start, p.duration, k, p.count)
			if at > now {
				break
			}
			e.offer(arrival{phase: p, index: index, k: k, due: at}, now)
		}
	}
}

// offer hands one due arrival to the network, or records why it cannot be sent.
func (e *engine) offer(a arrival, now time.Duration) {
	p := a.phase
	lag := now - a.due
	if lag > p.timeout {
		e.dropped(a, lag)
		return
	}
	if e.net.busy() >= e.maxInFlight {
		e.add(record{
			phase:    int32(p.spec.Index),
			intended: a.due.Microseconds(),
			lag:      micros(lag),
			latency:  micros(p.timeout),
			message:  e.rec.message(fmt.Sprintf("not sent: %d requests were in flight (the target held them)", e.maxInFlight)),
		})
		return
	}
	e.net.send(a, now)
	e.peak = max(e.peak, e.net.connections())
}

// dropped records an arrival the engine could not send in time: it fell further behind its
// schedule than the request timeout.
func (e *engine) dropped(a arrival, lag time.Duration) {
	e.add(record{
		phase:    int32(a.phase.spec.Index),
		intended: a.due.Microseconds(),
		lag:      micros(lag),
		flags:    flagDropped,
		message:  e.rec.message(fmt.Sprintf("the engine fell %d ms behind its schedule (more than the request timeout)", lag.Milliseconds())),
	})
}

// done records an arrival's outcome (the network calls it when a request ends).
func (e *engine) done(a *arrival, x exchange) {
	p := a.phase
	c := e.counters[a.index]
	r := record{
		phase:    int32(p.spec.Index),
		intended: a.due.Microseconds(),
		lag:      micros(x.lag),
		latency:  micros(x.end - a.due),
	}
	if x.opened {
		r.flags |= flagNewConn
		c.connections++
	}
	switch {
	case x.refused:
		r.flags |= flagDropped
		r.latency = 0
		r.message = e.rec.message("the system refused a socket: " + reason(x.err, p.timeout))
	case x.err != nil:
		r.message = e.rec.message(reason(x.err, p.timeout))
	case x.wrong != "":
		r.status = uint16(x.status)
		r.message = e.rec.message(x.wrong)
	default:
		r.status = uint16(x.status)
		if ok, msg := p.build.verdict(x.status); !ok {
			r.message = e.rec.message(msg)
		}
	}
	if !x.refused {
		c.sent++
	}
	e.add(r)
}

func (e *engine) add(r record) {
	e.records = append(e.records, r)
	if len(e.records) == cap(e.records) {
		e.rec.batch(e.records)
		e.records = e.records[:0]
	}
}

// controlTimeout bounds one control call: the backend's reset waits up to 30 s for the earlier
// load's requests to finish (backend/control.go, drainLimit) before it answers.
const controlTimeout = 40 * time.Second

// controls calls the phase's control endpoints (the backend reset) directly; "" when all
// answered as expected.
func (e *engine) controls(calls []control) string {
	for _, c := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), controlTimeout)
		req, err := http.NewRequestWithContext(ctx, c.Method, c.URL, nil)
		if err != nil {
			cancel()
			return fmt.Sprintf("%s %s: %v", c.Method, c.URL, err)
		}
		resp, err := e.control.Do(req)
		if err != nil {
			cancel()
			return fmt.Sprintf("%s %s: %v", c.Method, c.URL, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		cancel()
		if c.Status != 0 && resp.StatusCode != c.Status {
			return fmt.Sprintf("%s %s answered %d, expected %d", c.Method, c.URL, resp.StatusCode, c.Status)
		}
		if c.WaitMS > 0 {
			e.waitUntil(e.clk.now() + time.Duration(c.WaitMS)*time.Millisecond)
		}
	}
	e.control.CloseIdleConnections()
	return ""
}
