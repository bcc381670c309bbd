package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Interval is a confidence interval with the facts needed to judge it.
type Interval struct {
	// Method says how the interval was computed, in words.
	Method string `json:"method"`
	// N is the number of independent values the interval rests on, and
	// Of says what they are (OfRequests, OfSubWindows, OfRuns; empty where
	// the caller did not say).
	N  int    `json:"n"`
	Of string `json:"of,omitempty"`
	// Confidence is the nominal coverage, e.g. 0.95.
	Confidence float64 `json:"confidence"`
	Estimate   float64 `json:"estimate"`
	Low        float64 `json:"low"`
	High       float64 `json:"high"`
}

// What an interval's N values are.
const (
	OfRequests = "requests"
	// OfSubWindows: the measured window cut into N equal sub-windows, one
	// value each.
	OfSubWindows = "sub-windows"
	OfRuns       = "runs"
)

// Bootstrap describes a seeded percentile bootstrap. The same values, seed
// and resample count give the same interval.
type Bootstrap struct {
	Resamples  int
	Seed       uint64
	Confidence float64
}

func (b Bootstrap) rng() *rand.Rand {
	// PCG with a fixed second word: the seed alone fixes the stream.
	return rand.New(rand.NewPCG(b.Seed, 0x9e3779b97f4a7c15))
}

// Percentile returns the bootstrap interval of the nearest-rank p-th
// percentile of xs: resample xs with replacement, take the percentile of
// each resample, and report the (1−c)/2 and (1+c)/2 quantiles of those.
// It needs at least two values; with fewer it returns ok = false.
func (b Bootstrap) Percentile(xs []float64, p float64) (Interval, bool) {
	n := len(xs)
	if n < 2 || b.Resamples < 1 {
		return Interval{}, false
	}
	sorted := Sorted(xs)
	r := b.rng()
	rank := rankIndex(n, p) + 1
	counts := make([]int, n)
	est := make([]float64, b.Resamples)
	for i := range est {
		clear(counts)
		for range n {
			counts[r.IntN(n)]++
		}
		// A resample is a multiset of positions in sorted: its p-th
		// percentile is the value where the running count reaches rank.
		// O(n) per resample instead of a sort.
		c := 0
		for j, k := range counts {
			c += k
			if c >= rank {
				est[i] = sorted[j]
				break
			}
		}
	}
	lo, hi := b.bounds(est)
	return Interval{
		Method:     fmt.Sprintf("percentile bootstrap, %d resamples, seed %d", b.Resamples, b.Seed),
		N:          n,
		Confidence: b.Confidence,
		Estimate:   Percentile(sorted, p),
		Low:        lo, High: hi,
	}, true
}

// Mean returns the bootstrap interval of the mean of xs.
func (b Bootstrap) Mean(xs []float64) (Interval, bool) {
	n := len(xs)
	if n < 2 || b.Resamples < 1 {
		return Interval{}, false
	}
	r := b.rng()
	est := make([]float64, b.Resamples)
	for i := range est {
		s := 0.0
		for range n {
			s += xs[r.IntN(n)]
		}
		est[i] = s / float64(n)
	}
	lo, hi := b.bounds(est)
	return Interval{
		Method:     fmt.Sprintf("percentile bootstrap of the mean, %d resamples, seed %d", b.Resamples, b.Seed),
		N:          n,
		Confidence: b.Confidence,
		Estimate:   mean(xs),
		Low:        lo, High: hi,
	}, true
}

// bounds are the nearest-rank (1−c)/2 and (1+c)/2 quantiles of est.
func (b Bootstrap) bounds(est []float64) (lo, hi float64) {
	slices.Sort(est)
	tail := 100 * (1 - b.Confidence) / 2
	return Percentile(est, tail), Percentile(est, 100-tail)
}

// TInterval is Student's t interval of the mean of xs at the given
// confidence: mean ± t(c, n−1)·s/√n. It suits a few repeated runs, where
// a bootstrap has too few values to resample. It needs two values.
func TInterval(xs []float64, confidence float64) (Interval, bool) {
	n := len(xs)
	if n < 2 || !(confidence > 0 && confidence < 1) {
		return Interval{}, false
	}
	m := mean(xs)
	ss := 0.0
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	sd := math.Sqrt(ss / float64(n-1))
	t := StudentTQuantile((1+confidence)/2, float64(n-1))
	half := t * sd / math.Sqrt(float64(n))
	return Interval{
		Method:     fmt.Sprintf("Student's t interval of the mean over %d values (t = %.3f)", n, t),
		N:          n,
		Confidence: confidence,
		Estimate:   m,
		Low:        m - half, High: m + half,
	}, true
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
