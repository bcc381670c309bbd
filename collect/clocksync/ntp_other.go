//go:build !linux

package clocksync

import "github.com/headroom-llm/headroom/rundir"

// KernelNTP is nil where the kernel's NTP state cannot be read.
func KernelNTP() *rundir.NTPState { return nil }
