//go:build !linux

package cputime

import "time"

// Thread is unknown on this system.
func Thread() (cpu time.Duration, ok bool) { return 0, false }
