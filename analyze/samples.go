package analyze

import "math"

// LevelSamples are the per-request latencies behind one level's statistics:
// the measured, successful requests, with TTFT, TPOT and E2E defined as for
// LevelStats. headroom compare tests differences between runs on them.
type LevelSamples struct {
	LevelIndex  int
	Concurrency int
	RateRPS     float64
	TTFTS       []float64
	TPOTS       []float64
	E2ES        []float64
}

// RequestSamples returns the samples of every level of a run that has
// per-request data, in level order; nil for runs with per-level statistics
// only (imports). It computes no intervals.
func RequestSamples(run *Run, set Settings) []LevelSamples {
	if len(run.Requests) == 0 {
		return nil
	}
	set.BootstrapResamples = 0
	levels, timings, _ := levelStatsFromRequests(run, set)
	out := make([]LevelSamples, 0, len(levels))
	for _, l := range levels {
		s := LevelSamples{LevelIndex: l.LevelIndex, Concurrency: l.Concurrency, RateRPS: l.RateRPS}
		for _, t := range timings[l.LevelIndex] {
			if !t.ok {
				continue
			}
			if !math.IsNaN(t.ttftS) {
				s.TTFTS = append(s.TTFTS, t.ttftS)
			}
			if !math.IsNaN(t.tpotS) {
				s.TPOTS = append(s.TPOTS, t.tpotS)
			}
			s.E2ES = append(s.E2ES, t.e2eS)
		}
		out = append(out, s)
	}
	return out
}
