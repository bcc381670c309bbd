package servermetrics

import (
	"math"
	"sort"
)

// Bucket is one cumulative histogram bucket: Count observations were at
// most UpperBound.
type Bucket struct {
	UpperBound float64
	Count      float64
}

// BucketQuantile estimates the q-quantile (0 <= q <= 1) of the
// observations summarised by cumulative buckets, the way Prometheus'
// histogram_quantile does:
//
//   - buckets are sorted by upper bound, and counts that decrease (a scrape
//     that caught buckets mid-update) are raised to the previous count;
//   - the highest bucket must be +Inf; its count is the number of
//     observations n, and the rank sought is q*n;
//   - the quantile falls in the first bucket whose count reaches the rank,
//     and is interpolated linearly between that bucket's lower bound (the
//     previous upper bound, or 0 for the first bucket) and its upper
//     bound, assuming observations spread evenly inside it;
//   - if the rank falls in the +Inf bucket the result is the highest
//     finite upper bound, since nothing is known beyond it;
//   - if the first bucket's upper bound is <= 0 and the rank falls in it,
//     the result is that upper bound.
//
// It returns NaN when there are no observations, fewer than two buckets or
// no +Inf bucket, -Inf for q < 0 and +Inf for q > 1. The estimate can be
// off by up to a bucket width; quote it with the bucket bounds.
func BucketQuantile(q float64, buckets []Bucket) float64 {
	if math.IsNaN(q) {
		return math.NaN()
	}
	if q < 0 {
		return math.Inf(-1)
	}
	if q > 1 {
		return math.Inf(1)
	}
	if len(buckets) < 2 {
		return math.NaN()
	}
	b := append([]Bucket(nil), buckets...)
	sort.SliceStable(b, func(i, j int) bool { return b[i].UpperBound < b[j].UpperBound })
	if !math.IsInf(b[len(b)-1].UpperBound, 1) {
		return math.NaN()
	}
	for i := 1; i < len(b); i++ {
		if b[i].Count < b[i-1].Count {
			b[i].Count = b[i-1].Count
		}
	}
	n := b[len(b)-1].Count
	if n <= 0 || math.IsNaN(n) {
		return math.NaN()
	}
	rank := q * n
	i := sort.Search(len(b)-1, func(i int) bool { return b[i].Count >= rank })
	if i == len(b)-1 {
		return b[len(b)-2].UpperBound
	}
	if i == 0 && b[0].UpperBound <= 0 {
		return b[0].UpperBound
	}
	lo, hi := 0.0, b[i].UpperBound
	count := b[i].Count
	if i > 0 {
		lo = b[i-1].UpperBound
		count -= b[i-1].Count
		rank -= b[i-1].Count
	}
	if count <= 0 {
		return hi
	}
	return lo + (hi-lo)*(rank/count)
}
