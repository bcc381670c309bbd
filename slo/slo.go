// Package slo is the one definition of a latency SLO and of how a load
// level is judged against it, shared by the sweep's search for the highest
// load that meets an SLO (collect/sweep, --find-max) and by the report's
// goodput and operating point (analyze): the two must agree on which level
// passes, so the rule lives here, once. It knows runs only through
// rundir's rows.
package slo

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SLO is a latency budget: every bound must hold for a level (at the
// level's percentile) or a request (its own value) to count as good.
type SLO struct {
	Spec   string  `json:"spec"` // as the user gave it
	Bounds []Bound `json:"bounds"`
}

// Bound is one bound, e.g. p99 TTFT ≤ 2 s.
type Bound struct {
	Metric     string  `json:"metric"` // one of Metrics
	Percentile float64 `json:"percentile"`
	MaxS       float64 `json:"max_s"`
}

// Metrics are the latencies an SLO can bound.
var Metrics = []string{"ttft", "tpot", "itl", "e2e"}

// String renders the bound as the user would write it.
func (b Bound) String() string {
	return fmt.Sprintf("%s_p%s=%s", b.Metric, strconv.FormatFloat(b.Percentile, 'f', -1, 64),
		time.Duration(b.MaxS*float64(time.Second)).String())
}

// Parse reads an SLO like "ttft_p99=2s,tpot_p99=100ms": comma-separated
// METRIC_pPCT=DURATION, with METRIC one of ttft, tpot, itl, e2e, PCT a
// percentile in (0, 100) and DURATION a Go duration ("2s", "150ms"). A
// metric may be bounded at several percentiles.
func Parse(spec string) (*SLO, error) {
	s := &SLO{Spec: strings.TrimSpace(spec)}
	seen := map[string]bool{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, val, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("slo: %q: expected METRIC_pPCT=DURATION, like ttft_p99=2s", part)
		}
		key = strings.ToLower(strings.TrimSpace(key))
		metric, pct, ok := strings.Cut(key, "_p")
		if !ok || !slices.Contains(Metrics, metric) {
			return nil, fmt.Errorf("slo: %q: expected METRIC_pPCT with METRIC one of %s, like tpot_p99", key, strings.Join(Metrics, ", "))
		}
		p, err := strconv.ParseFloat(pct, 64)
		if err != nil || !(p > 0 && p < 100) {
			return nil, fmt.Errorf("slo: %q: percentile %q must be a number between 0 and 100", key, pct)
		}
		d, err := time.ParseDuration(strings.TrimSpace(val))
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("slo: %q: %q is not a positive duration like 2s or 100ms", key, val)
		}
		if seen[key] {
			return nil, fmt.Errorf("slo: %q is given twice", key)
		}
		seen[key] = true
		s.Bounds = append(s.Bounds, Bound{Metric: metric, Percentile: p, MaxS: d.Seconds()})
	}
	if len(s.Bounds) == 0 {
		return nil, fmt.Errorf("slo: %q has no bounds; expected e.g. ttft_p99=2s,tpot_p99=100ms", spec)
	}
	return s, nil
}

// Has reports whether a bound is on metric.
func (s *SLO) Has(metric string) bool {
	return slices.ContainsFunc(s.Bounds, func(b Bound) bool { return b.Metric == metric })
}
