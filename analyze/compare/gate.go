package compare

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Rule is one condition of the regression gate, written as in
// --fail-if "throughput<-5%,ttft_p99>+10%": a metric, a comparison and a
// change, relative (%) or absolute with a unit (ms, s, tok/s, usd).
type Rule struct {
	Text     string  `json:"text"`
	Metric   string  `json:"metric"`
	Op       string  `json:"op"`       // <, <=, > or >=
	Value    float64 `json:"value"`    // a fraction when Relative, else base units (s, tok/s, usd/Mtok)
	Relative bool    `json:"relative"` // true for a % change
}

var ruleRE = regexp.MustCompile(`^([a-z0-9_]+)\s*(<=|>=|<|>)\s*([+-]?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*(%|ns|us|µs|ms|s|tok/s|usd)$`)

// ParseRules reads a comma-separated list of rules. Each fails when the
// candidate's change from the baseline satisfies it: "throughput<-5%"
// fails when throughput fell by more than 5 %, "ttft_p99>+10%" when the
// p99 TTFT rose by more than 10 %, "tpot_p50>+2ms" when p50 TPOT rose by
// more than 2 ms.
func ParseRules(s string) ([]Rule, error) {
	var rules []Rule
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		m := ruleRE.FindStringSubmatch(part)
		if m == nil {
			return nil, fmt.Errorf("rule %q: want METRIC<CHANGE or METRIC>CHANGE, e.g. throughput<-5%% or ttft_p99>+50ms", part)
		}
		r := Rule{Text: part, Metric: m[1], Op: m[2]}
		if !slices.Contains(MetricNames(), r.Metric) {
			return nil, fmt.Errorf("rule %q: unknown metric %q; want one of %s", part, r.Metric, strings.Join(MetricNames(), ", "))
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			return nil, fmt.Errorf("rule %q: %w", part, err)
		}
		unit := metricUnit(r.Metric)
		switch m[4] {
		case "%":
			r.Value, r.Relative = v/100, true
		case "ns", "us", "µs", "ms", "s":
			if unit != "s" {
				return nil, fmt.Errorf("rule %q: %s is in %s, not a time", part, r.Metric, unit)
			}
			r.Value = v * map[string]float64{"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1}[m[4]]
		case "tok/s", "usd":
			if (m[4] == "usd") != (unit == "usd/Mtok") || (m[4] == "tok/s") != (unit == "tok/s") {
				return nil, fmt.Errorf("rule %q: %s is in %s, not %s", part, r.Metric, unit, m[4])
			}
			r.Value = v
		}
		rules = append(rules, r)
	}
	if len(rules) == 0 {
		return nil, fmt.Errorf("no rule in %q", s)
	}
	return rules, nil
}

func metricUnit(metric string) string {
	for _, m := range runMetrics {
		if m.name == metric {
			return m.unit
		}
	}
	return "s"
}

// holds reports whether the rule's condition is true of a change.
func (r Rule) holds(d Delta) bool {
	v := d.Candidate - d.Baseline
	if r.Relative {
		v = d.Change
	}
	switch r.Op {
	case "<":
		return v < r.Value
	case "<=":
		return v <= r.Value
	case ">":
		return v > r.Value
	}
	return v >= r.Value
}

// Gate is the regression gate's outcome.
type Gate struct {
	Rules             []Rule       `json:"rules"`
	NeedsSignificance bool         `json:"needs_significance"`
	Results           []RuleResult `json:"results"`
	Failed            bool         `json:"failed"`
}

// RuleResult is one rule against one candidate group.
type RuleResult struct {
	Rule      string `json:"rule"`
	Metric    string `json:"metric"`
	Candidate string `json:"candidate,omitempty"`
	Baseline  string `json:"baseline,omitempty"`
	// Status is "pass", "fail", or "unchecked" (the comparison has no value
	// of the metric, e.g. no common level, no SLO or no price: this fails
	// the gate too, so a gate never passes by not looking).
	Status string `json:"status"`
	// Unchecked says why an unchecked rule could not be checked (an
	// Unchecked* value).
	Unchecked string `json:"unchecked,omitempty"`
	// Delta is the change the status rests on: the worst level for a
	// latency rule.
	Delta *Delta `json:"delta,omitempty"`
}

// Why a rule is unchecked (RuleResult.Unchecked).
const (
	UncheckedOneGroup      = "one_group"       // only one group of runs: nothing to compare with
	UncheckedNotComparable = "not_comparable"  // the groups differ in a key that must match
	UncheckedNoLevel       = "no_common_level" // a latency rule: no load level measured by both groups
	UncheckedNoSLO         = "no_slo_level"    // goodput: no SLO, or no level inside it, in a group
	UncheckedNoPrice       = "no_price"        // cost: no GPU price
	UncheckedNoValue       = "no_value"        // the metric has no value in both groups
)

func evaluateGate(c *Comparison, opts Options) *Gate {
	g := &Gate{Rules: opts.Rules, NeedsSignificance: opts.GateNeedsSignificance}
	for _, gc := range c.Comparisons {
		for _, r := range opts.Rules {
			res := RuleResult{Rule: r.Text, Metric: r.Metric, Candidate: gc.Candidate, Baseline: gc.Baseline, Status: "pass"}
			// The worst change is the one furthest in the rule's direction:
			// the lowest for "<" rules, the highest for ">" rules. A rule
			// fails on the worst change that satisfies it (and, with
			// NeedsSignificance, is significant or untestable).
			lower := strings.HasPrefix(r.Op, "<")
			worse := func(a, b float64) bool { return (lower && a < b) || (!lower && a > b) }
			var worst, worstFail *Delta
			checked := 0
			for i := range gc.Deltas {
				d := &gc.Deltas[i]
				if d.Metric != r.Metric {
					continue
				}
				checked++
				v := worstValue(*d, r)
				if worst == nil || worse(v, worstValue(*worst, r)) {
					worst = d
				}
				counts := !opts.GateNeedsSignificance || d.Significant || d.Test == ""
				if r.holds(*d) && counts && (worstFail == nil || worse(v, worstValue(*worstFail, r))) {
					worstFail = d
				}
			}
			if worstFail != nil {
				res.Status, worst = "fail", worstFail
			}
			res.Delta = worst
			if checked == 0 || gc.NotComparable {
				// A difference between runs that are not comparable says
				// nothing about the change the gate guards against.
				res.Status, res.Unchecked = "unchecked", uncheckedWhy(r, gc)
			}
			if res.Status != "pass" {
				g.Failed = true
			}
			g.Results = append(g.Results, res)
		}
	}
	if len(c.Comparisons) == 0 {
		g.Failed = true
		for _, r := range opts.Rules {
			g.Results = append(g.Results, RuleResult{Rule: r.Text, Metric: r.Metric, Status: "unchecked", Unchecked: UncheckedOneGroup})
		}
	}
	return g
}

// uncheckedWhy says why a rule found nothing to check.
func uncheckedWhy(r Rule, gc GroupComparison) string {
	switch {
	case gc.NotComparable:
		return UncheckedNotComparable
	case strings.Contains(r.Metric, "_p"):
		return UncheckedNoLevel
	case r.Metric == "goodput":
		return UncheckedNoSLO
	case r.Metric == "cost":
		return UncheckedNoPrice
	}
	return UncheckedNoValue
}

func worstValue(d Delta, r Rule) float64 {
	if r.Relative {
		return d.Change
	}
	return d.Candidate - d.Baseline
}
