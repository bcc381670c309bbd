package sweep

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/headroom-llm/headroom/rundir"
)

// Dist is a distribution of token counts for prompts or outputs.
type Dist struct {
	Kind   string  // DistFixed, DistUniform, DistNormal or DistLognormal
	Mean   float64 // tokens
	StdDev float64 // tokens (normal, lognormal)
	Min    int     // lower bound (uniform: the range; others: clamp); 0 means 1
	Max    int     // upper bound; 0 means none (uniform: required)
}

// Distribution kinds.
const (
	DistFixed     = "fixed"
	DistUniform   = "uniform"
	DistNormal    = "normal"
	DistLognormal = "lognormal"
)

// Fixed is a distribution that always gives n.
func Fixed(n int) Dist { return Dist{Kind: DistFixed, Mean: float64(n)} }

// MaxTokens bounds every length a sweep asks for: more than any model's
// context, and small enough that nothing sized from it can exhaust memory.
const MaxTokens = 1 << 24

// Validate checks the parameters and fills derived ones (a uniform range's
// mean, a missing lower bound).
func (d *Dist) Validate() error {
	if d.Mean > MaxTokens || d.Max > MaxTokens || d.Min > MaxTokens || d.StdDev > MaxTokens {
		return fmt.Errorf("lengths of more than %d tokens (got mean %v, min %d, max %d): no model takes that many", MaxTokens, d.Mean, d.Min, d.Max)
	}
	if d.Kind == "" {
		d.Kind = DistFixed
	}
	if d.Min <= 0 {
		d.Min = 1
	}
	switch d.Kind {
	case DistFixed:
		if d.Mean < 1 {
			return fmt.Errorf("fixed length %v: want at least 1 token", d.Mean)
		}
	case DistUniform:
		if d.Max == 0 && d.Mean > 0 && d.StdDev > 0 {
			// a uniform distribution with this mean and standard deviation
			half := d.StdDev * math.Sqrt(3)
			d.Min, d.Max = max(1, int(math.Round(d.Mean-half))), int(math.Round(d.Mean+half))
		}
		if d.Max < d.Min {
			return fmt.Errorf("uniform lengths need min <= max (got %d..%d)", d.Min, d.Max)
		}
		d.Mean = float64(d.Min+d.Max) / 2
		d.StdDev = float64(d.Max-d.Min+1) / math.Sqrt(12)
	case DistNormal, DistLognormal:
		if d.Mean < 1 || d.StdDev <= 0 {
			return fmt.Errorf("%s lengths need a mean >= 1 and a standard deviation > 0 (got %v, %v)", d.Kind, d.Mean, d.StdDev)
		}
	default:
		return fmt.Errorf("unknown length distribution %q (want fixed, uniform, normal or lognormal)", d.Kind)
	}
	if d.Max > 0 && d.Max < d.Min {
		return fmt.Errorf("%s lengths: max %d below min %d", d.Kind, d.Max, d.Min)
	}
	return nil
}

// Sample draws one length.
func (d Dist) Sample(rng *rand.Rand) int {
	var v float64
	switch d.Kind {
	case DistUniform:
		return d.Min + rng.IntN(d.Max-d.Min+1)
	case DistNormal:
		v = d.Mean + d.StdDev*rng.NormFloat64()
	case DistLognormal:
		// the lognormal whose mean and standard deviation are Mean and StdDev
		s2 := math.Log1p(d.StdDev * d.StdDev / (d.Mean * d.Mean))
		v = math.Exp(math.Log(d.Mean) - s2/2 + math.Sqrt(s2)*rng.NormFloat64())
	default:
		v = d.Mean
	}
	n := max(int(math.Round(min(v, MaxTokens))), d.Min)
	if d.Max > 0 {
		n = min(n, d.Max)
	}
	return min(n, MaxTokens)
}

// upper is the largest length the distribution asks for when it has a
// bound, else its mean (normal and lognormal tails are unbounded).
func (d Dist) upper() int {
	if d.Max > 0 {
		return d.Max
	}
	return int(math.Ceil(d.Mean))
}

func (d Dist) manifest() rundir.Dist {
	return rundir.Dist{Kind: d.Kind, Mean: d.Mean, StdDev: d.StdDev, Min: d.Min, Max: d.Max}
}
