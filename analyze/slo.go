package analyze

import "github.com/headroom-llm/headroom/slo"

// SLO is a latency budget: every bound must hold for a level (at the
// level's percentile) or a request (its own value) to count as good. It is
// package slo's, shared with sweep --find-max.
type SLO = slo.SLO

// SLOBound is one bound, e.g. p99 TTFT ≤ 2 s.
type SLOBound = slo.Bound

// ParseSLO reads an SLO like "ttft_p99=2s,tpot_p99=100ms".
func ParseSLO(spec string) (*SLO, error) { return slo.Parse(spec) }

// SLOMetrics are the latencies an SLO can bound.
var SLOMetrics = slo.Metrics
