package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// record is one arrival's outcome.
type record struct {
	phase    int
	intended time.Duration // from t0
	lag      time.Duration // from the due time to the moment the request was handed to the client
	latency  time.Duration // from the due time to the end of the response
	status   int
	message  string // "" when OK
	newConn  bool
	dropped  bool // never sent: the engine's own failure
}

// recorder writes records from every request goroutine through one channel.
type recorder struct {
	w        *bufio.Writer
	ch       chan record
	done     chan struct{}
	messages map[string]int
}

func newRecorder(w *bufio.Writer) *recorder {
	r := &recorder{w: w, ch: make(chan record, 65536), done: make(chan struct{}), messages: map[string]int{}}
	go r.loop()
	return r
}

func (r *recorder) message(text string) int {
	if text == "" {
		return 0
	}
	if id, ok := r.messages[text]; ok {
		return id
	}
	id := len(r.messages) + 1
	r.messages[text] = id
	fmt.Fprintf(r.w, "M\t%d\t%s\n", id, strings.NewReplacer("\t", " ", "\n", " ", "\r", " ").Replace(text))
	return id
}

func (r *recorder) loop() {
	defer close(r.done)
	for rec := range r.ch {
		id := r.message(rec.message)
		if rec.dropped {
			fmt.Fprintf(r.w, "D\t%d\t%d\t%d\n", rec.phase, rec.intended.Microseconds(), id)
			continue
		}
		conn := 0
		if rec.newConn {
			conn = 1
		}
		fmt.Fprintf(r.w, "R\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", rec.phase, rec.intended.Microseconds(),
			rec.lag.Microseconds(), rec.latency.Microseconds(), rec.status, id, conn)
	}
}

// line writes a line once every record before it is written (the channel is drained first).
func (r *recorder) close() {
	close(r.ch)
	<-r.done
}

type phaseEnd struct {
	index       int
	start, end  time.Duration
	scheduled   int64
	sent        int64
	cpu         time.Duration
	connections int64
	control     string
}

type engine struct {
	t0          time.Time
	client      *http.Client
	maxInFlight int64
	inFlight    atomic.Int64
	rec         *recorder
	ctx         context.Context
	cancel      context.CancelFunc
	cancelled   atomic.Bool
	wg          sync.WaitGroup
}

func newEngine(newConnections bool, maxInFlight int, rec *recorder) *engine {
	transport := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		DisableKeepAlives:   newConnections,
		DisableCompression:  true,
		MaxIdleConns:        maxInFlight,
		MaxIdleConnsPerHost: maxInFlight,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   false,
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &engine{
		t0: time.Now(),
		client: &http.Client{
			Transport:     transport,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		maxInFlight: int64(maxInFlight),
		rec:         rec,
		ctx:         ctx,
	}
	e.cancel = func() {
		e.cancelled.Store(true)
		cancel()
	}
	return e
}

func (e *engine) now() time.Duration { return time.Since(e.t0) }

// run sends every phase's arrivals on schedule, waits for every request, then writes one E
// line per phase.
func (e *engine) run(phases []*phase, skipFile string, startAtMS int64) {
	timer := newWaiter()
	defer timer.close()
	ends := make([]phaseEnd, 0, len(phases))
	var counters []*phaseCounters
	start := e.now() + 5*time.Millisecond
	if startAtMS > 0 {
		start = time.UnixMilli(startAtMS).Sub(e.t0)
	}
	for _, p := range phases {
		if e.ctx.Err() != nil {
			break
		}
		end := phaseEnd{index: p.spec.Index, scheduled: p.count}
		counters = append(counters, &phaseCounters{})
		c := counters[len(counters)-1]
		if msg := e.controls(p.spec.Before); msg != "" {
			end.control = msg
		}
		if skipped(skipFile, p.spec.Target) {
			end.start, end.end = e.now(), e.now()
			ends = append(ends, end)
			continue
		}
		// controls take time: the schedule starts once they are done
		if now := e.now(); now > start {
			start = now
		}
		if wait := start - e.now(); wait > 0 {
			timer.wait(wait)
		}
		cpu0 := cpuTime()
		e.dispatch(p, start, c, timer)
		end.start, end.end = start, start+p.duration
		end.cpu = cpuTime() - cpu0
		ends = append(ends, end)
		start = end.end
	}
	e.wg.Wait()
	e.rec.close()
	for i, end := range ends {
		c := counters[i]
		if end.control != "" {
			fmt.Fprintf(e.rec.w, "C\t%d\t%s\n", end.index, strings.ReplaceAll(end.control, "\t", " "))
		}
		fmt.Fprintf(e.rec.w, "E\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", end.index, end.start.Microseconds(),
			end.end.Microseconds(), end.scheduled, c.sent.Load(), end.cpu.Microseconds(), c.connections.Load())
	}
}

type phaseCounters struct {
	sent        atomic.Int64
	connections atomic.Int64
}

// dispatch sends arrival k of the phase at start + k × duration / count.
func (e *engine) dispatch(p *phase, start time.Duration, c *phaseCounters, timer *waiter) {
	for k := int64(0); k < p.count; k++ {
		due := start + time.Duration(int64(p.duration)*k/p.count)
		if wait := due - e.now(); wait > 0 {
			timer.wait(wait)
		}
		if e.ctx.Err() != nil {
			return
		}
		lag := e.now() - due
		vals := p.values.next()
		if lag > p.timeout {
			e.rec.ch <- record{phase: p.spec.Index, intended: due, dropped: true,
				message: fmt.Sprintf("the engine fell %d ms behind its schedule (more than the request timeout)", lag.Milliseconds())}
			continue
		}
		if e.inFlight.Load() >= e.maxInFlight {
			e.rec.ch <- record{phase: p.spec.Index, intended: due, lag: lag, latency: p.timeout, status: 0,
				message: fmt.Sprintf("not sent: %d requests were in flight (the target held them)", e.maxInFlight)}
			continue
		}
		e.inFlight.Add(1)
		e.wg.Add(1)
		go e.fire(p, k, due, vals, c)
	}
}

func (e *engine) fire(p *phase, user int64, due time.Duration, vals []any, c *phaseCounters) {
	defer e.wg.Done()
	defer e.inFlight.Add(-1)
	rec := record{phase: p.spec.Index, intended: due}
	req, err := p.build.request(vals, user)
	if err != nil {
		rec.lag = e.now() - due
		rec.latency = rec.lag
		rec.message = "request: " + err.Error()
		e.rec.ch <- rec
		return
	}
	ctx, cancel := context.WithTimeout(e.ctx, p.timeout)
	defer cancel()
	trace := &httptrace.ClientTrace{GotConn: func(info httptrace.GotConnInfo) {
		if !info.Reused {
			rec.newConn = true
		}
	}}
	req = req.WithContext(httptrace.WithClientTrace(ctx, trace))
	rec.lag = e.now() - due
	c.sent.Add(1)
	resp, err := e.client.Do(req)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		rec.status = resp.StatusCode
	}
	rec.latency = e.now() - due
	if rec.newConn {
		c.connections.Add(1)
	}
	switch {
	case err != nil && systemRefused(err):
		c.sent.Add(-1)
		rec.dropped = true
		rec.message = "the system refused a socket: " + reason(err)
	case err != nil:
		rec.status = 0
		rec.message = reason(err)
		if errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err) {
			rec.message = fmt.Sprintf("request timeout after %d ms", p.timeout.Milliseconds())
		}
	default:
		if ok, msg := p.build.verdict(rec.status); !ok {
			rec.message = msg
		}
	}
	e.rec.ch <- rec
}

// systemRefused is an error of the tester's machine, not of the target: no ephemeral port
// left (TIME_WAIT), no file descriptor, no buffer.
func systemRefused(err error) bool {
	return errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EMFILE) ||
		errors.Is(err, syscall.ENFILE) || errors.Is(err, syscall.ENOBUFS)
}

// reason is an error without the URL (one message per kind of failure, not per request).
func reason(err error) string {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset by the target"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection closed before the response ended"
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) {
		err = urlErr.Err
	}
	return err.Error()
}

// controls calls the phase's control endpoints (the backend reset) directly; "" when all
// answered as expected.
func (e *engine) controls(calls []control) string {
	for _, c := range calls {
		req, err := http.NewRequestWithContext(e.ctx, c.Method, c.URL, nil)
		if err != nil {
			return fmt.Sprintf("%s %s: %v", c.Method, c.URL, err)
		}
		ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
		resp, err := e.client.Do(req.WithContext(ctx))
		if err != nil {
			cancel()
			return fmt.Sprintf("%s %s: %v", c.Method, c.URL, reason(err))
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		cancel()
		if c.Status != 0 && resp.StatusCode != c.Status {
			return fmt.Sprintf("%s %s answered %d, expected %d", c.Method, c.URL, resp.StatusCode, c.Status)
		}
	}
	return ""
}

// cpuTime is the CPU time (user + system) this process has used.
func cpuTime() time.Duration {
	var usage syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &usage) != nil {
		return 0
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}
