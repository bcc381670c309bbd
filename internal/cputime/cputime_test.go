//go:build unix

package cputime

import (
	"testing"
	"time"
)

// Spinning makes Process see its CPU time grow. It spins until 10 ms of
// CPU time have been counted, not for a fixed wall time: on a busy host a
// spinning goroutine gets a fraction of a core. The deadline only catches
// a Process that never grows.
func TestProcessGrows(t *testing.T) {
	const want = 10 * time.Millisecond
	u0, s0 := Process()
	deadline := time.Now().Add(20 * time.Second)
	var grew time.Duration
	for time.Now().Before(deadline) {
		u1, s1 := Process()
		if grew = (u1 + s1) - (u0 + s0); grew >= want {
			return
		}
	}
	t.Errorf("CPU time grew by %v over 20 s of spinning, want %v", grew, want)
}
