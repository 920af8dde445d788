package main

import (
	"syscall"
	"unsafe"
)

// The engine thread's system calls, made without telling Go's scheduler. With one P
// (GOMAXPROCS 1), a thread blocked in epoll_wait through syscall.Syscall has its P taken by the
// runtime's monitor after 20 µs and handed to another thread, which finds nothing to run and
// sleeps again; the monitor, having found work, then looks again 20 µs later. On one core that
// churn of threads cost as much CPU as the requests. Raw calls keep the P: the runtime still
// preempts the thread when it must (the garbage collector, the signal handler's goroutine) with
// a signal, which ends a blocked epoll_wait early with EINTR. The sockets are non-blocking, so
// a read or a write never blocks.

func errnoErr(e syscall.Errno) error {
	if e == 0 {
		return nil
	}
	return e
}

// epollWait is epoll_wait(2), as epoll_pwait with no signal mask (every architecture has it).
func epollWait(epfd int, events []syscall.EpollEvent, msec int) (int, error) {
	r, _, e := syscall.RawSyscall6(syscall.SYS_EPOLL_PWAIT, uintptr(epfd),
		uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(msec), 0, 0)
	return int(r), errnoErr(e)
}

// read is read(2) on a non-blocking descriptor, into a buffer that is not empty.
func read(fd int, p []byte) (int, error) {
	r, _, e := syscall.RawSyscall(syscall.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(r), errnoErr(e)
}

// write is write(2) on a non-blocking descriptor, of bytes that are not empty.
func write(fd int, p []byte) (int, error) {
	r, _, e := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	return int(r), errnoErr(e)
}

type itimerspec struct {
	interval syscall.Timespec
	value    syscall.Timespec
}

// setTimer arms a timerfd to expire once, ns nanoseconds from now (ns > 0).
func setTimer(fd int, ns int64) error {
	spec := itimerspec{value: syscall.NsecToTimespec(ns)}
	_, _, e := syscall.RawSyscall6(syscall.SYS_TIMERFD_SETTIME, uintptr(fd), 0, uintptr(unsafe.Pointer(&spec)), 0, 0, 0)
	return errnoErr(e)
}

// gettid is the calling thread's id.
func gettid() int {
	r, _, _ := syscall.RawSyscall(syscall.SYS_GETTID, 0, 0, 0)
	return int(r)
}

// schedFIFO is the real-time policy SCHED_FIFO, at its lowest priority.
const (
	schedFIFO     = 1
	rtPriorityLow = 1
)

// realtime puts the calling thread in SCHED_FIFO at the lowest priority: a timer that wakes it
// preempts any ordinary process on its core at once, where the fair scheduler lets a busy
// neighbour finish its slice first (milliseconds of schedule lag). The thread still blocks
// whenever it has nothing to send or read, and the kernel keeps 5 % of each second for
// ordinary processes (sched_rt_runtime_us). Needs CAP_SYS_NICE (or an RLIMIT_RTPRIO).
func realtime() error {
	param := struct{ priority int32 }{rtPriorityLow}
	_, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, 0, schedFIFO, uintptr(unsafe.Pointer(&param)))
	return errnoErr(e)
}
