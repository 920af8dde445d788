package main

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

// clock is the engine's time: durations since the engine started. The schedule is kept on it
// (tests drive the engine on a fake one: engine_test.go).
type clock interface {
	now() time.Duration
	// sleepUntil returns once now() has reached t (never before), or early when stop is
	// closed.
	sleepUntil(t time.Duration, stop <-chan struct{})
}

// realClock is the monotonic clock, waited on with a timerfd: time.Sleep waits for timers in
// epoll with a millisecond timeout (it returns 0.1–1 ms late), so one timerfd, armed for each
// wait and read through the runtime's poller like a socket, does the waiting, to within tens
// of microseconds (as the backend's exact hold does: backend/hold.go).
type realClock struct {
	t0   time.Time
	fd   uintptr
	file *os.File // the same timerfd, read through the poller (never File.Fd: that would make it blocking)
}

type itimerspec struct {
	interval syscall.Timespec
	value    syscall.Timespec
}

const clockMonotonic = 1

// longestWait is how long one wait may last before the engine looks whether it was stopped.
const longestWait = 50 * time.Millisecond

func newRealClock() *realClock {
	c := &realClock{t0: time.Now()}
	fd, _, errno := syscall.Syscall(
		syscall.SYS_TIMERFD_CREATE, clockMonotonic, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno == 0 {
		c.fd, c.file = fd, os.NewFile(fd, "timerfd")
	}
	return c
}

func (c *realClock) now() time.Duration { return time.Since(c.t0) }

func (c *realClock) sleepUntil(t time.Duration, stop <-chan struct{}) {
	for {
		d := t - c.now()
		if d <= 0 {
			return
		}
		select {
		case <-stop:
			return
		default:
		}
		c.wait(min(d, longestWait))
	}
}

func (c *realClock) wait(d time.Duration) {
	if c.file == nil {
		time.Sleep(d) // no timerfd (not Linux?): coarser, never early
		return
	}
	spec := itimerspec{value: syscall.NsecToTimespec(int64(d))}
	_, _, errno := syscall.Syscall6(
		syscall.SYS_TIMERFD_SETTIME, c.fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	if errno != 0 {
		time.Sleep(d)
		return
	}
	var expirations [8]byte
	if _, err := c.file.Read(expirations[:]); err != nil {
		time.Sleep(d)
	}
}

func (c *realClock) close() {
	if c.file != nil {
		c.file.Close()
	}
}

// cpuTime is the CPU time (user + system) this process has used.
func cpuTime() time.Duration {
	var usage syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &usage) != nil {
		return 0
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}
