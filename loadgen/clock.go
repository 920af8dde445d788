package main

import (
	"syscall"
	"time"
)

// clock is the engine's time: durations since the engine started. The schedule is kept on it
// (tests drive the engine on a fake one: engine_test.go).
type clock interface {
	now() time.Duration
}

// realClock is the monotonic clock.
type realClock struct {
	t0 time.Time
}

func newRealClock() *realClock { return &realClock{t0: time.Now()} }

func (c *realClock) now() time.Duration { return time.Since(c.t0) }

// longestWait is how long one wait may last before the engine looks whether it was stopped
// and the network whether a request ran out of time.
const longestWait = 50 * time.Millisecond

// cpuTime is the CPU time (user + system) this process has used.
func cpuTime() time.Duration {
	var usage syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &usage) != nil {
		return 0
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}
