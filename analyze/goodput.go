package analyze

import (
	"fmt"
	"math"

	"github.com/headroom-llm/headroom/stats"
)

// goodput judges each level against the SLO: a level passes when every
// bound holds at the level's percentile; per request, the fraction of
// measured requests meeting every bound with their own values.
func goodput(levels []LevelStats, timings map[int][]requestTiming, slo *SLO) *Goodput {
	g := &Goodput{SLO: *slo, OperatingLevel: -1, FirstFailingLevel: -1}
	failed := false
	var firstFail string
	for _, l := range levels {
		lg := LevelGoodput{LevelIndex: l.LevelIndex, Concurrency: l.Concurrency, RateRPS: l.RateRPS, Known: true, Pass: true}
		for _, b := range slo.Bounds {
			v, ok := levelMetric(l, b.Metric).Quantile(b.Percentile)
			if !ok {
				lg.Known, lg.Pass = false, false
				lg.Failed = append(lg.Failed, fmt.Sprintf("%s p%s not available", b.Metric, formatPct(b.Percentile)))
				continue
			}
			if v > b.MaxS {
				lg.Pass = false
				lg.Failed = append(lg.Failed, fmt.Sprintf("%s p%s %s > %s", b.Metric, formatPct(b.Percentile), fmtSeconds(v), fmtSeconds(b.MaxS)))
			}
		}
		if lg.Pass {
			lg.GoodputOutputTokPerS = l.OutputTokPerS
		}
		if ts, ok := timings[l.LevelIndex]; ok && l.Requests > 0 && (l.ITL != nil || !slo.has("itl")) {
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
			g.FirstFailingConcurrency, g.FirstFailingLevel, firstFail = l.Concurrency, l.LevelIndex, l.Load
		}
		if lg.Pass && !failed {
			g.OperatingConcurrency, g.OperatingLevel, g.OperatingRateRPS, g.OperatingOutputTokPerS = l.Concurrency, l.LevelIndex, l.RateRPS, l.OutputTokPerS
		}
		if lg.Pass && failed {
			g.Notes = append(g.Notes, fmt.Sprintf("%s meets the SLO again after %s failed; the operating point stays below the first failure", l.Load, firstFail))
		}
		g.Levels = append(g.Levels, lg)
	}
	return g
}

func levelMetric(l LevelStats, metric string) *Latency {
	switch metric {
	case "ttft":
		return l.TTFT
	case "tpot":
		return l.TPOT
	case "itl":
		return l.ITL
	case "e2e":
		return l.E2E
	}
	return nil
}

// requestMeets checks one request against every bound: its TTFT, TPOT and
// E2E, and for an ITL bound the bound's percentile of its own chunk gaps
// (the caller checks that chunk times were recorded).
// A value the request lacks fails the bound.
func requestMeets(t requestTiming, slo *SLO) bool {
	for _, b := range slo.Bounds {
		v := math.NaN()
		switch b.Metric {
		case "ttft":
			v = t.ttftS
		case "tpot":
			v = t.tpotS
		case "e2e":
			v = t.e2eS
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

// fmtSeconds formats a latency for sentences: ms below a second.
func fmtSeconds(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%.3g ms", s*1e3)
	}
	return fmt.Sprintf("%.3g s", s)
}
