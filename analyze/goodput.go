package analyze

import (
	"math"

	"github.com/headroom-llm/headroom/stats"
)

// goodput judges each level against the SLO: a level passes when every
// bound holds at the level's percentile; per request, the fraction of
// measured requests meeting every bound with their own values. TTFT is
// taken from the intended send time where the run has it (open loop), so
// a request's wait for a free slot counts against the SLO.
func goodput(levels []LevelStats, timings map[int][]requestTiming, slo *SLO, source string) *Goodput {
	g := &Goodput{SLO: *slo, SLOSource: source, OperatingLevel: -1, FirstFailingLevel: -1, TTFTFrom: TTFTFromSend}
	for _, l := range levels {
		if l.TTFTFromIntended != nil {
			g.TTFTFrom = TTFTFromIntended
		}
	}
	failed := false
	for _, l := range levels {
		lg := LevelGoodput{LevelIndex: l.LevelIndex, Concurrency: l.Concurrency, RateRPS: l.RateRPS, Known: true, Pass: true}
		for _, b := range slo.Bounds {
			lat := judgedLatency(l, b.Metric)
			v, ok := lat.Quantile(b.Percentile)
			bh := BoundHit{Metric: b.Metric, Percentile: b.Percentile, ValueS: v, MaxS: b.MaxS, Known: ok, Reliable: ok && lat.N >= stats.MinSamples(b.Percentile)}
			lg.Bounds = append(lg.Bounds, bh)
			if !ok {
				lg.Known, lg.Pass = false, false
				continue
			}
			if v > b.MaxS {
				lg.Pass = false
			}
		}
		if !l.Sustained {
			// A level that lost requests or did not finish cannot be run at.
			lg.Pass, lg.Unsustained = false, true
		}
		if openLoopSaturated(l) {
			// Arrivals outran completions: the backlog grows for as long as
			// the rate lasts, whatever this level's finite run measured.
			lg.Pass, lg.Saturated = false, true
		}
		if lg.Pass {
			lg.GoodputOutputTokPerS = l.OutputTokPerS
		}
		if ts, ok := timings[l.LevelIndex]; ok && l.Requests > 0 && (l.ITL != nil || !slo.Has("itl")) {
			lg.PerRequestKnown = true
			good, goodTokens := 0, int64(0)
			for _, t := range ts {
				if t.ok && requestMeets(t, slo) {
					good++
					goodTokens += t.outputTokens
				}
			}
			lg.RequestsMeetingFraction = float64(good) / float64(l.Requests)
			if l.WindowS > 0 {
				lg.MeetingOutputTokPerS = float64(goodTokens) / l.WindowS
			}
		}
		if !lg.Pass && !failed {
			failed = true
			g.FirstFailingConcurrency, g.FirstFailingLevel = l.Concurrency, l.LevelIndex
		}
		if lg.Pass && !failed {
			g.OperatingConcurrency, g.OperatingLevel, g.OperatingRateRPS, g.OperatingOutputTokPerS = l.Concurrency, l.LevelIndex, l.RateRPS, l.OutputTokPerS
		}
		if lg.Pass && failed {
			g.PassAgainLevels = append(g.PassAgainLevels, l.LevelIndex)
		}
		g.Levels = append(g.Levels, lg)
	}
	return g
}

// operatingPoint is the load to run at, from the goodput: the largest
// level inside the SLO with every lower level inside it too, on the load
// axis, and how far TPOT stays flat.
func operatingPoint(levels []LevelStats, g *Goodput, k Knees) OperatingPoint {
	op := OperatingPoint{At: noPoint(k.Axis), FirstFailing: noPoint(k.Axis), FreeTo: noPoint(k.Axis), Reliable: true}
	if p := levelPos(levels, k.FlatToLevel); p >= 0 {
		op.FreeTo = pointOf(levels[p], k.Axis)
	}
	if g == nil {
		return op
	}
	op.SLO, op.SLOSource, op.TTFTFrom = g.SLO, g.SLOSource, g.TTFTFrom
	byLevel := map[int]LevelGoodput{}
	for _, lg := range g.Levels {
		byLevel[lg.LevelIndex] = lg
	}
	if p := levelPos(levels, g.OperatingLevel); p >= 0 {
		op.At = pointOf(levels[p], k.Axis)
		op.OutputTokPerS = levels[p].OutputTokPerS
		for _, b := range byLevel[g.OperatingLevel].Bounds {
			op.Reliable = op.Reliable && b.Reliable
		}
	}
	if p := levelPos(levels, g.FirstFailingLevel); p >= 0 {
		op.FirstFailing = pointOf(levels[p], k.Axis)
		for _, b := range byLevel[g.FirstFailingLevel].Bounds {
			if !b.Known || b.ValueS > b.MaxS {
				op.Missed = append(op.Missed, b)
				op.Reliable = op.Reliable && b.Reliable
			}
		}
	} else if op.At.Valid() {
		op.Capped = true
	}
	return op
}

// judgedLatency is the latency an SLO bound on metric is judged on: TTFT
// and E2E from the intended send time when the run has it.
func judgedLatency(l LevelStats, metric string) *Latency {
	switch metric {
	case "ttft":
		if l.TTFTFromIntended != nil {
			return l.TTFTFromIntended
		}
		return l.TTFT
	case "tpot":
		return l.TPOT
	case "itl":
		return l.ITL
	case "e2e":
		if l.E2EFromIntended != nil {
			return l.E2EFromIntended
		}
		return l.E2E
	}
	return nil
}

// requestMeets checks one request against every bound: its TTFT and E2E
// (from the intended send time), TPOT, and for an ITL bound the bound's
// percentile of its own chunk gaps (the caller checks that chunk times were
// recorded). A value the request lacks fails the bound.
func requestMeets(t requestTiming, slo *SLO) bool {
	for _, b := range slo.Bounds {
		v := math.NaN()
		switch b.Metric {
		case "ttft":
			v = t.ttftS + t.slotWaitS
		case "tpot":
			v = t.tpotS
		case "e2e":
			v = t.e2eS + t.slotWaitS
		case "itl":
			v = 0 // a single chunk has no gap to violate the bound
			if len(t.itlS) > 0 {
				v = stats.Of(t.itlS, b.Percentile)[0]
			}
		}
		if math.IsNaN(v) || v > b.MaxS {
			return false
		}
	}
	return true
}

// wallBeyond is the wall that holds the load at the operating point: of
// the verdict's walls (primary and secondary), the highest on the load
// axis at or below the first level that fails the SLO (the primary on a
// tie). That level failed with it in force, so its fixes are what lets the
// load go further. The primary wall can sit lower and hold nothing back
// that the SLO judges (TPOT bent but inside its bound, say), and then its
// fixes would not move the operating point. "" when every level meets the
// SLO, or no wall is at or below the first failing level.
func wallBeyond(d Diagnosis, op OperatingPoint) string {
	if !op.FirstFailing.Valid() {
		return ""
	}
	beyond, at := "", -1.0
	for _, w := range d.Walls() {
		switch w.Kind {
		case WallNone, WallInconclusive, "":
			continue
		}
		if v := w.At.Value(); w.At.Valid() && v <= op.FirstFailing.Value() && v > at {
			beyond, at = w.Kind, v
		}
	}
	return beyond
}
