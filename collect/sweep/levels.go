package sweep

import (
	"math"

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
