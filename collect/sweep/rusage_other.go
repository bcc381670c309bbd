//go:build !unix

package sweep

// processCPU is unknown on this system: the CPU columns stay 0.
func processCPU() (user, sys float64) { return 0, 0 }
