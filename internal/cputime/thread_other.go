//go:build !linux

package cputime

import "time"

// ThisThread is unknown on this system.
func ThisThread() (cpu time.Duration, ok bool) { return 0, false }
