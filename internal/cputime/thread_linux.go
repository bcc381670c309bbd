package cputime

import (
	"syscall"
	"time"
)

// ThisThread is the CPU time (user plus system) of the calling OS thread; a
// goroutine that measures its own cost locks itself to its thread first
// (runtime.LockOSThread). ok is false where the system cannot tell.
func ThisThread() (cpu time.Duration, ok bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_THREAD, &ru) != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
