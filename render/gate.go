package render

import (
	"fmt"
	"math"
	"strconv"

	"github.com/headroom-llm/headroom/analyze/compare"
)

// GateLine says one --fail-if result in one line, for the terminal, CI
// logs and the report's gate table:
// "FAIL ttft_p99>+10% [pr vs main]: ttft_p99 at c=4 60 ms -> 75 ms (+25.0%; no test)".
func GateLine(c *compare.Comparison, r compare.RuleResult) string {
	if r.Unchecked == compare.UncheckedOneGroup {
		return "UNCHECKED " + r.Rule + ": only one group of runs; give a baseline and a candidate"
	}
	who := "[" + r.Candidate + " vs " + r.Baseline + "]"
	if r.Status == "unchecked" {
		why := map[string]string{
			compare.UncheckedNoLevel: "no load level measured by both groups",
			compare.UncheckedNoSLO:   "goodput needs an SLO (--slo) and a level inside it in both groups",
			compare.UncheckedNoPrice: "cost needs a GPU price (--gpu-hour-usd or --gpu-preset)",
		}[r.Unchecked]
		switch r.Unchecked {
		case compare.UncheckedNotComparable:
			for _, gc := range c.Comparisons {
				if gc.Candidate == r.Candidate && gc.Baseline == r.Baseline {
					why = notComparableText(gc.Differs)
				}
			}
		case compare.UncheckedNoValue:
			why = "no value of " + r.Metric + " in both groups"
		}
		return "UNCHECKED " + r.Rule + " " + who + ": " + why
	}
	d := r.Delta
	at := ""
	if l := loadName(d.Load); l != "" {
		at = " at " + l
	}
	sure := "no test"
	switch {
	case d.P != nil:
		sure = fmt.Sprintf("p = %.3g", *d.P)
	case d.Interval != nil:
		sure = fmt.Sprintf("%.0f%% interval of the ratio %.3g–%.3g", 100*d.Interval.Confidence, d.Interval.Low, d.Interval.High)
	}
	if d.Test != "" {
		if d.Significant {
			sure += ", significant"
		} else {
			sure += ", not significant"
		}
	}
	status := map[string]string{"fail": "FAIL", "pass": "ok"}[r.Status]
	return fmt.Sprintf("%s %s %s: %s%s %s -> %s (%+.1f%%; %s)", status, r.Rule, who, r.Metric, at,
		gateValue(d.Baseline, d.Unit), gateValue(d.Candidate, d.Unit), 100*d.Change, sure)
}

// gateValue writes a value with its unit at three significant digits, as
// a gate line gives it (plain ASCII for CI logs).
func gateValue(v float64, unit string) string {
	switch unit {
	case "s":
		if math.Abs(v) < 1 {
			return strconv.FormatFloat(v*1e3, 'g', 3, 64) + " ms"
		}
		return strconv.FormatFloat(v, 'g', 3, 64) + " s"
	case "usd/Mtok":
		return "$" + strconv.FormatFloat(v, 'f', 3, 64) + "/Mtok"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + unit
}
