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

// Ridge is the intensity where the roofline bends, peak / bandwidth, in
// FLOP per byte (TFLOP/s over TB/s).
func Ridge(peakTFLOPS, bandwidthGBps float64) float64 {
	if bandwidthGBps <= 0 {
		return math.NaN()
	}
	return peakTFLOPS * 1e12 / (bandwidthGBps * 1e9)
}

// Peak returns the highest TFLOP/s among the points and its batch size
// (the first one, if several tie). It returns 0, 0 for no points.
func Peak(points []GEMMPoint) (tflops float64, batch int) {
	for _, p := range points {
		if p.TFLOPS > tflops {
			tflops, batch = p.TFLOPS, p.Batch
		}
	}
	return tflops, batch
}

// Knee is the smallest batch size whose TFLOP/s reaches fraction of the
// peak (the seed uses 0.9), or 0 if there are no points.
func Knee(points []GEMMPoint, fraction float64) int {
	peak, _ := Peak(points)
	knee := 0
	for _, p := range points {
		if p.TFLOPS >= fraction*peak && (knee == 0 || p.Batch < knee) {
			knee = p.Batch
		}
	}
	return knee
}

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
