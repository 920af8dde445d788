package main

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

// waiter parks the dispatching goroutine until an arrival is due, to within tens of
// microseconds: time.Sleep waits for timers in epoll with a millisecond timeout (it returns
// 0.1-1 ms late), so one timerfd, armed for each wait and read through the runtime's poller
// like a socket, does the waiting (as the backend's exact hold does: backend/hold.go).
type waiter struct {
	file *os.File
}

type itimerspec struct {
	interval syscall.Timespec
	value    syscall.Timespec
}

const clockMonotonic = 1

func newWaiter() *waiter {
	fd, _, errno := syscall.Syscall(
		syscall.SYS_TIMERFD_CREATE, clockMonotonic, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		return &waiter{}
	}
	return &waiter{file: os.NewFile(fd, "timerfd")}
}

func (w *waiter) wait(d time.Duration) {
	if w.file == nil {
		time.Sleep(d) // no timerfd (not Linux?): coarser, never early
		return
	}
	spec := itimerspec{value: syscall.NsecToTimespec(int64(d))}
	_, _, errno := syscall.Syscall6(
		syscall.SYS_TIMERFD_SETTIME, w.file.Fd(), 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	if errno != 0 {
		time.Sleep(d)
		return
	}
	var expirations [8]byte
	if _, err := w.file.Read(expirations[:]); err != nil {
		time.Sleep(d)
	}
}

func (w *waiter) close() {
	if w.file != nil {
		w.file.Close()
	}
}
