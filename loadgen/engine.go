package main

import (
	"context"
	"fmt"
	"io"
	"math/bits"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// The engine: one dispatcher keeps the schedule, a pool of connection workers sends.
//
// The dispatcher sleeps until the next arrival is due, then hands every arrival due by now to
// the workers through one queue, each with its number k and due time; it never waits for an
// answer (an open model). A worker owns one connection at a time: it takes an arrival, writes
// its request, reads the response, records the outcome in its own batch, and takes the next.
// When the arrivals outstanding (queued or in flight) outnumber the workers, the dispatcher
// starts another (a stalled target therefore sees as many connections as arrivals it holds, as
// with one client per arrival); workers never stop before the run ends, so with kept-alive
// connections the pool settles at the concurrency the target needs.
//
// Times: an arrival's latency runs from its due time to the end of its response; its lag from
// its due time to the moment its worker began to send it, so an engine that fell behind can
// never pass for a slow target. The records are batched per worker (records.go).

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
	sent        atomic.Int64
	connections atomic.Int64
}

// transport sends one arrival's request on a worker (real: HTTP/1.1 over TCP; tests: fakes).
type transport func(w *worker, a *arrival) exchange

type engine struct {
	clk         clock
	rec         *recorder
	newConns    bool
	maxInFlight int64
	inFlight    atomic.Int64
	queue       chan arrival
	counters    []*phaseCounters
	send        transport
	control     *http.Client

	mu       sync.Mutex // guards workers (the dispatcher adds, cancel reads)
	workers  []*worker
	nWorkers int64 // len(workers), the dispatcher's own count
	wg       sync.WaitGroup

	stop      chan struct{}
	stopOnce  sync.Once
	cancelled atomic.Bool
}

func newEngine(clk clock, rec *recorder, newConnections bool, maxInFlight int) *engine {
	if maxInFlight < 1 {
		maxInFlight = 1
	}
	e := &engine{
		clk:         clk,
		rec:         rec,
		newConns:    newConnections,
		maxInFlight: int64(maxInFlight),
		queue:       make(chan arrival, maxInFlight),
		stop:        make(chan struct{}),
		control: &http.Client{
			Transport:     &http.Transport{Proxy: nil, DisableCompression: true},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
	e.send = e.httpExchange
	return e
}

// cancel stops the schedule and every request in flight (SIGTERM, SIGINT).
func (e *engine) cancel() {
	e.stopOnce.Do(func() {
		e.cancelled.Store(true)
		close(e.stop)
		e.mu.Lock()
		for _, w := range e.workers {
			w.abort()
		}
		e.mu.Unlock()
	})
}

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
		c := &phaseCounters{}
		e.counters = append(e.counters, c)
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
		e.clk.sleepUntil(start, e.stop)
		cpu0 := cpuTime()
		e.dispatch(p, i, start)
		end.start, end.end = start, start+p.duration
		end.cpu = cpuTime() - cpu0
		ends = append(ends, end)
		start = end.end
	}
	close(e.queue)
	e.wg.Wait()
	for i, end := range ends {
		c := e.counters[i]
		if end.control != "" {
			e.rec.control(end.index, end.control)
		}
		e.rec.end(end, c.sent.Load(), c.connections.Load())
	}
}

// due is arrival k's time: start + k × duration / count, exactly (128-bit product).
func due(start time.Duration, duration time.Duration, k, count int64) time.Duration {
	hi, lo := bits.Mul64(uint64(duration), uint64(k))
	q, _ := bits.Div64(hi, lo, uint64(count))
	return start + time.Duration(q)
}

// dispatch hands arrival k of the phase to the workers at start + k × duration / count.
func (e *engine) dispatch(p *phase, index int, start time.Duration) {
	for k := int64(0); k < p.count; {
		next := due(start, p.duration, k, p.count)
		now := e.clk.now()
		if next > now {
			e.clk.sleepUntil(next, e.stop)
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

// offer hands one due arrival over, or records why it cannot be sent.
func (e *engine) offer(a arrival, now time.Duration) {
	p := a.phase
	lag := now - a.due
	if lag > p.timeout {
		e.lost(a, record{
			lag:     micros(lag),
			flags:   flagDropped,
			message: e.rec.message(fmt.Sprintf("the engine fell %d ms behind its schedule (more than the request timeout)", lag.Milliseconds())),
		})
		return
	}
	if e.inFlight.Load() >= e.maxInFlight {
		e.lost(a, record{
			lag:     micros(lag),
			latency: micros(p.timeout),
			message: e.rec.message(fmt.Sprintf("not sent: %d requests were in flight (the target held them)", e.maxInFlight)),
		})
		return
	}
	if n := e.inFlight.Add(1); n > e.nWorkers {
		e.startWorker()
	}
	e.queue <- a
}

// lost records an arrival the dispatcher did not hand to a worker (it is rare: written alone).
func (e *engine) lost(a arrival, r record) {
	r.phase = int32(a.phase.spec.Index)
	r.intended = a.due.Microseconds()
	e.rec.batch([]record{r})
}

func (e *engine) startWorker() {
	w := &worker{e: e, records: make([]record, 0, batchSize), req: make([]byte, 0, 4096)}
	e.mu.Lock()
	e.workers = append(e.workers, w)
	e.mu.Unlock()
	e.nWorkers++
	e.wg.Add(1)
	go w.loop()
}

// worker sends arrivals one at a time on its connection.
type worker struct {
	e       *engine
	conn    atomic.Pointer[httpConn]
	records []record
	req     []byte
	body    []byte
}

func (w *worker) loop() {
	defer w.e.wg.Done()
	for a := range w.e.queue {
		x := w.e.send(w, &a)
		latency := w.e.clk.now() - a.due
		w.e.inFlight.Add(-1)
		w.finish(&a, x, latency)
	}
	w.e.rec.batch(w.records)
	w.records = w.records[:0]
	if c := w.conn.Load(); c != nil {
		c.close()
	}
}

// finish records an arrival's outcome.
func (w *worker) finish(a *arrival, x exchange, latency time.Duration) {
	p := a.phase
	c := w.e.counters[a.index]
	r := record{phase: int32(p.spec.Index), intended: a.due.Microseconds(), lag: x.lagUS, latency: micros(latency)}
	if x.opened {
		r.flags |= flagNewConn
		c.connections.Add(1)
	}
	switch {
	case x.refused:
		r.flags |= flagDropped
		r.latency = 0
		r.message = w.e.rec.message("the system refused a socket: " + reason(x.err, p.timeout))
	case x.err != nil:
		r.message = w.e.rec.message(reason(x.err, p.timeout))
	default:
		r.status = uint16(x.status)
		if ok, msg := p.build.verdict(x.status); !ok {
			r.message = w.e.rec.message(msg)
		}
	}
	if !x.refused {
		c.sent.Add(1)
	}
	w.records = append(w.records, r)
	if len(w.records) == cap(w.records) {
		w.e.rec.batch(w.records)
		w.records = w.records[:0]
	}
}

// abort ends the request in flight (the run is cancelled).
func (w *worker) abort() {
	if c := w.conn.Load(); c != nil {
		_ = c.c.SetDeadline(time.Unix(1, 0))
	}
}

// httpExchange sends one arrival's request over HTTP/1.1: on the worker's kept-alive
// connection, or on a connection of its own (-connections new).
func (e *engine) httpExchange(w *worker, a *arrival) exchange {
	p := a.phase
	w.req = p.build.request(w.req, w.body, a.k)
	if cap(w.body) < len(w.req) && p.build.static == nil {
		w.body = make([]byte, 0, len(w.req)) // scratch for the next body: grown once
	}
	x := exchange{}
	for attempt := 0; ; attempt++ {
		c := w.conn.Load()
		if c == nil {
			x.lagUS = micros(e.clk.now() - a.due)
			var err error
			c, err = dial(p.build.address, min(p.timeout, 10*time.Second))
			if err != nil {
				x.err, x.refused = err, systemRefused(err)
				return x
			}
			x.opened = true
			w.conn.Store(c)
			if e.stopped() {
				c.close()
				x.err = context.Canceled
				return x
			}
		} else if attempt == 0 {
			x.lagUS = micros(e.clk.now() - a.due)
		}
		reused := c.served > 0
		status, keepAlive, err := c.roundTrip(w.req, p.build.isHead, time.Now().Add(p.timeout))
		if err != nil || !keepAlive || e.newConns {
			c.close()
			w.conn.Store(nil)
		}
		// a kept-alive connection the server had closed before this request: once more on
		// a new one (as Go's client does for requests that can be repeated)
		if err != nil && reused && attempt == 0 && err == errClosedBeforeResponse && p.build.replayable {
			continue
		}
		x.status, x.err = status, err
		return x
	}
}

// controls calls the phase's control endpoints (the backend reset) directly; "" when all
// answered as expected.
func (e *engine) controls(calls []control) string {
	for _, c := range calls {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		req, err := http.NewRequestWithContext(ctx, c.Method, c.URL, nil)
		if err != nil {
			cancel()
			return fmt.Sprintf("%s %s: %v", c.Method, c.URL, err)
		}
		resp, err := e.control.Do(req)
		if err != nil {
			cancel()
			return fmt.Sprintf("%s %s: %v", c.Method, c.URL, reason(err, 10*time.Second))
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		cancel()
		if c.Status != 0 && resp.StatusCode != c.Status {
			return fmt.Sprintf("%s %s answered %d, expected %d", c.Method, c.URL, resp.StatusCode, c.Status)
		}
		if c.WaitMS > 0 {
			e.clk.sleepUntil(e.clk.now()+time.Duration(c.WaitMS)*time.Millisecond, e.stop)
		}
	}
	return ""
}
