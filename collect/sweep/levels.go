package sweep

import (
	"math"
	"time"

	"github.com/headroom-llm/headroom/collect/loadgen"
)

// warmupCount is the number of warm-up requests of a level.
func (s *Sweep) warmupCount(l loadgen.Level) int {
	if s.cfg.warmup >= 0 {
		return s.cfg.warmup
	}
	if l.RateRPS > 0 {
		return int(math.Ceil(l.RateRPS)) // one second of arrivals
	}
	return l.Concurrency
}

// measuredCount is the number of measured requests (0 with a duration).
func (s *Sweep) measuredCount(l loadgen.Level) int {
	switch {
	case s.cfg.durationPerLevel > 0:
		return 0
	case s.cfg.requestsPerLevel > 0:
		return s.cfg.requestsPerLevel
	case l.RateRPS > 0:
		return max(DefaultMinRequestsPerLevel, int(math.Ceil(16*l.RateRPS)))
	}
	return max(DefaultMinRequestsPerLevel, 4*l.Concurrency)
}

// PlannedLevel is one level the sweep will run, for a progress display's
// estimate of the time left.
type PlannedLevel struct {
	Index       int
	Concurrency int
	RateRPS     float64       // open loop
	Requests    int           // warm-up and measured; 0 with a duration
	Duration    time.Duration // of the measured phase, when it runs for one
}

// Planned are the levels the sweep will run, in order, from the first a
// resume has not done; nil when they are decided as it goes (a search,
// or a sweep that may stop at saturation, lists its whole plan).
func (s *Sweep) Planned() []PlannedLevel {
	if s.search != nil {
		return nil
	}
	var out []PlannedLevel
	for _, l := range s.plan()[min(s.startLevel, len(s.plan())):] {
		p := PlannedLevel{Index: l.Index, Concurrency: l.Concurrency, RateRPS: l.RateRPS, Duration: l.Duration}
		if l.Duration == 0 {
			p.Requests = l.Warmup + l.Requests
		}
		out = append(out, p)
	}
	return out
}
