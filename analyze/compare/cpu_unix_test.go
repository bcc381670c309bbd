//go:build unix

package compare

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user + system) this process has used, to
// report benchmark cost that a shared machine does not inflate.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
