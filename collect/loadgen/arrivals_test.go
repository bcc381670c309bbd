package loadgen

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// gaps returns the first n gaps of s in seconds.
func gaps(t *testing.T, s Schedule, n int) []float64 {
	t.Helper()
	out := make([]float64, n)
	prev := time.Duration(0)
	for i := range n {
		off, ok := s.At(i)
		if !ok {
			t.Fatalf("schedule ended at %d", i)
		}
		if off < prev {
			t.Fatalf("offset %d (%v) before the one before (%v)", i, off, prev)
		}
		out[i] = (off - prev).Seconds()
		prev = off
	}
	return out
}

func meanVar(xs []float64) (float64, float64) {
	var m, v float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return m, v / float64(len(xs)-1)
}

// Gamma gaps have mean 1/rate and squared coefficient of variation
// 1/burstiness (vllm bench's definition): checked within five standard
// errors on 100,000 gaps, for bursty, Poisson and even arrivals.
func TestGammaMoments(t *testing.T) {
	const rate, n = 4.0, 100_000
	for _, b := range []float64{0.25, 0.5, 1, 2, 8} {
		xs := gaps(t, Gamma(rate, b, rand.New(rand.NewPCG(1, 2))), n)
		m, v := meanVar(xs)
		wantM, wantV := 1/rate, 1/(rate*rate*b)
		if se := math.Sqrt(wantV / n); math.Abs(m-wantM) > 5*se {
			t.Errorf("burstiness %v: mean gap %.5f, want %.5f ± %.5f", b, m, wantM, 5*se)
		}
		// The variance of a sample variance of a gamma: (μ4 − σ⁴)/n, μ4 = 3σ⁴(1+2/b).
		seV := math.Sqrt((3*wantV*wantV*(1+2/b) - wantV*wantV) / n)
		if math.Abs(v-wantV) > 5*seV {
			t.Errorf("burstiness %v: gap variance %.6f, want %.6f ± %.6f", b, v, wantV, 5*seV)
		}
	}
	// Infinite burstiness: constant gaps.
	for _, g := range gaps(t, Gamma(rate, math.Inf(1), rand.New(rand.NewPCG(1, 2))), 10) {
		if math.Abs(g-0.25) > 1e-9 {
			t.Fatalf("constant gap %v, want 0.25", g)
		}
	}
}

// Burstiness 1 is the Poisson process itself: the same seed sends the same
// schedule as --rate always did.
func TestGammaOneIsPoisson(t *testing.T) {
	a := gaps(t, Gamma(3, 1, rand.New(rand.NewPCG(7, 8))), 50)
	b := gaps(t, Poisson(3, rand.New(rand.NewPCG(7, 8))), 50)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("gap %d: %v against Poisson's %v", i, a[i], b[i])
		}
	}
}

// A ramp's rate moves from start to end over its requests: the mean gap of
// each tenth of a long even ramp (burstiness +Inf: no noise) is the
// inverse of the ramp's rate there, and the schedule ends after n.
func TestRamp(t *testing.T) {
	const n = 1000
	for _, kind := range []string{RampLinear, RampExponential} {
		s, err := Ramp(kind, 1, 10, n, math.Inf(1), rand.New(rand.NewPCG(1, 1)))
		if err != nil {
			t.Fatal(err)
		}
		xs := gaps(t, s, n)
		if _, ok := s.At(n); ok {
			t.Errorf("%s: schedule goes past %d requests", kind, n)
		}
		for _, i := range []int{0, n / 2, n - 1} {
			f := float64(i) / (n - 1)
			want := 1 + 9*f
			if kind == RampExponential {
				want = math.Pow(10, f)
			}
			if got := 1 / xs[i]; math.Abs(got-want) > 1e-6*want {
				t.Errorf("%s: rate at request %d = %v, want %v", kind, i, got, want)
			}
		}
	}
	// With Poisson gaps the rate is right on average: the last tenth of a
	// linear ramp from 2 to 20 averages 19.1 requests/s.
	s, _ := Ramp(RampLinear, 2, 20, 20_000, 1, rand.New(rand.NewPCG(3, 4)))
	xs := gaps(t, s, 20_000)
	m, _ := meanVar(xs[18_000:])
	if got := 1 / m; math.Abs(got-19.1)/19.1 > 0.05 {
		t.Errorf("last tenth of the ramp: %.2f requests/s, want about 19.1", got)
	}
	for _, bad := range []struct {
		kind       string
		start, end float64
		n          int
	}{{"sine", 1, 2, 10}, {RampLinear, 5, 1, 10}, {RampExponential, 0, 4, 10}, {RampLinear, 1, 2, 0}} {
		if _, err := Ramp(bad.kind, bad.start, bad.end, bad.n, 1, rand.New(rand.NewPCG(1, 1))); err == nil {
			t.Errorf("Ramp(%q, %v, %v, %d) accepted", bad.kind, bad.start, bad.end, bad.n)
		}
	}
}
