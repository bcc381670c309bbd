package analyze

import (
	"fmt"
	"math"
)

// findKnees finds the TPOT knee, the flat region, the throughput plateau
// and the peak over levels sorted by concurrency.
func findKnees(levels []LevelStats, set Settings) Knees {
	k := Knees{TPOTKneeFactor: set.TPOTKneeFactor, PlateauGainPerDoubling: set.PlateauGainPerDoubling}
	var tp []LevelStats // levels with a p50 TPOT
	for _, l := range levels {
		if l.TPOT != nil && l.TPOT.P50S > 0 {
			tp = append(tp, l)
		}
	}
	if len(tp) > 0 {
		base := tp[0]
		k.BaselineConcurrency, k.BaselineTPOTP50S = base.Concurrency, base.TPOT.P50S
		if base.Concurrency != 1 {
			k.Notes = append(k.Notes, fmt.Sprintf("the sweep has no concurrency-1 level with a TPOT; TPOT is compared with its lowest level, c=%d", base.Concurrency))
		}
		k.FlatFromConcurrency = base.Concurrency
		for _, l := range tp {
			r := l.TPOT.P50S / base.TPOT.P50S
			if r > set.TPOTKneeFactor {
				k.TPOTKneeConcurrency = l.Concurrency
				break
			}
			k.FlatToConcurrency = l.Concurrency
			k.FlatTPOTMaxRatio = math.Max(k.FlatTPOTMaxRatio, r)
		}
		if k.TPOTKneeConcurrency == 0 {
			k.Notes = append(k.Notes, fmt.Sprintf("p50 TPOT never exceeded %.1f× its c=%d value: the sweep did not reach the knee; raise the levels", set.TPOTKneeFactor, base.Concurrency))
		}
	}

	// Throughput steps, plateau and peak over levels with a throughput.
	var th []LevelStats
	for _, l := range levels {
		if l.OutputTokPerS > 0 && l.Concurrency > 0 {
			th = append(th, l)
		}
	}
	for i := 1; i < len(th); i++ {
		k.Steps = append(k.Steps, ThroughputStep{
			FromConcurrency: th[i-1].Concurrency, ToConcurrency: th[i].Concurrency,
			GainPerDoubling: gainPerDoubling(th[i-1], th[i]),
		})
	}
	// The plateau is the first level from which every later level gains
	// less than the threshold per doubling: robust to one noisy level.
	for i := 0; i+1 < len(th) && k.PlateauConcurrency == 0; i++ {
		flat := true
		for j := i + 1; j < len(th); j++ {
			if gainPerDoubling(th[i], th[j]) >= set.PlateauGainPerDoubling {
				flat = false
				break
			}
		}
		if flat {
			k.PlateauConcurrency = th[i].Concurrency
		}
	}
	if len(th) > 1 && k.PlateauConcurrency == 0 {
		k.Notes = append(k.Notes, fmt.Sprintf("throughput was still gaining at least %.0f%% per doubling at the last level: no plateau reached", 100*set.PlateauGainPerDoubling))
	}
	var rawPeak LevelStats
	for _, l := range th {
		if l.OutputTokPerS > rawPeak.OutputTokPerS {
			rawPeak = l
		}
		if !l.Complete || l.ErrorFraction > set.MaxErrorFraction {
			continue
		}
		if l.OutputTokPerS > k.PeakOutputTokPerS {
			k.PeakOutputTokPerS, k.PeakConcurrency = l.OutputTokPerS, l.Concurrency
		}
	}
	if rawPeak.Concurrency != 0 && rawPeak.Concurrency != k.PeakConcurrency {
		k.Notes = append(k.Notes, fmt.Sprintf("c=%d reached %.0f tok/s but is not sustained (%s); the peak is taken over sustained levels only",
			rawPeak.Concurrency, rawPeak.OutputTokPerS, unsustainedReason(rawPeak, set)))
	}
	return k
}

func unsustainedReason(l LevelStats, set Settings) string {
	if !l.Complete {
		return "the level did not complete"
	}
	return fmt.Sprintf("%.1f%% of its requests failed, above the %.1f%% limit", 100*l.ErrorFraction, 100*set.MaxErrorFraction)
}

// gainPerDoubling is the throughput gain from a to b expressed per
// doubling of concurrency: (Tb/Ta)^(1/log2(cb/ca)) − 1.
func gainPerDoubling(a, b LevelStats) float64 {
	d := math.Log2(float64(b.Concurrency) / float64(a.Concurrency))
	if d <= 0 || a.OutputTokPerS <= 0 {
		return 0
	}
	return math.Pow(b.OutputTokPerS/a.OutputTokPerS, 1/d) - 1
}

// recommend sets the production concurrency cap: the end of the flat-TPOT
// region (the seed's FAQ), lowered to the SLO operating point when the SLO
// fails earlier.
func recommend(k *Knees, g *Goodput) {
	switch {
	case k.FlatToConcurrency == 0:
		k.RecommendedReason = "no TPOT measured: no recommendation"
		return
	case k.TPOTKneeConcurrency == 0:
		k.RecommendedConcurrency = k.FlatToConcurrency
		k.RecommendedReason = fmt.Sprintf("TPOT stayed flat up to the highest level, c=%d; the real cap may be higher (the sweep did not find the knee)", k.FlatToConcurrency)
	default:
		k.RecommendedConcurrency = k.FlatToConcurrency
		k.RecommendedReason = fmt.Sprintf("the end of the flat-TPOT region: p50 TPOT stays within %.1f× of c=%d up to c=%d and exceeds it at c=%d",
			k.TPOTKneeFactor, k.BaselineConcurrency, k.FlatToConcurrency, k.TPOTKneeConcurrency)
	}
	if g == nil {
		return
	}
	if g.OperatingConcurrency == 0 {
		k.RecommendedConcurrency = 0
		k.RecommendedReason = fmt.Sprintf("no level meets the SLO %s, not even the first", g.SLO.Spec)
		return
	}
	if g.OperatingConcurrency < k.RecommendedConcurrency {
		k.RecommendedReason = fmt.Sprintf("the SLO %s holds only up to c=%d, below the flat-TPOT end c=%d", g.SLO.Spec, g.OperatingConcurrency, k.RecommendedConcurrency)
		k.RecommendedConcurrency = g.OperatingConcurrency
	}
}
