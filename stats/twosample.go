package stats

// Two-sample comparisons, for headroom compare: is a difference between
// two groups of values (requests of two runs, or repeated runs of two
// configurations) larger than chance? benchstat's approach: a rank test
// that assumes no distribution, and the p-value shown next to the change.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
)

// MannWhitney is the result of a two-sided Mann-Whitney U test.
type MannWhitney struct {
	Method string  `json:"method"`
	N1     int     `json:"n1"`
	N2     int     `json:"n2"`
	U      float64 `json:"u"` // U of the first sample: pairs (x, y) with x > y, ties counting ½
	P      float64 `json:"p"` // two-sided p-value
}

// exactMaxN bounds the samples for which the exact null distribution of U
// is counted (both sizes at most this, and no ties); beyond it, or with
// ties, the normal approximation is used.
const exactMaxN = 50

// MannWhitneyU tests whether xs and ys come from the same distribution
// against the alternative that one tends to be larger (two-sided). The
// p-value is exact (the null distribution of U counted over every
// arrangement of ranks) for samples of up to 50 values without ties, else
// the normal approximation with continuity and tie corrections, as SciPy
// computes them. It needs one value in each sample.
func MannWhitneyU(xs, ys []float64) (MannWhitney, bool) {
	return MannWhitneyUSorted(Sorted(xs), Sorted(ys))
}

// MannWhitneyUSorted is MannWhitneyU for samples already in ascending
// order (as Sorted leaves them): it merges them instead of sorting, so a
// caller that has sorted them for their percentiles (compare, on the
// pooled requests of thousands of runs) does not sort them again.
func MannWhitneyUSorted(xs, ys []float64) (MannWhitney, bool) {
	n1, n2 := len(xs), len(ys)
	if n1 == 0 || n2 == 0 {
		return MannWhitney{}, false
	}
	// Mid-ranks over the merged samples, a group of equal values at a
	// time; tieTerm accumulates Σ(t³ − t) over groups of ties.
	var r1, tieTerm float64
	for i, j := 0, 0; i < n1 || j < n2; {
		takeX := j == n2 || i < n1 && xs[i] < ys[j]
		v := ys[min(j, n2-1)]
		if takeX {
			v = xs[i]
		}
		start := i + j
		fromX := 0
		for i < n1 && xs[i] == v {
			i++
			fromX++
		}
		for j < n2 && ys[j] == v {
			j++
		}
		if i+j == start { // NaN, equal to nothing: a group of its own
			if takeX {
				i, fromX = i+1, 1
			} else {
				j++
			}
		}
		end := i + j
		rank := float64(start+end+1) / 2 // ranks start+1..end averaged
		r1 += rank * float64(fromX)
		t := float64(end - start)
		tieTerm += t*t*t - t
	}
	u := r1 - float64(n1*(n1+1))/2
	res := MannWhitney{N1: n1, N2: n2, U: u}
	if tieTerm == 0 && n1 <= exactMaxN && n2 <= exactMaxN {
		res.P = exactMannWhitneyP(u, n1, n2)
		res.Method = fmt.Sprintf("Mann-Whitney U, two-sided, exact (n = %d and %d)", n1, n2)
		return res, true
	}
	nn := float64(n1 + n2)
	mu := float64(n1*n2) / 2
	sigma := math.Sqrt(float64(n1*n2) / 12 * (nn + 1 - tieTerm/(nn*(nn-1))))
	if sigma == 0 {
		// Every value is the same: no evidence of a difference.
		res.P = 1
	} else {
		z := (math.Abs(u-mu) - 0.5) / sigma
		res.P = math.Min(1, math.Erfc(math.Max(z, 0)/math.Sqrt2))
	}
	res.Method = fmt.Sprintf("Mann-Whitney U, two-sided, normal approximation with continuity and tie corrections (n = %d and %d)", n1, n2)
	return res, true
}

// exactMannWhitneyP is the two-sided p-value of U under the null: twice
// the smaller tail of the exact distribution of U for these sizes. The
// distribution is symmetric about n1·n2/2, so the upper tail at k is the
// lower tail at n1·n2 − k: both tails are sums of counts, never a
// difference, and keep their precision far out.
func exactMannWhitneyP(u float64, n1, n2 int) float64 {
	cum := uNullCumulative(n1, n2)
	maxU := len(cum) - 1
	k := min(max(int(math.Round(u)), 0), maxU)
	lower, upper := cum[k], cum[maxU-k]
	return math.Min(1, 2*math.Min(lower, upper)/cum[maxU])
}

// uNull holds the cumulative null distributions of U already counted, by
// sample sizes (smaller first). A comparison tests the same pair of sizes
// many times (every level, metric and group of a sweep of equal levels);
// counting one takes about (n1·n2)²/4 additions and is done once. Every
// pair of sizes up to exactMaxN together holds 835,550 values: 6.7 MB.
var uNull = struct {
	sync.Mutex
	cum map[[2]int][]float64
}{cum: map[[2]int][]float64{}}

// uNullCumulative returns, for U of samples of n1 and n2 values, the
// number of arrangements of ranks with U ≤ u, for u = 0..n1·n2. The
// caller must not change it.
func uNullCumulative(n1, n2 int) []float64 {
	key := [2]int{min(n1, n2), max(n1, n2)}
	uNull.Lock()
	defer uNull.Unlock()
	if c, ok := uNull.cum[key]; ok {
		return c
	}
	c := uNullCounts(key[0], key[1])
	for v := 1; v < len(c); v++ {
		c[v] += c[v-1]
	}
	uNull.cum[key] = c
	return c
}

// uNullCounts counts the arrangements of ranks of samples of m1 and n1
// values with each U = 0..m1·n1, with the recursion
// N(u; m, n) = N(u−n; m−1, n) + N(u; m, n−1), one m at a time in two
// layers of counts (n = 0..n1 by u). Only additions of non-negative counts,
// so each count keeps float64's relative precision.
func uNullCounts(m1, n1 int) []float64 {
	width := m1*n1 + 1
	prev, cur := make([]float64, (n1+1)*width), make([]float64, (n1+1)*width)
	for n := 0; n <= n1; n++ {
		prev[n*width] = 1 // m = 0: one arrangement, U = 0
	}
	for m := 1; m <= m1; m++ {
		for n := 0; n <= n1; n++ {
			row, up := cur[n*width:(n+1)*width], prev[n*width:(n+1)*width]
			clear(row)
			for v := 0; v <= m*n; v++ {
				c := 0.0
				if v >= n {
					c = up[v-n]
				}
				if n > 0 {
					c += cur[(n-1)*width+v]
				}
				row[v] = c
			}
		}
		prev, cur = cur, prev
	}
	return slices.Clone(prev[n1*width:])
}

// PercentileRatio is the bootstrap interval of the ratio of the p-th
// percentiles of ys and xs (ys over xs): both samples are resampled
// independently and the ratio taken for each resample. An interval that
// excludes 1 says the percentile changed. It needs two values in each
// sample and the p-th percentile of xs positive in the sample and in every
// resample (a few zeros below it are fine: a stream whose tokens all came
// in one read has a TPOT of 0).
//
// A resample's nearest-rank percentile is drawn directly rather than by
// drawing n values: the r-th smallest of n indexes drawn uniformly from
// 0..n−1 is floor(n·U) where U, the r-th smallest of n uniform variates, is
// Beta(r, n−r+1) distributed. This is the same distribution as resampling,
// at a cost independent of n, so the requests of a thousand runs pooled
// together cost no more than one run's.
func (b Bootstrap) PercentileRatio(xs, ys []float64, p float64) (Interval, bool) {
	if len(xs) < 2 || len(ys) < 2 || b.Resamples < 1 {
		return Interval{}, false
	}
	return b.PercentileRatioSorted(Sorted(xs), Sorted(ys), p)
}

// PercentileRatioSorted is PercentileRatio for samples already in
// ascending order (see MannWhitneyUSorted).
func (b Bootstrap) PercentileRatioSorted(sx, sy []float64, p float64) (Interval, bool) {
	if len(sx) < 2 || len(sy) < 2 || b.Resamples < 1 {
		return Interval{}, false
	}
	if Percentile(sx, p) <= 0 {
		return Interval{}, false
	}
	r := b.rng()
	est := make([]float64, b.Resamples)
	for i := range est {
		num, den := resampledPercentile(r, sy, p), resampledPercentile(r, sx, p)
		if den <= 0 {
			return Interval{}, false
		}
		est[i] = num / den
	}
	lo, hi := b.bounds(est)
	return Interval{
		Method:     fmt.Sprintf("percentile bootstrap of the ratio of p%s values, both samples resampled, %d resamples, seed %d", trimFloat(p), b.Resamples, b.Seed),
		N:          min(len(sx), len(sy)),
		Confidence: b.Confidence,
		Estimate:   Percentile(sy, p) / Percentile(sx, p),
		Low:        lo, High: hi,
	}, true
}

// resampledPercentile returns the nearest-rank p-th percentile of one
// bootstrap resample of sorted (see PercentileRatio).
func resampledPercentile(r *rand.Rand, sorted []float64, p float64) float64 {
	n := len(sorted)
	k := rankIndex(n, p) + 1
	u := betaVariate(r, float64(k), float64(n-k+1))
	return sorted[min(int(float64(n)*u), n-1)]
}

// betaVariate draws from Beta(a, b) as X/(X+Y), X ~ Gamma(a), Y ~ Gamma(b).
func betaVariate(r *rand.Rand, a, b float64) float64 {
	x, y := Gamma(r, a), Gamma(r, b)
	return x / (x + y)
}

func trimFloat(v float64) string {
	return fmt.Sprintf("%g", v)
}
