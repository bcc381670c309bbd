//go:build !unix

package compare

import "time"

func processCPU() time.Duration { return 0 }
