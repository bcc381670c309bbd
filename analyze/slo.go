package analyze

import "github.com/headroom-llm/headroom/slo"

// SLO is a latency budget: every bound must hold for a level (at the
// level's percentile) or a request (its own value) to count as good.
type SLO struct {
	Spec   string     `json:"spec"` // as the user gave it
	Bounds []SLOBound `json:"bounds"`
}

// SLOBound is one bound, e.g. p99 TTFT ≤ 2 s.
type SLOBound struct {
	Metric     string  `json:"metric"` // one of SLOMetrics
	Percentile float64 `json:"percentile"`
	MaxS       float64 `json:"max_s"`
}

// String renders the bound as the user would write it.
func (b SLOBound) String() string { return slo.Bound(b).String() }

// ParseSLO reads an SLO like "ttft_p99=2s,tpot_p99=100ms" (the grammar is
// package slo's, shared with sweep --find-max).
func ParseSLO(spec string) (*SLO, error) {
	p, err := slo.Parse(spec)
	if err != nil {
		return nil, err
	}
	out := &SLO{Spec: p.Spec}
	for _, b := range p.Bounds {
		out.Bounds = append(out.Bounds, SLOBound(b))
	}
	return out, nil
}

// SLOMetrics are the latencies an SLO can bound.
var SLOMetrics = slo.Metrics

func (s *SLO) has(metric string) bool {
	for _, b := range s.Bounds {
		if b.Metric == metric {
			return true
		}
	}
	return false
}
