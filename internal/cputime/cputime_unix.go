//go:build unix

// Package cputime reads the CPU time this process has used, for the
// sweep's self-check and for benchmarks that report a cost a shared
// machine does not inflate.
package cputime

import (
	"syscall"
	"time"
)

// Process is this process's user and system CPU time so far; zero when
// the system cannot tell.
func Process() (user, sys time.Duration) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano())
}

// Total is user plus system CPU time.
func Total() time.Duration {
	u, s := Process()
	return u + s
}
