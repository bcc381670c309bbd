package render

import (
	"fmt"
	"math"

	"github.com/headroom-llm/headroom/analyze"
)

// shapeSentences are the seed's "four sentences explaining the shape of
// the throughput curve", written from the analyzer's knees and diagnosis:
// how throughput grows, where it flattens, its peak, and what TPOT did.
func shapeSentences(sw *analyze.SweepAnalysis) []string {
	k := sw.Knees
	var levels []analyze.LevelStats
	for _, l := range sw.Levels {
		if l.OutputTokPerS > 0 {
			levels = append(levels, l)
		}
	}
	if len(levels) == 0 {
		return []string{"The sweep measured no output throughput, so the curve has no shape to describe."}
	}
	label := func(li int) string {
		if l := levelByIndex(sw, li); l != nil {
			return loadName(l.Load)
		}
		return "?"
	}
	a := axisOf(sw)
	first, last := levels[0], levels[len(levels)-1]
	what := "concurrency"
	if a.rate {
		what = "the arrival rate"
	}
	var out []string
	// 1. How throughput grows.
	out = append(out, fmt.Sprintf("Output throughput goes from %s at %s to %s at %s: %s for %s %s.",
		tokPerS(first.OutputTokPerS), loadName(first.Load), tokPerS(last.OutputTokPerS), loadName(last.Load), times(last.OutputTokPerS/first.OutputTokPerS),
		times(a.x(last)/math.Max(a.x(first), 1e-9)), what))
	// 2. Where it flattens.
	switch k.Plateau {
	case analyze.PlateauSaturated:
		l := levelByIndex(sw, k.SaturatedLevel)
		out = append(out, fmt.Sprintf("From %s the server completes fewer requests than arrive (%s req/s of %s offered): the open loop is saturated, and a higher rate only grows the backlog.",
			loadName(l.Load), sig(l.RequestsPerS), sig(l.RateRPS)))
	case analyze.PlateauReached:
		out = append(out, fmt.Sprintf("It flattens after %s: from there every doubling of %s adds less than %s, and each extra request buys queueing delay, not throughput.",
			label(k.PlateauLevel), what, percent(k.PlateauGainPerDoubling)))
	case analyze.PlateauRising:
		out = append(out, fmt.Sprintf("It has not flattened by %s (the last step still gains at least %s per doubling, beyond the noise): the sweep stopped before the ceiling.",
			loadName(last.Load), percent(k.PlateauGainPerDoubling)))
	default:
		out = append(out, fmt.Sprintf("Whether it flattens by %s cannot be told from the noise: the last steps' intervals overlap.", loadName(last.Load)))
	}
	// 3. Peak and where it is reached.
	if k.PeakLevel >= 0 {
		out = append(out, fmt.Sprintf("The peak sustained throughput is %s, reached at %s; that load is the more useful of the two numbers.",
			tokPerS(k.PeakOutputTokPerS), label(k.PeakLevel)))
	} else {
		out = append(out, "No level sustained its throughput without errors, so there is no peak to quote.")
	}
	// 4. TPOT, and what the diagnosis says bent it.
	switch {
	case k.BaselineLevel < 0:
		out = append(out, "TPOT was not measured, so the flat region cannot be placed.")
	case k.TPOTKneeLevel >= 0:
		out = append(out, fmt.Sprintf("TPOT stays flat up to %s (at most %s its %s value of %s) and clears %s at %s; %s.",
			label(k.FlatToLevel), times(k.FlatTPOTMaxRatio), label(k.BaselineLevel), dur(k.BaselineTPOTP50S), times(k.TPOTKneeFactor),
			label(k.TPOTKneeLevel), kneeCause(sw.Diagnosis)))
	default:
		out = append(out, fmt.Sprintf("TPOT never clears %s its %s value of %s (at most %s up to %s): extra requests cost almost no per-token latency throughout.",
			times(k.TPOTKneeFactor), label(k.BaselineLevel), dur(k.BaselineTPOTP50S), times(k.FlatTPOTMaxRatio), label(k.FlatToLevel)))
	}
	return out
}

// kneeCause says what bent TPOT, as the diagnosis's knee checks found it.
func kneeCause(d analyze.Diagnosis) string {
	var compute, overhead analyze.Finding
	for _, f := range d.Checks {
		switch f.Check {
		case analyze.WallCompute:
			compute = f
		case analyze.WallEngineOverhead:
			overhead = f
		}
	}
	switch {
	case compute.Status == analyze.StatusHit && compute.Reason == analyze.ReasonSaturated:
		return "the accelerator was saturated there: the compute wall"
	case overhead.Status == analyze.StatusHit && overhead.Reason == analyze.ReasonBelowRidge:
		return "but the knee lies far below the probe's ridge: the engine's per-step work, not the silicon, set the pace"
	case overhead.Status == analyze.StatusHit && overhead.Reason == analyze.ReasonGPUNotBusy:
		return "but the GPU idled there: the engine's host side, not the silicon, set the pace"
	case overhead.Status == analyze.StatusHit:
		return "but the server's CPU was not saturated there: the engine's overhead set the pace"
	case compute.Reason == analyze.ReasonKneeIsKV:
		return "KV-cache pressure there explains the bend"
	case compute.Reason == analyze.ReasonKneeIsClient:
		return "but the load generator was saturated by then, so the bend may be the client's"
	case compute.Status == analyze.StatusUnknown:
		return "the run lacks " + measures(compute.Missing) + " to say why"
	}
	return "the diagnosis below says why"
}
