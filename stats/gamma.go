package stats

import (
	"math"
	"math/rand/v2"
)

// Gamma draws from the gamma distribution of the given shape and scale 1,
// by Marsaglia and Tsang's method (ACM TOMS 26(3), 2000); a shape below 1
// is boosted from shape+1 by U^(1/shape), as they describe. The load
// generator's gamma arrivals and the bootstrap's beta draws both use it.
func Gamma(r *rand.Rand, shape float64) float64 {
	if shape < 1 {
		return Gamma(r, shape+1) * math.Pow(r.Float64(), 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
