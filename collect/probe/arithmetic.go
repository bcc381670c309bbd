package probe

import (
	"math"

	"github.com/headroom-llm/headroom/stats"
)

// BytesPerElement is the size of a bf16 value.
const BytesPerElement = 2

// GEMMFLOPs is the arithmetic of a (batch,k)@(k,n) product: one multiply
// and one add per term, 2·B·K·N.
func GEMMFLOPs(batch, k, n int) float64 { return 2 * float64(batch) * float64(k) * float64(n) }

// GEMMBytes is the least memory traffic of that product in bf16: each
// input read once and the output written once, 2·(B·K + K·N + B·N).
func GEMMBytes(batch, k, n int) float64 {
	b, kk, nn := float64(batch), float64(k), float64(n)
	return BytesPerElement * (b*kk + kk*nn + b*nn)
}

// Intensity is GEMMFLOPs/GEMMBytes in FLOP per byte; with K = N = 8192 it
// is B/(1 + B/4096), about B while B is small (the seed's "trick").
func Intensity(batch, k, n int) float64 { return GEMMFLOPs(batch, k, n) / GEMMBytes(batch, k, n) }

// TFLOPS converts FLOPs done in ms milliseconds to TFLOP/s.
func TFLOPS(flops, ms float64) float64 { return flops / (ms / 1e3) / 1e12 }

// GBps converts bytes moved in ms milliseconds to GB/s (10⁹ bytes per second).
func GBps(bytes, ms float64) float64 { return bytes / (ms / 1e3) / 1e9 }

// Summary describes repeated measurements of one quantity.
type Summary struct {
	Median, Min, Max float64
	// SpreadPct is (Max − Min) / Median in percent.
	SpreadPct float64
}

// Summarize computes the median (stats.Median: the mean of the two middle
// values for an even count), minimum, maximum and spread of xs.
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{Median: math.NaN(), Min: math.NaN(), Max: math.NaN(), SpreadPct: math.NaN()}
	}
	s := stats.Sorted(xs)
	n := len(s)
	med := stats.Median(s)
	return Summary{Median: med, Min: s[0], Max: s[n-1], SpreadPct: (s[n-1] - s[0]) / med * 100}
}
