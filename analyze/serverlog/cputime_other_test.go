//go:build !unix

package serverlog

import "time"

func cpuTime() time.Duration { return 0 }
