//go:build !linux

package cputime

import (
	"errors"
	"time"
)

// Thread is one thread's CPU use so far; /proc exists on Linux only.
type Thread struct {
	PID, TID     int
	Name         string
	User, System time.Duration
	Run, Wait    time.Duration
	HasSched     bool
}

// Threads is unavailable here.
func Threads(int) ([]Thread, error) {
	return nil, errors.New("per-thread CPU times need Linux's /proc")
}

// Tree is pid alone here.
func Tree(pid int) []int { return []int{pid} }

// Wait is unknown here.
func Wait() (time.Duration, bool) { return 0, false }

// ListeningPID is unknown here.
func ListeningPID(int) (int, bool) { return 0, false }
