package stats

import (
	"math"
	"testing"
)

func TestPercentileNearestRank(t *testing.T) {
	// 1..100: the nearest-rank p-th percentile of 1..100 is p itself.
	hundred := make([]float64, 100)
	for i := range hundred {
		hundred[i] = float64(i + 1)
	}
	tests := []struct {
		name string
		xs   []float64
		p    float64
		want float64
	}{
		{"p0 is the minimum", []float64{3, 1, 2}, 0, 1},
		{"p100 is the maximum", []float64{3, 1, 2}, 100, 3},
		{"p50 of an even count is the lower middle", []float64{1, 2, 3, 4}, 50, 2},
		{"p50 of an odd count is the middle", []float64{5, 1, 3}, 50, 3},
		{"p99 of 1..100", hundred, 99, 99},
		{"p90 of 1..100", hundred, 90, 90},
		{"p99 of 1..99 is the maximum", hundred[:99], 99, 99},
		{"p25 of 1..4", []float64{4, 3, 2, 1}, 25, 1},
		{"p26 of 1..4 rounds up", []float64{4, 3, 2, 1}, 26, 2},
		{"single value", []float64{7}, 99, 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Of(tt.xs, tt.p)[0]; got != tt.want {
				t.Errorf("percentile %v of %v = %v, want %v", tt.p, tt.xs, got, tt.want)
			}
		})
	}
	if !math.IsNaN(Percentile(nil, 50)) || !math.IsNaN(Percentile([]float64{1}, 101)) {
		t.Error("empty input or p outside 0..100 must give NaN")
	}
}

func TestPercentileExactRankNotRoundedUp(t *testing.T) {
	// p·n/100 is an integer in exact arithmetic for these; float error must
	// not push the rank to the next value.
	for _, n := range []int{100, 200, 1000, 3000} {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64(i + 1)
		}
		for _, p := range []float64{50, 90, 99, 99.9} {
			want := math.Ceil(p*float64(n)/100 - 1e-9)
			if got := Percentile(xs, p); got != want {
				t.Errorf("n=%d p=%v: got rank %v, want %v", n, p, got, want)
			}
		}
	}
}

func TestMinSamples(t *testing.T) {
	for _, tt := range []struct {
		p    float64
		want int
	}{{50, 2}, {90, 10}, {95, 20}, {99, 100}, {99.9, 1000}, {0, 1}} {
		if got := MinSamples(tt.p); got != tt.want {
			t.Errorf("MinSamples(%v) = %d, want %d", tt.p, got, tt.want)
		}
		// The definition: at n = MinSamples the percentile is not the max,
		// at n − 1 it is.
		if tt.p > 0 {
			n := tt.want
			xs := make([]float64, n)
			for i := range xs {
				xs[i] = float64(i)
			}
			if Percentile(xs, tt.p) == xs[n-1] {
				t.Errorf("p%v of %d values is the maximum", tt.p, n)
			}
			if n > 1 && Percentile(xs[:n-1], tt.p) != xs[n-2] {
				t.Errorf("p%v of %d values is not the maximum", tt.p, n-1)
			}
		}
	}
}

func TestStudentTQuantile(t *testing.T) {
	// Published two-sided 95% critical values t(0.975, df).
	for _, tt := range []struct{ df, want float64 }{
		{1, 12.706}, {2, 4.303}, {4, 2.776}, {9, 2.262}, {29, 2.045}, {1000, 1.962},
	} {
		if got := StudentTQuantile(0.975, tt.df); math.Abs(got-tt.want) > 0.001 {
			t.Errorf("t(0.975, %v) = %.4f, want %.3f", tt.df, got, tt.want)
		}
	}
	if got := StudentTQuantile(0.025, 4); math.Abs(got+2.776) > 0.001 {
		t.Errorf("lower tail t(0.025, 4) = %v", got)
	}
}

func TestTInterval(t *testing.T) {
	iv, ok := TInterval([]float64{10, 12, 14}, 0.95)
	if !ok {
		t.Fatal("no interval")
	}
	// mean 12, sd 2, se 2/sqrt(3), t(0.975,2)=4.3027
	half := 4.302653 * 2 / math.Sqrt(3)
	if iv.Estimate != 12 || math.Abs(iv.Low-(12-half)) > 1e-3 || math.Abs(iv.High-(12+half)) > 1e-3 || iv.N != 3 {
		t.Errorf("got %+v, want 12 ± %.4f", iv, half)
	}
	if _, ok := TInterval([]float64{1}, 0.95); ok {
		t.Error("one value must give no interval")
	}
}

func TestBootstrapDeterministicAndCovers(t *testing.T) {
	xs := make([]float64, 400)
	for i := range xs {
		xs[i] = float64(i % 97) // median 48
	}
	b := Bootstrap{Resamples: 500, Seed: 7, Confidence: 0.95}
	a1, ok := b.Percentile(xs, 50)
	if !ok {
		t.Fatal("no interval")
	}
	a2, _ := b.Percentile(xs, 50)
	if a1 != a2 {
		t.Errorf("same seed gave %+v and %+v", a1, a2)
	}
	if !(a1.Low <= a1.Estimate && a1.Estimate <= a1.High) || a1.High-a1.Low > 20 || a1.Estimate != Percentile(Sorted(xs), 50) {
		t.Errorf("interval %+v does not bracket the estimate tightly", a1)
	}
	c, _ := Bootstrap{Resamples: 500, Seed: 8, Confidence: 0.95}.Percentile(xs, 50)
	if c.Method == "" || c.N != 400 {
		t.Errorf("method/n missing: %+v", c)
	}
	// A constant sample has a zero-width interval.
	m, _ := b.Mean([]float64{5, 5, 5, 5})
	if m.Low != 5 || m.High != 5 || m.Estimate != 5 {
		t.Errorf("constant mean interval %+v", m)
	}
	if _, ok := b.Percentile([]float64{1}, 50); ok {
		t.Error("one value must give no interval")
	}
}

func TestBootstrapPercentileMatchesSortingResamples(t *testing.T) {
	// The counting shortcut must give what sorting each resample gives.
	xs := []float64{9, 1, 8, 2, 7, 3, 6, 4, 5, 0, 11, 13}
	b := Bootstrap{Resamples: 200, Seed: 3, Confidence: 0.9}
	got, _ := b.Percentile(xs, 75)
	r := b.rng()
	sorted := Sorted(xs)
	est := make([]float64, b.Resamples)
	for i := range est {
		res := make([]float64, len(xs))
		for j := range res {
			res[j] = sorted[r.IntN(len(xs))]
		}
		est[i] = Of(res, 75)[0]
	}
	lo, hi := b.bounds(est)
	if got.Low != lo || got.High != hi {
		t.Errorf("counting bootstrap [%v,%v], sorting bootstrap [%v,%v]", got.Low, got.High, lo, hi)
	}
}

func TestMedian(t *testing.T) {
	for _, tt := range []struct {
		in   []float64
		want float64
	}{
		{[]float64{3}, 3},
		{[]float64{1, 2, 10}, 2},
		{[]float64{1, 2, 4, 10}, 3},
		{[]float64{-1, 1}, 0},
		{[]float64{math.MaxFloat64, math.MaxFloat64}, math.MaxFloat64}, // no overflow in the mean
	} {
		if got := Median(tt.in); got != tt.want {
			t.Errorf("Median(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
	if got := Median(nil); !math.IsNaN(got) {
		t.Errorf("Median(nil) = %v, want NaN", got)
	}
}
