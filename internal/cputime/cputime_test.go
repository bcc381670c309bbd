//go:build unix

package cputime

import (
	"testing"
	"time"
)

// Spinning for 50 ms of wall time uses CPU time, which Process sees grow.
func TestProcessGrows(t *testing.T) {
	u0, s0 := Process()
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
	}
	u1, s1 := Process()
	if grew := (u1 + s1) - (u0 + s0); grew < 10*time.Millisecond {
		t.Errorf("CPU time grew by %v over 50 ms of spinning", grew)
	}
}
