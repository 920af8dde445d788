package main

import (
	"bytes"
	"errors"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The dispatcher and the workers on a fake clock: time moves only when the dispatcher sleeps,
// and only once every arrival handed over so far has been taken up, so each worker sees the
// clock at the moment its arrival was handed over. What these tests assert is exact.

type fakeClock struct {
	mu     sync.Mutex
	t      time.Duration
	settle func()
	// jump, when set, is added to a sleep that ends at or after jumpAt (an engine that was
	// descheduled for that long)
	jumpAt, jump time.Duration
	sleeps       []time.Duration
}

func (c *fakeClock) now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) sleepUntil(t time.Duration, stop <-chan struct{}) {
	if c.settle != nil {
		c.settle()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, t)
	if c.jump > 0 && t >= c.jumpAt {
		t += c.jump
		c.jump = 0
	}
	if t > c.t {
		c.t = t
	}
}

// fakeTarget answers on the fake clock: instantly, or (held) not until released.
type fakeTarget struct {
	mu      sync.Mutex
	seen    []arrival
	lagsUS  []uint32
	held    atomic.Int64
	maxHeld atomic.Int64
	release chan struct{}
	hold    bool
	err     error
}

func (f *fakeTarget) transport(clk clock) transport {
	return func(w *worker, a *arrival) exchange {
		lag := micros(clk.now() - a.due)
		f.mu.Lock()
		f.seen = append(f.seen, *a)
		f.lagsUS = append(f.lagsUS, lag)
		f.mu.Unlock()
		if f.err != nil {
			return exchange{lagUS: lag, err: f.err, refused: systemRefused(f.err)}
		}
		if f.hold {
			if n := f.held.Add(1); a.index == 0 && n > f.maxHeld.Load() {
				f.maxHeld.Store(n) // one dispatcher: no lost update matters here
			}
			<-f.release
			f.held.Add(-1)
		}
		return exchange{lagUS: lag, status: 200, keepAlive: true}
	}
}

func testPhase(t *testing.T, index int, rate float64, durationMS int64, timeoutMS int64) *phase {
	t.Helper()
	spec := phaseSpec{
		ID:        "p",
		Index:     index,
		Target:    "baseline",
		Seed:      1,
		Injection: injection{Kind: "constant_rate", Rate: rate, DurationMS: durationMS},
		Request:   requestSpec{Method: "GET", BaseURL: "http://127.0.0.1:9", Path: []part{{Text: ptr("/x")}}, TimeoutMS: timeoutMS},
	}
	p, err := preparePhase(spec, nil, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func ptr[T any](v T) *T { return &v }

// run runs phases on a fake clock against a fake target; the records are decoded.
func runFake(t *testing.T, clk *fakeClock, target *fakeTarget, maxInFlight int, phases ...*phase) (*engine, records) {
	t.Helper()
	var out bytes.Buffer
	rec := newRecorder(&out)
	rec.header(0, 1)
	e := newEngine(clk, rec, false, maxInFlight)
	e.send = target.transport(clk)
	clk.settle = func() {
		// every arrival handed over is either answered or held by the target
		for e.inFlight.Load() != target.held.Load() {
			runtime.Gosched()
		}
	}
	done := make(chan struct{})
	go func() {
		e.run(phases, "", 5*time.Millisecond)
		close(done)
	}()
	if target.hold {
		// release once the first phase is over: the dispatcher has slept into the next
		// phase's schedule, so every arrival of the first was handed over (or refused)
		go func() {
			for {
				clk.mu.Lock()
				over := clk.t >= 5*time.Millisecond+phases[0].duration
				clk.mu.Unlock()
				if over {
					close(target.release)
					return
				}
				runtime.Gosched()
			}
		}()
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the engine did not finish")
	}
	if err := rec.flush(); err != nil {
		t.Fatal(err)
	}
	got, err := decodeRecords(out.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return e, got
}

func TestTheScheduleIsExactAndContinuesFromPhaseToPhase(t *testing.T) {
	clk := &fakeClock{}
	target := &fakeTarget{}
	// 7 arrivals over 1 s (a due time that is not a whole µs), then 1,000/s for 0.5 s
	first, second := testPhase(t, 0, 7, 1000, 1000), testPhase(t, 1, 1000, 500, 1000)
	_, got := runFake(t, clk, target, 100, first, second)

	if len(target.seen) != 507 {
		t.Fatalf("sent %d arrivals, want 7 + 500", len(target.seen))
	}
	start := 5 * time.Millisecond
	want := map[[2]int64]time.Duration{}
	for k := int64(0); k < 7; k++ {
		want[[2]int64{0, k}] = start + time.Duration(int64(time.Second)*k/7)
	}
	for k := int64(0); k < 500; k++ { // the second phase starts where the first ended
		want[[2]int64{1, k}] = start + time.Second + time.Duration(k)*time.Millisecond
	}
	for i, a := range target.seen {
		if d, ok := want[[2]int64{int64(a.phase.spec.Index), a.k}]; !ok || d != a.due {
			t.Fatalf("phase %d arrival %d due at %v, want %v", a.phase.spec.Index, a.k, a.due, d)
		}
		// handed over exactly when due, never before
		if target.lagsUS[i] != 0 {
			t.Fatalf("phase %d arrival %d left %d µs late on a fake clock", a.phase.spec.Index, a.k, target.lagsUS[i])
		}
	}
	// the dispatcher slept until each due time, never past one
	for _, s := range clk.sleeps {
		found := s == start
		for _, d := range want {
			found = found || s == d
		}
		if !found {
			t.Fatalf("the dispatcher slept until %v, which is no arrival's due time", s)
		}
	}
	if len(got.requests) != 507 || len(got.ends) != 2 {
		t.Fatalf("%d request records and %d phase ends, want 507 and 2", len(got.requests), len(got.ends))
	}
	for _, r := range got.requests {
		if r.flags != 0 || r.status != 200 || r.message != 0 {
			t.Fatalf("record %+v: want a plain OK", r)
		}
	}
	ends := got.ends
	if ends[0].start != 5000 || ends[0].end != 1_005_000 || ends[1].start != 1_005_000 || ends[1].end != 1_505_000 {
		t.Fatalf("phase windows %+v, want 5,000–1,005,000 µs and 1,005,000–1,505,000 µs", ends)
	}
	if ends[0].scheduled != 7 || ends[0].sent != 7 || ends[1].scheduled != 500 || ends[1].sent != 500 {
		t.Fatalf("scheduled and sent %+v", ends)
	}
}

func TestTheCountIsThePythonRoundOfRateTimesDuration(t *testing.T) {
	for _, c := range []struct {
		rate       float64
		durationMS int64
		count      int64
	}{{2.5, 1000, 2}, {3.5, 1000, 4}, {100, 2000, 200}, {0.4, 1000, 0}, {1234.567, 3000, 3704}} {
		if got := testPhase(t, 0, c.rate, c.durationMS, 1000).count; got != c.count {
			t.Errorf("%g/s for %d ms: %d arrivals, want %d", c.rate, c.durationMS, got, c.count)
		}
	}
}

func TestArrivalsTheEngineFellTooFarBehindOnAreDropped(t *testing.T) {
	// 100/s for 1 s with a 50 ms timeout; at 300 ms the engine is descheduled for 200 ms
	clk := &fakeClock{jumpAt: 305 * time.Millisecond, jump: 200 * time.Millisecond}
	target := &fakeTarget{}
	_, got := runFake(t, clk, target, 100, testPhase(t, 0, 100, 1000, 50))
	// arrivals due from 300 ms to 500 ms are handed over at 505 ms: those more than 50 ms late
	// (due before 455 ms) are dropped, the others leave late
	var dropped, late []int64
	for _, r := range got.requests {
		k := (r.intended - 5000) / 10_000
		switch {
		case r.flags&flagDropped != 0:
			dropped = append(dropped, k)
			if got.messages[r.message] != "the engine fell 200 ms behind its schedule (more than the request timeout)" &&
				!bytes.Contains([]byte(got.messages[r.message]), []byte("behind its schedule")) {
				t.Fatalf("drop reason %q", got.messages[r.message])
			}
		case r.lag > 0:
			late = append(late, k)
		}
	}
	sort.Slice(dropped, func(i, j int) bool { return dropped[i] < dropped[j] })
	if len(dropped) != 15 || dropped[0] != 30 || dropped[14] != 44 {
		t.Fatalf("dropped arrivals %v, want 30 to 44 (due 300–440 ms, handed over at 505 ms)", dropped)
	}
	if len(late) != 5 {
		t.Fatalf("late arrivals %v, want 45 to 49", late)
	}
	end := got.ends[0]
	if end.scheduled != 100 || end.sent != 85 {
		t.Fatalf("scheduled %d, sent %d; want 100 and 85", end.scheduled, end.sent)
	}
}

func TestArrivalsTheSystemRefusedASocketForAreDroppedNotSent(t *testing.T) {
	clk := &fakeClock{}
	target := &fakeTarget{err: &syscallError{syscall.EADDRNOTAVAIL}}
	_, got := runFake(t, clk, target, 100, testPhase(t, 0, 100, 100, 1000))
	if len(got.requests) != 10 {
		t.Fatalf("%d records, want 10", len(got.requests))
	}
	for _, r := range got.requests {
		if r.flags&flagDropped == 0 || r.latency != 0 {
			t.Fatalf("record %+v: want dropped", r)
		}
		if msg := got.messages[r.message]; msg != "the system refused a socket: cannot assign requested address" {
			t.Fatalf("drop reason %q", msg)
		}
	}
	if got.ends[0].sent != 0 {
		t.Fatalf("sent %d, want 0: nothing left the machine", got.ends[0].sent)
	}
}

type syscallError struct{ errno syscall.Errno }

func (e *syscallError) Error() string { return e.errno.Error() }
func (e *syscallError) Unwrap() error { return e.errno }

func TestArrivalsBeyondTheInFlightLimitAreRefusedAsTheTargets(t *testing.T) {
	clk := &fakeClock{}
	target := &fakeTarget{hold: true, release: make(chan struct{})}
	// the target holds everything: 3 may be in flight, the other 7 arrivals are refused
	e, got := runFake(t, clk, target, 3, testPhase(t, 0, 100, 100, 2000), testPhase(t, 1, 10, 100, 2000))
	var ok, refused int
	for _, r := range got.requests {
		switch {
		case r.phase != 0:
			continue
		case r.status == 200:
			ok++
		case got.messages[r.message] == "not sent: 3 requests were in flight (the target held them)":
			refused++
			if r.latency != 2_000_000 || r.flags != 0 {
				t.Fatalf("a refused arrival %+v: want a KO entered at the 2 s timeout, not a drop", r)
			}
		default:
			t.Fatalf("unexpected record %+v (%q)", r, got.messages[r.message])
		}
	}
	if ok != 3 || refused != 7 {
		t.Fatalf("%d answered and %d refused, want 3 and 7", ok, refused)
	}
	if got.ends[0].sent != 3 || e.nWorkers != 3 {
		t.Fatalf("sent %d with %d workers, want 3 and 3", got.ends[0].sent, e.nWorkers)
	}
}

func TestAStalledTargetIsStillOfferedEveryArrivalOnTime(t *testing.T) {
	clk := &fakeClock{}
	target := &fakeTarget{hold: true, release: make(chan struct{})}
	e, got := runFake(t, clk, target, 10_000, testPhase(t, 0, 200, 500, 60_000), testPhase(t, 1, 10, 100, 60_000))
	if len(target.seen) != 101 {
		t.Fatalf("the target was sent %d arrivals, want all 100 while it answered none", len(target.seen))
	}
	for i, lag := range target.lagsUS {
		if lag != 0 {
			t.Fatalf("arrival %d left %d µs late: a stalled target slowed the schedule", target.seen[i].k, lag)
		}
	}
	// one worker (one connection) per arrival held: 100 at once in the first phase
	if target.maxHeld.Load() != 100 || e.nWorkers < 100 || got.ends[0].sent != 100 {
		t.Fatalf("%d held at once by %d workers, %d sent: want 100, 100 and 100", target.maxHeld.Load(), e.nWorkers, got.ends[0].sent)
	}
	// each latency counts from its own due time to the release at the end of the schedule
	for _, r := range got.requests {
		if r.phase != 0 {
			continue
		}
		if want := uint32(505_000 - r.intended); r.latency < want {
			t.Fatalf("arrival due at %d µs: latency %d µs, want at least %d (the whole wait)", r.intended, r.latency, want)
		}
	}
}

func TestADeadTargetIsAKOOfTheTargetNotADrop(t *testing.T) {
	clk := &fakeClock{}
	target := &fakeTarget{err: errors.New("connection refused")}
	_, got := runFake(t, clk, target, 100, testPhase(t, 0, 50, 100, 1000))
	for _, r := range got.requests {
		if r.flags&flagDropped != 0 || r.status != 0 || got.messages[r.message] != "connection refused" {
			t.Fatalf("record %+v (%q): want a KO with no status", r, got.messages[r.message])
		}
	}
	if got.ends[0].sent != 5 {
		t.Fatalf("sent %d, want 5", got.ends[0].sent)
	}
}
