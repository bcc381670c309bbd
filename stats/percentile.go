// Package stats holds the statistics every number in a headroom report is
// computed with: one percentile method, the sample size a percentile needs,
// and confidence intervals (a seeded bootstrap and Student's t). It knows
// nothing about runs or requests.
package stats

import (
	"math"
	"slices"
)

// PercentileMethod names the one percentile definition headroom uses, for
// reports and analysis.json.
const PercentileMethod = "nearest rank: the ceil(p/100*n)-th smallest of n values (an observed value, never interpolated)"

// Percentile returns the p-th percentile (0 <= p <= 100) of sorted, which
// must be in ascending order, by the nearest-rank method: the
// ceil(p/100·n)-th smallest value (1-based), and the minimum for p = 0.
// It is always one of the observed values. It returns NaN for no values or
// a p outside 0..100.
//
// Nearest rank is chosen over interpolation because a latency percentile
// should be a latency some request actually had, and because its small-
// sample behaviour is easy to state (see MinSamples).
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 || !(p >= 0 && p <= 100) {
		return math.NaN()
	}
	return sorted[rankIndex(n, p)]
}

// rankIndex is the 0-based index of the nearest-rank p-th percentile of n
// values. The small tolerance keeps p·n/100 that is an integer in exact
// arithmetic (99·200/100) from rounding up through float error.
func rankIndex(n int, p float64) int {
	r := int(math.Ceil(p*float64(n)/100 - 1e-9))
	return min(max(r, 1), n) - 1
}

// Of sorts a copy of xs and returns the percentile of each p, in order.
func Of(xs []float64, ps ...float64) []float64 {
	s := Sorted(xs)
	out := make([]float64, len(ps))
	for i, p := range ps {
		out[i] = Percentile(s, p)
	}
	return out
}

// Sorted returns an ascending copy of xs.
func Sorted(xs []float64) []float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s
}

// MinSamples is the smallest sample size at which the nearest-rank p-th
// percentile is not simply the largest value: ceil(100/(100−p)). A p99
// needs 100 values, a p90 10, a p99.9 1000, a p50 2. Below it the
// "percentile" is the sample maximum and says nothing about the tail.
func MinSamples(p float64) int {
	if p >= 100 {
		return math.MaxInt
	}
	if p <= 0 {
		return 1
	}
	return int(math.Ceil(100/(100-p) - 1e-9))
}

// Median returns the middle of sorted, which must be in ascending order:
// the middle value for an odd count, the mean of the two middle values for
// an even one, and NaN for no values. Unlike the nearest-rank p50 it is not
// always an observed value; it is the summary of repeated measurements of
// one quantity (a probe point's timed windows, a clock offset), where no
// single observation is special.
func Median(sorted []float64) float64 {
	n := len(sorted)
	switch {
	case n == 0:
		return math.NaN()
	case n%2 == 1:
		return sorted[n/2]
	}
	return sorted[n/2-1] + (sorted[n/2]-sorted[n/2-1])/2
}
