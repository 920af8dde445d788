package main

import (
	"errors"
	"runtime"
	"syscall"
	"testing"
	"unsafe"
)

func TestRealtimePutsTheThreadInFIFOOrSaysWhyNot(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err := realtime()
	if errors.Is(err, syscall.EPERM) {
		return // no CAP_SYS_NICE here: -realtime says so and runs as before
	}
	if err != nil {
		t.Fatal(err)
	}
	policy, _, e := syscall.RawSyscall(syscall.SYS_SCHED_GETSCHEDULER, 0, 0, 0)
	// back to the ordinary policy before the thread returns to the pool
	param := struct{ priority int32 }{0}
	if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, 0, 0, uintptr(unsafe.Pointer(&param))); e != 0 {
		t.Fatal(e)
	}
	if e != 0 || policy != schedFIFO {
		t.Fatalf("policy %d (%v), want SCHED_FIFO (%d)", policy, e, schedFIFO)
	}
}

func TestRawReadsAndWritesReportErrnos(t *testing.T) {
	var fds [2]int
	if err := syscall.Pipe2(fds[:], syscall.O_NONBLOCK|syscall.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fds[0])
	defer syscall.Close(fds[1])
	buf := make([]byte, 8)
	if _, err := read(fds[0], buf); err != syscall.EAGAIN {
		t.Fatalf("read of an empty pipe: %v, want EAGAIN", err)
	}
	if n, err := write(fds[1], []byte("ping")); n != 4 || err != nil {
		t.Fatalf("write: %d, %v", n, err)
	}
	if n, err := read(fds[0], buf); n != 4 || err != nil || string(buf[:n]) != "ping" {
		t.Fatalf("read: %d %q, %v", n, buf[:max(n, 0)], err)
	}
}
