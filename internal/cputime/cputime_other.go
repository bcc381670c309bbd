//go:build !unix

// Package cputime reads the CPU time this process has used, for the
// sweep's self-check and for benchmarks that report a cost a shared
// machine does not inflate.
package cputime

import "time"

// Process is unknown on this system: zero.
func Process() (user, sys time.Duration) { return 0, 0 }

// Total is user plus system CPU time: zero here.
func Total() time.Duration { return 0 }
