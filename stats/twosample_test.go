package stats

import (
	"math"
	"math/big"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// Known answers: the SciPy documentation's example (the ages of 5 male and
// 4 female authors), U = 17, exact p = 1/9, asymptotic p = 0.11134688653314041.
func TestMannWhitneyUKnownAnswers(t *testing.T) {
	males := []float64{19, 22, 16, 29, 24}
	females := []float64{20, 11, 17, 12}
	mw, ok := MannWhitneyU(males, females)
	if !ok || mw.U != 17 || math.Abs(mw.P-1.0/9) > 1e-12 {
		t.Fatalf("exact: %+v", mw)
	}
	// A tie forces the normal approximation; with 29 -> 20 tied to a
	// female 20 the statistic is 16.5. Its p-value by hand: mu = 10,
	// sigma² = 20/12·(10 − 6/72), z = (6.5 − 0.5)/sigma.
	tied := []float64{19, 22, 16, 20, 24}
	mw, _ = MannWhitneyU(tied, females)
	sigma := math.Sqrt(20.0 / 12 * (10 - 6.0/72))
	want := math.Erfc(6 / sigma / math.Sqrt2)
	if mw.U != 16.5 || math.Abs(mw.P-want) > 1e-12 {
		t.Fatalf("tied: %+v, want p %v", mw, want)
	}
	cases := []struct {
		xs, ys []float64
		u, p   float64
	}{
		{[]float64{1, 2, 3}, []float64{4, 5, 6}, 0, 0.1},            // 2/C(6,3)
		{[]float64{4, 5, 6}, []float64{1, 2, 3}, 9, 0.1},            // symmetric
		{[]float64{1, 2}, []float64{3, 4}, 0, 1.0 / 3},              // 2/C(4,2): two runs a side can never be significant
		{[]float64{1, 2, 3, 4}, []float64{5, 6, 7, 8}, 0, 2.0 / 70}, // four a side can
		{[]float64{1, 3, 5}, []float64{2, 4, 6}, 3, 0.7},            // P(U<=3) = 7/20
	}
	for _, c := range cases {
		mw, _ := MannWhitneyU(c.xs, c.ys)
		if mw.U != c.u || math.Abs(mw.P-c.p) > 1e-12 {
			t.Errorf("MannWhitneyU(%v, %v) = U %v p %v; want U %v p %v", c.xs, c.ys, mw.U, mw.P, c.u, c.p)
		}
	}
	// The normal approximation for larger samples: 1..60 against
	// 31.5..90.5 (no ties). Pairs with x > y: each x in 32..60 exceeds the
	// x−31 values 31.5..x−0.5, so U = 1 + 2 + … + 29 = 435; mu = 1800,
	// sigma² = 60·60·121/12.
	xs, ys := make([]float64, 60), make([]float64, 60)
	for i := range xs {
		xs[i], ys[i] = float64(i+1), float64(i)+31.5
	}
	mw, _ = MannWhitneyU(xs, ys)
	sig := math.Sqrt(60.0 * 60 * 121 / 12)
	wantP := math.Erfc((math.Abs(435-1800) - 0.5) / sig / math.Sqrt2)
	if mw.U != 435 || math.Abs(mw.P-wantP) > 1e-15 {
		t.Errorf("n=60: U %v p %v; want 435, %v", mw.U, mw.P, wantP)
	}
	if _, ok := MannWhitneyU(nil, []float64{1}); ok {
		t.Error("empty sample accepted")
	}
	if mw, _ := MannWhitneyU([]float64{2, 2}, []float64{2, 2}); mw.P != 1 {
		t.Errorf("identical values: p %v", mw.P)
	}
}

func TestPercentileRatio(t *testing.T) {
	b := Bootstrap{Resamples: 2000, Seed: 1, Confidence: 0.95}
	var xs, ys []float64
	for i := 1; i <= 200; i++ {
		xs = append(xs, float64(i))
		ys = append(ys, 2*float64(i))
	}
	iv, ok := b.PercentileRatio(xs, ys, 50)
	if !ok || iv.Estimate != 2 || !(iv.Low < 2 && iv.High > 2) || iv.Low <= 1 {
		t.Fatalf("doubled sample: %+v", iv)
	}
	iv2, _ := b.PercentileRatio(xs, ys, 50)
	if iv2 != iv {
		t.Error("same seed, different interval")
	}
	same, _ := b.PercentileRatio(xs, xs, 50)
	if !(same.Low < 1 && same.High > 1) {
		t.Errorf("same sample: %+v excludes 1", same)
	}
	if _, ok := b.PercentileRatio([]float64{0, 1}, ys, 50); ok {
		t.Error("ratio over a zero accepted")
	}
	// A few zeros below a positive percentile (a stream whose tokens all
	// arrived in one read has a TPOT of 0) leave the percentile, and its
	// resamples, positive: the interval exists.
	zeros := append([]float64{0, 0, 0, 0, 0}, xs[5:]...)
	if iv, ok := b.PercentileRatio(zeros, ys, 50); !ok || !(iv.Low > 1 && iv.High < 3) {
		t.Errorf("5 zeros in 200 values: %+v, %v", iv, ok)
	}
}

// The direct draw of a resample's percentile has the distribution of
// resampling n values and taking their percentile: compare the two by
// simulation on a small sample, where resampling is cheap.
func TestResampledPercentileDistribution(t *testing.T) {
	sorted := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	b := Bootstrap{Seed: 3}
	r := b.rng()
	const draws = 200000
	direct := map[float64]int{}
	naive := map[float64]int{}
	counts := make([]int, len(sorted))
	for range draws {
		direct[resampledPercentile(r, sorted, 90)]++
		clear(counts)
		for range len(sorted) {
			counts[r.IntN(len(sorted))]++
		}
		c := 0
		for j, k := range counts {
			c += k
			if c >= rankIndex(len(sorted), 90)+1 {
				naive[sorted[j]]++
				break
			}
		}
	}
	for _, v := range sorted {
		d, n := float64(direct[v])/draws, float64(naive[v])/draws
		if math.Abs(d-n) > 0.005 {
			t.Errorf("P(p90 of a resample = %v): direct %.4f, resampling %.4f", v, d, n)
		}
	}
	// The exact probability that the p90 (9th smallest of 10) of a
	// resample is the maximum: 1 − P(at most 8 draws below it) =
	// 1 − [0.9^10 + 10·0.1·0.9^9] = 0.2639.
	want := 1 - (math.Pow(0.9, 10) + 10*0.1*math.Pow(0.9, 9))
	if got := float64(direct[10]) / draws; math.Abs(got-want) > 0.005 {
		t.Errorf("P(max) = %.4f, want %.4f", got, want)
	}
}

// The merge over sorted samples gives the U of its definition (pairs with
// x > y, ties counting ½), counted pair by pair, on samples with many
// ties and without; and a NaN does not stop it.
func TestMannWhitneyUSortedCountsPairs(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 7))
	for trial := 0; trial < 200; trial++ {
		n1, n2 := 1+r.IntN(80), 1+r.IntN(80)
		levels := 2 + r.IntN(200) // few distinct values: many ties
		draw := func(n int) []float64 {
			v := make([]float64, n)
			for i := range v {
				v[i] = float64(r.IntN(levels)) / 4
			}
			return v
		}
		xs, ys := draw(n1), draw(n2)
		var want float64
		for _, x := range xs {
			for _, y := range ys {
				switch {
				case x > y:
					want++
				case x == y:
					want += 0.5
				}
			}
		}
		mw, ok := MannWhitneyUSorted(Sorted(xs), Sorted(ys))
		if !ok || mw.U != want || mw.N1 != n1 || mw.N2 != n2 {
			t.Fatalf("trial %d: U = %v (ok %v), want %v", trial, mw.U, ok, want)
		}
		if u, _ := MannWhitneyU(xs, ys); u != mw {
			t.Fatalf("trial %d: MannWhitneyU %+v, sorted %+v", trial, u, mw)
		}
	}
	if mw, ok := MannWhitneyU([]float64{math.NaN(), 1, 2}, []float64{3, math.NaN()}); !ok || mw.N1 != 3 || mw.N2 != 2 {
		t.Fatalf("with NaN: %+v %v", mw, ok)
	}
}

// The exact null distribution of U, counted by the recursion, against
// every arrangement of ranks enumerated, for all sizes up to 7 a side
// (unequal sizes included, both ways round); and far out in the tail of
// the largest exact size, where P(U = 0) = 1/C(100, 50): the tail is a
// sum of counts, not a difference of sums, so it keeps its precision.
func TestExactUDistribution(t *testing.T) {
	for n1 := 1; n1 <= 7; n1++ {
		for n2 := 1; n2 <= 7; n2++ {
			want := make([]float64, n1*n2+1)
			// Each subset of n1 of the n1+n2 ranks is one arrangement; U
			// counts the pairs (x, y) with x ranked above y.
			for set := 0; set < 1<<(n1+n2); set++ {
				if bits.OnesCount(uint(set)) != n1 {
					continue
				}
				u, below := 0, 0
				for r := 0; r < n1+n2; r++ {
					if set&(1<<r) != 0 {
						u += below
					} else {
						below++
					}
				}
				want[u]++
			}
			for v := 1; v < len(want); v++ {
				want[v] += want[v-1]
			}
			if got := uNullCumulative(n1, n2); !slices.Equal(got, want) {
				t.Fatalf("n = %d and %d: cumulative counts %v, want %v", n1, n2, got, want)
			}
		}
	}
	c := new(big.Float).SetInt(new(big.Int).Binomial(100, 50))
	want, _ := new(big.Float).Quo(big.NewFloat(2), c).Float64()
	if got := exactMannWhitneyP(0, 50, 50); math.Abs(got-want) > 1e-12*want {
		t.Errorf("P(U = 0) two-sided at 50 and 50: %g, want %g", got, want)
	}
	if got := exactMannWhitneyP(2500, 50, 50); math.Abs(got-want) > 1e-12*want {
		t.Errorf("P(U = 2500) two-sided at 50 and 50: %g, want %g", got, want)
	}
}
