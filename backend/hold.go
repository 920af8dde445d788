package main

import (
	"math"
	"os"
	"sort"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// holdUntil blocks the calling goroutine until deadline, to within tens of microseconds.
//
// The mock's fixed latency is the ground truth gatebench checks its measurements against
// (docs/trust.md), so it must be exact. time.Sleep is not: the Go runtime waits for timers
// in epoll with a millisecond timeout, so Sleep(5ms) returns 0.1-1 ms late on an idle server.
// A nanosleep(2) is precise but holds the goroutine's thread and processor, stalling every
// other request until the runtime notices (up to 10 ms). A timerfd armed for the deadline
// has the kernel's high-resolution timer and is waited on by the runtime's poller like a
// socket: the goroutine parks, nothing else is held, and it runs again 30-100 µs after the
// deadline (measured: docs/benchmarks.md, "Ground truth").
func holdUntil(deadline time.Time) {
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return
		}
		if !waitTimerfd(left) {
			time.Sleep(left) // no timerfd (not Linux?): coarser, still never early
		}
	}
}

type itimerspec struct {
	interval syscall.Timespec
	value    syscall.Timespec
}

const clockMonotonic = 1

// waitTimerfd parks the goroutine for d on a one-shot timerfd; false when none can be made.
func waitTimerfd(d time.Duration) bool {
	fd, _, errno := syscall.Syscall(
		syscall.SYS_TIMERFD_CREATE, clockMonotonic, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		return false
	}
	timer := os.NewFile(fd, "timerfd")
	defer timer.Close()
	spec := itimerspec{value: syscall.NsecToTimespec(int64(d))}
	_, _, errno = syscall.Syscall6(
		syscall.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	if errno != 0 {
		return false
	}
	var expirations [8]byte
	_, err := timer.Read(expirations[:])
	return err == nil
}

// holdStats records how late each held response was released, in microseconds after its
// deadline, so the server can report its own precision (GET /__gatebench__/stats).
type holdStats struct {
	mu      sync.Mutex
	lateUS  []int64
	dropped int64
}

// maxHoldSamples bounds the memory of the precision record; beyond it responses are only
// counted.
const maxHoldSamples = 1 << 20

func (s *holdStats) add(late time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.lateUS) >= maxHoldSamples {
		s.dropped++
		return
	}
	s.lateUS = append(s.lateUS, late.Microseconds())
}

func (s *holdStats) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lateUS = nil
	s.dropped = 0
}

// summary: responses held, and the nearest-rank p50/p90/p99/max of how late they were
// released (µs after the deadline).
func (s *holdStats) summary(configured time.Duration) map[string]any {
	s.mu.Lock()
	values := append([]int64(nil), s.lateUS...)
	dropped := s.dropped
	s.mu.Unlock()
	sort.Slice(values, func(a, b int) bool { return values[a] < values[b] })
	rank := func(p float64) int64 {
		if len(values) == 0 {
			return 0
		}
		i := int(math.Ceil(p/100*float64(len(values)))) - 1
		if i < 0 {
			i = 0
		}
		if i >= len(values) {
			i = len(values) - 1
		}
		return values[i]
	}
	out := map[string]any{
		"configured_us": configured.Microseconds(),
		"held":          int64(len(values)) + dropped,
		"late_us": map[string]int64{
			"p50": rank(50),
			"p90": rank(90),
			"p99": rank(99),
			"max": rank(100),
		},
	}
	return out
}
