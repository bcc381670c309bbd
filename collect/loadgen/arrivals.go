package loadgen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/headroom-llm/headroom/stats"
)

// Gamma is a renewal arrival process of rate requests per second whose
// gaps follow a gamma distribution of shape burstiness and mean 1/rate (the
// definition of vllm bench serve's --burstiness): 1 is a Poisson process
// (exactly Poisson's sequence for the same rng), below 1 burstier, above 1
// more even; +Inf gives constant gaps of 1/rate.
func Gamma(rate, burstiness float64, rng *rand.Rand) Schedule {
	if burstiness == 1 {
		return Poisson(rate, rng)
	}
	return &renewal{gap: func(int) float64 { return gammaGap(rng, rate, burstiness) }}
}

// Ramp is an arrival process whose rate moves from start to end requests
// per second over n requests, as vllm bench serve's --ramp-up-strategy
// does: request i's gap is drawn (gamma of shape burstiness, 1 = Poisson)
// at the rate start + (end−start)·i/(n−1) ("linear") or
// start·(end/start)^(i/(n−1)) ("exponential"). It ends after n requests.
func Ramp(kind string, start, end float64, n int, burstiness float64, rng *rand.Rand) (Schedule, error) {
	switch {
	case kind != RampLinear && kind != RampExponential:
		return nil, fmt.Errorf("ramp %q: want %s or %s", kind, RampLinear, RampExponential)
	case !(start >= 0) || !(end >= start) || math.IsInf(end, 0):
		return nil, fmt.Errorf("ramp from %v to %v requests/s: want 0 <= start <= end", start, end)
	case kind == RampExponential && start == 0:
		return nil, fmt.Errorf("an exponential ramp cannot start at 0 requests/s")
	case n < 1:
		return nil, fmt.Errorf("ramp over %d requests: want at least 1", n)
	case !(burstiness > 0):
		return nil, fmt.Errorf("burstiness %v: want a positive number", burstiness)
	}
	rateAt := func(i int) float64 {
		f := float64(i) / float64(max(n-1, 1))
		if kind == RampExponential {
			return start * math.Pow(end/start, f)
		}
		return start + (end-start)*f
	}
	return &renewal{n: n, gap: func(i int) float64 {
		r := rateAt(i)
		if r <= 0 {
			// vllm bench refuses a rate of 0; the first request of a linear
			// ramp from 0 is sent at once instead.
			return 0
		}
		return gammaGap(rng, r, burstiness)
	}}, nil
}

// Ramp kinds.
const (
	RampLinear      = "linear"
	RampExponential = "exponential"
)

// renewal is a schedule of independent gaps, gap(i) seconds before request i.
type renewal struct {
	gap  func(i int) float64
	n    int // 0: no end
	t    float64
	offs []time.Duration
}

func (r *renewal) At(seq int) (time.Duration, bool) {
	if seq < 0 || (r.n > 0 && seq >= r.n) {
		return 0, false
	}
	for len(r.offs) <= seq {
		r.t += r.gap(len(r.offs))
		r.offs = append(r.offs, time.Duration(r.t*float64(time.Second)))
	}
	return r.offs[seq], true
}

// gammaGap draws a gap of mean 1/rate from a gamma distribution of the
// given shape (scale 1/(rate·shape)); an infinite shape is the mean itself.
func gammaGap(rng *rand.Rand, rate, shape float64) float64 {
	if math.IsInf(shape, 1) {
		return 1 / rate
	}
	return stats.Gamma(rng, shape) / (rate * shape)
}
