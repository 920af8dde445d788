package main

import (
	"bytes"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The dispatcher on a fake clock, against a fake network: time moves only when the engine
// waits, and a request the fake target answers at once ends at the moment it was sent. What
// these tests assert is exact.

type fakeClock struct {
	t time.Duration
	// jump, when set, is added to a wait that ends at or after jumpAt (an engine that was
	// descheduled for that long)
	jumpAt, jump time.Duration
	waits        []time.Duration
}

func (c *fakeClock) now() time.Duration { return c.t }

// fakeNet is a target that answers at once, fails, or holds every request until releaseAt.
type fakeNet struct {
	e         *engine
	clk       *fakeClock
	seen      []arrival
	lags      []time.Duration
	held      []arrival
	heldLags  []time.Duration
	maxHeld   int
	hold      bool
	releaseAt time.Duration
	err       error
}

func (f *fakeNet) send(a arrival, now time.Duration) {
	f.seen = append(f.seen, a)
	f.lags = append(f.lags, now-a.due)
	x := exchange{lag: now - a.due, end: now, status: 200}
	switch {
	case f.err != nil:
		x.status, x.err, x.refused = 0, f.err, systemRefused(f.err)
	case f.hold && now < f.releaseAt:
		f.held = append(f.held, a)
		f.heldLags = append(f.heldLags, now-a.due)
		if a.index == 0 {
			f.maxHeld = max(f.maxHeld, len(f.held))
		}
		return
	}
	f.e.done(&a, x)
}

func (f *fakeNet) wait(until time.Duration) {
	f.clk.waits = append(f.clk.waits, until)
	if f.clk.jump > 0 && until >= f.clk.jumpAt {
		until += f.clk.jump
		f.clk.jump = 0
	}
	f.clk.t = max(f.clk.t, until)
	if f.hold && f.clk.t >= f.releaseAt && len(f.held) > 0 {
		held, lags := f.held, f.heldLags
		f.held, f.heldLags = nil, nil
		for i, a := range held {
			f.e.done(&a, exchange{lag: lags[i], end: f.releaseAt, status: 200})
		}
	}
}

func (f *fakeNet) busy() int        { return len(f.held) }
func (f *fakeNet) connections() int { return len(f.held) }
func (f *fakeNet) close()           {}

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

// runFake runs phases on a fake clock against a fake network; the records are decoded.
func runFake(t *testing.T, target *fakeNet, maxInFlight int, phases ...*phase) (*engine, records) {
	t.Helper()
	var out bytes.Buffer
	rec := newRecorder(&out)
	rec.header(0, 1)
	if target.clk == nil {
		target.clk = &fakeClock{}
	}
	e := newEngine(target.clk, rec, maxInFlight)
	e.net, target.e = target, e
	e.run(phases, "", 5*time.Millisecond)
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
	target := &fakeNet{}
	// 7 arrivals over 1 s (a due time that is not a whole µs), then 1,000/s for 0.5 s
	first, second := testPhase(t, 0, 7, 1000, 1000), testPhase(t, 1, 1000, 500, 1000)
	_, got := runFake(t, target, 100, first, second)

	if len(target.seen) != 507 {
		t.Fatalf("sent %d arrivals, want 7 + 500", len(target.seen))
	}
	start := 5 * time.Millisecond
	want := map[[2]int64]time.Duration{}
	dues := map[time.Duration]bool{start: true}
	for k := int64(0); k < 7; k++ {
		want[[2]int64{0, k}] = start + time.Duration(int64(time.Second)*k/7)
	}
	for k := int64(0); k < 500; k++ { // the second phase starts where the first ended
		want[[2]int64{1, k}] = start + time.Second + time.Duration(k)*time.Millisecond
	}
	for _, d := range want {
		dues[d] = true
	}
	for i, a := range target.seen {
		if d, ok := want[[2]int64{int64(a.phase.spec.Index), a.k}]; !ok || d != a.due {
			t.Fatalf("phase %d arrival %d due at %v, want %v", a.phase.spec.Index, a.k, a.due, d)
		}
		// handed over exactly when due, never before
		if target.lags[i] != 0 {
			t.Fatalf("phase %d arrival %d left %v late on a fake clock", a.phase.spec.Index, a.k, target.lags[i])
		}
	}
	// the dispatcher waited until each due time, never past one (a long wait is cut in
	// steps of longestWait, to look whether the run was stopped)
	previous := time.Duration(0)
	for _, w := range target.clk.waits {
		if !dues[w] && w-previous != longestWait {
			t.Fatalf("the dispatcher waited until %v, which is no arrival's due time", w)
		}
		previous = w
	}
	if len(got.requests) != 507 || len(got.ends) != 2 {
		t.Fatalf("%d request records and %d phase ends, want 507 and 2", len(got.requests), len(got.ends))
	}
	for _, r := range got.requests {
		if r.flags != 0 || r.status != 200 || r.message != 0 || r.lag != 0 || r.latency != 0 {
			t.Fatalf("record %+v: want a plain OK, on time", r)
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

func TestArrivalsCloserThanAWakeUpLeaveTogetherAndSaySo(t *testing.T) {
	// 20,000/s: 50 µs apart; the dispatcher wakes every 200 µs at most
	target := &fakeNet{}
	_, got := runFake(t, target, 100, testPhase(t, 0, 20_000, 100, 1000))
	if len(got.requests) != 2000 {
		t.Fatalf("%d records, want 2,000", len(got.requests))
	}
	var most uint32
	for _, r := range got.requests {
		most = max(most, r.lag)
	}
	if most > uint32(minWake.Microseconds()) || most == 0 {
		t.Fatalf("the most late an arrival left: %d µs; want some, at most %v", most, minWake)
	}
	if wakes := len(target.clk.waits); wakes > 100_000/int(minWake.Microseconds())+2 {
		t.Fatalf("%d wake-ups in 100 ms, more than one per %v", wakes, minWake)
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
	target := &fakeNet{clk: &fakeClock{jumpAt: 305 * time.Millisecond, jump: 200 * time.Millisecond}}
	_, got := runFake(t, target, 100, testPhase(t, 0, 100, 1000, 50))
	// arrivals due from 300 ms to 500 ms are handed over at 505 ms: those more than 50 ms late
	// (due before 455 ms) are dropped, the others leave late
	var dropped, late []int64
	for _, r := range got.requests {
		k := (r.intended - 5000) / 10_000
		switch {
		case r.flags&flagDropped != 0:
			dropped = append(dropped, k)
			if msg := got.messages[r.message]; !strings.HasSuffix(msg, "ms behind its schedule (more than the request timeout)") {
				t.Fatalf("drop reason %q", msg)
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
	target := &fakeNet{err: syscall.EADDRNOTAVAIL}
	_, got := runFake(t, target, 100, testPhase(t, 0, 100, 100, 1000))
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

func TestArrivalsBeyondTheInFlightLimitAreRefusedAsTheTargets(t *testing.T) {
	// the target holds everything until 200 ms: 3 may be in flight, the other 7 arrivals of
	// the first 100 ms are refused
	target := &fakeNet{hold: true, releaseAt: 200 * time.Millisecond}
	_, got := runFake(t, target, 3, testPhase(t, 0, 100, 100, 2000))
	var ok, refused int
	for _, r := range got.requests {
		switch {
		case r.status == 200:
			ok++
			if r.latency != uint32(200_000-r.intended) {
				t.Fatalf("a held request %+v: want its latency to run to the release", r)
			}
		case got.messages[r.message] == "not sent: 3 requests were in flight (the target held them)":
			refused++
			if r.latency != 2_000_000 || r.flags != 0 {
				t.Fatalf("a refused arrival %+v: want a KO entered at the 2 s timeout, not a drop", r)
			}
		default:
			t.Fatalf("unexpected record %+v (%q)", r, got.messages[r.message])
		}
	}
	if ok != 3 || refused != 7 || got.ends[0].sent != 3 {
		t.Fatalf("%d answered, %d refused, %d sent: want 3, 7 and 3", ok, refused, got.ends[0].sent)
	}
}

func TestAStalledTargetIsStillOfferedEveryArrivalOnTime(t *testing.T) {
	target := &fakeNet{hold: true, releaseAt: 600 * time.Millisecond}
	e, got := runFake(t, target, 10_000, testPhase(t, 0, 200, 500, 60_000))
	if len(target.seen) != 100 || got.ends[0].sent != 100 {
		t.Fatalf("the target was sent %d arrivals, want all 100 while it answered none", len(target.seen))
	}
	for i, lag := range target.lags {
		if lag != 0 {
			t.Fatalf("arrival %d left %v late: a stalled target slowed the schedule", target.seen[i].k, lag)
		}
	}
	// one connection per arrival held: 100 at once
	if target.maxHeld != 100 || e.peak != 100 {
		t.Fatalf("%d held at once on %d connections: want 100 and 100", target.maxHeld, e.peak)
	}
	// each latency counts from its own due time to the release
	for _, r := range got.requests {
		if want := uint32(600_000 - r.intended); r.latency != want {
			t.Fatalf("arrival due at %d µs: latency %d µs, want %d (the whole wait)", r.intended, r.latency, want)
		}
	}
}

func TestADeadTargetIsAKOOfTheTargetNotADrop(t *testing.T) {
	target := &fakeNet{err: syscall.ECONNREFUSED}
	_, got := runFake(t, target, 100, testPhase(t, 0, 50, 100, 1000))
	for _, r := range got.requests {
		if r.flags&flagDropped != 0 || r.status != 0 || got.messages[r.message] != "connection refused" {
			t.Fatalf("record %+v (%q): want a KO with no status", r, got.messages[r.message])
		}
	}
	if got.ends[0].sent != 5 {
		t.Fatalf("sent %d, want 5", got.ends[0].sent)
	}
}

func TestOnThreadRunsAsEachPhasesScheduleStartsAndAtEachWakeUp(t *testing.T) {
	target := &fakeNet{clk: &fakeClock{}}
	var out bytes.Buffer
	rec := newRecorder(&out)
	e := newEngine(target.clk, rec, 100)
	e.net, target.e = target, e
	var sentBefore []int
	e.onThread = func() { sentBefore = append(sentBefore, len(target.seen)) }
	e.run([]*phase{testPhase(t, 0, 10, 500, 1000), testPhase(t, 1, 10, 500, 1000)}, "", 5*time.Millisecond)
	// 5 arrivals 100 ms apart a phase: a call before each phase's first, and at each wake-up
	// for the next
	want := []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	if !slices.Equal(sentBefore, want) {
		t.Fatalf("called with %v arrivals sent, want %v", sentBefore, want)
	}
}
