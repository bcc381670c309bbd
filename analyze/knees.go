package analyze

import (
	"fmt"
	"math"
)

// Load axes.
const (
	AxisConcurrency = "concurrency" // closed loop
	AxisRate        = "rate_rps"    // open loop
)

// loadValue is a level's position on the load axis: its concurrency in a
// closed loop, its arrival rate in an open loop.
func loadValue(l LevelStats, axis string) float64 {
	if axis == AxisRate {
		return l.RateRPS
	}
	return float64(l.Concurrency)
}

// loadLabel names a level in sentences: "c=8" or "4 req/s".
func loadLabel(l LevelStats, axis string) string {
	if axis == AxisRate {
		return fmt.Sprintf("%.3g req/s", l.RateRPS)
	}
	return fmt.Sprintf("c=%d", l.Concurrency)
}

// levelPos is the position of the level with the given LevelIndex in
// levels (sorted by load); -1 when absent.
func levelPos(levels []LevelStats, levelIndex int) int {
	if levelIndex < 0 {
		return -1
	}
	for i, l := range levels {
		if l.LevelIndex == levelIndex {
			return i
		}
	}
	return -1
}

// findKnees finds the TPOT knee, the flat region, the throughput plateau
// and the peak over levels sorted by load.
func findKnees(levels []LevelStats, axis string, set Settings) Knees {
	k := Knees{Axis: axis, TPOTKneeFactor: set.TPOTKneeFactor, PlateauGainPerDoubling: set.PlateauGainPerDoubling,
		BaselineLevel: -1, TPOTKneeLevel: -1, FlatToLevel: -1, PlateauLevel: -1, PeakLevel: -1, RecommendedLevel: -1}
	var tp []LevelStats // levels with a p50 TPOT
	for _, l := range levels {
		if l.TPOT != nil && l.TPOT.P50S > 0 {
			tp = append(tp, l)
		}
	}
	if len(tp) > 0 {
		base := tp[0]
		k.BaselineLevel, k.BaselineConcurrency, k.BaselineTPOTP50S = base.LevelIndex, base.Concurrency, base.TPOT.P50S
		if axis == AxisRate {
			k.Notes = append(k.Notes, fmt.Sprintf("open loop: TPOT is compared with the lowest arrival rate, %s", base.Load))
		} else if base.Concurrency != 1 {
			k.Notes = append(k.Notes, fmt.Sprintf("the sweep has no concurrency-1 level with a TPOT; TPOT is compared with its lowest level, %s", base.Load))
		}
		k.FlatFromConcurrency = base.Concurrency
		for _, l := range tp {
			r := l.TPOT.P50S / base.TPOT.P50S
			if r > set.TPOTKneeFactor {
				k.TPOTKneeLevel, k.TPOTKneeConcurrency, k.TPOTKneeRateRPS = l.LevelIndex, l.Concurrency, l.RateRPS
				break
			}
			k.FlatToLevel, k.FlatToConcurrency, k.FlatToRateRPS = l.LevelIndex, l.Concurrency, l.RateRPS
			k.FlatTPOTMaxRatio = math.Max(k.FlatTPOTMaxRatio, r)
		}
		if k.TPOTKneeLevel < 0 {
			k.Notes = append(k.Notes, fmt.Sprintf("p50 TPOT never exceeded %.1f× its %s value: the sweep did not reach the knee; raise the levels", set.TPOTKneeFactor, base.Load))
		}
	}

	// Throughput steps, plateau and peak over levels with a throughput.
	var th []LevelStats
	for _, l := range levels {
		if l.OutputTokPerS > 0 && loadValue(l, axis) > 0 {
			th = append(th, l)
		}
	}
	for i := 1; i < len(th); i++ {
		k.Steps = append(k.Steps, ThroughputStep{
			FromConcurrency: th[i-1].Concurrency, ToConcurrency: th[i].Concurrency,
			FromRateRPS: th[i-1].RateRPS, ToRateRPS: th[i].RateRPS,
			GainPerDoubling: gainPerDoubling(th[i-1], th[i], axis),
		})
	}
	// The plateau is the first level from which every later level gains
	// less than the threshold per doubling: robust to one noisy level.
	for i := 0; i+1 < len(th) && k.PlateauLevel < 0; i++ {
		flat := true
		for j := i + 1; j < len(th); j++ {
			if gainPerDoubling(th[i], th[j], axis) >= set.PlateauGainPerDoubling {
				flat = false
				break
			}
		}
		if flat {
			k.PlateauLevel, k.PlateauConcurrency, k.PlateauRateRPS = th[i].LevelIndex, th[i].Concurrency, th[i].RateRPS
		}
	}
	if len(th) > 1 && k.PlateauLevel < 0 {
		k.Notes = append(k.Notes, fmt.Sprintf("throughput was still gaining at least %.0f%% per doubling at the last level: no plateau reached", 100*set.PlateauGainPerDoubling))
	}
	raw := -1
	for i, l := range th {
		if raw < 0 || l.OutputTokPerS > th[raw].OutputTokPerS {
			raw = i
		}
		if !l.Sustained {
			continue
		}
		if l.OutputTokPerS > k.PeakOutputTokPerS {
			k.PeakOutputTokPerS, k.PeakLevel, k.PeakConcurrency, k.PeakRateRPS = l.OutputTokPerS, l.LevelIndex, l.Concurrency, l.RateRPS
		}
	}
	if raw >= 0 && th[raw].LevelIndex != k.PeakLevel {
		k.Notes = append(k.Notes, fmt.Sprintf("%s reached %.0f tok/s but is not sustained (%s); the peak is taken over sustained levels only",
			th[raw].Load, th[raw].OutputTokPerS, unsustainedReason(th[raw], set)))
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
// doubling of the load: (Tb/Ta)^(1/log2(xb/xa)) − 1.
func gainPerDoubling(a, b LevelStats, axis string) float64 {
	d := math.Log2(loadValue(b, axis) / loadValue(a, axis))
	if d <= 0 || a.OutputTokPerS <= 0 {
		return 0
	}
	return math.Pow(b.OutputTokPerS/a.OutputTokPerS, 1/d) - 1
}

// recommend sets the production cap: the end of the flat-TPOT region (the
// seed's FAQ), lowered to the SLO operating point when the SLO fails
// earlier. In an open loop the cap is an arrival rate (admission control).
func recommend(k *Knees, levels []LevelStats, g *Goodput) {
	set := func(li int) {
		p := levelPos(levels, li)
		if p < 0 {
			k.RecommendedLevel, k.RecommendedConcurrency, k.RecommendedRateRPS = -1, 0, 0
			return
		}
		l := levels[p]
		k.RecommendedLevel, k.RecommendedConcurrency, k.RecommendedRateRPS = l.LevelIndex, l.Concurrency, l.RateRPS
	}
	label := func(li int) string {
		if p := levelPos(levels, li); p >= 0 {
			return levels[p].Load
		}
		return "?"
	}
	switch {
	case k.FlatToLevel < 0:
		k.RecommendedReason = "no TPOT measured: no recommendation"
		return
	case k.TPOTKneeLevel < 0:
		set(k.FlatToLevel)
		k.RecommendedReason = fmt.Sprintf("TPOT stayed flat up to the highest level, %s; the real cap may be higher (the sweep did not find the knee)", label(k.FlatToLevel))
	default:
		set(k.FlatToLevel)
		k.RecommendedReason = fmt.Sprintf("the end of the flat-TPOT region: p50 TPOT stays within %.1f× of %s up to %s and exceeds it at %s",
			k.TPOTKneeFactor, label(k.BaselineLevel), label(k.FlatToLevel), label(k.TPOTKneeLevel))
	}
	if g == nil {
		return
	}
	if g.OperatingLevel < 0 {
		set(-1)
		k.RecommendedReason = fmt.Sprintf("no level meets the SLO %s, not even the first", g.SLO.Spec)
		return
	}
	if levelPos(levels, g.OperatingLevel) < levelPos(levels, k.RecommendedLevel) {
		k.RecommendedReason = fmt.Sprintf("the SLO %s holds only up to %s, below the flat-TPOT end %s", g.SLO.Spec, label(g.OperatingLevel), label(k.RecommendedLevel))
		set(g.OperatingLevel)
	}
}
