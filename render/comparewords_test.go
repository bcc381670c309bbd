package render

import (
	"testing"
	"time"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/analyze/compare"
	"github.com/headroom-llm/headroom/rundir"
)

// Every comparison finding the analyzer returns as data is said here, one
// case per sentence.
func TestCompareFindingWords(t *testing.T) {
	p := 0.002
	differs := []compare.DiffRow{{Key: "workload.prompt_tokens", Values: []string{"fixed 512", "fixed 128"}}}
	c := &compare.Comparison{Comparisons: []compare.GroupComparison{{Baseline: "base", Candidate: "cand", NotComparable: true, Differs: differs}}}
	fail := compare.RuleResult{Rule: "ttft_p99>+10%", Metric: "ttft_p99", Candidate: "cand", Baseline: "base", Status: "fail",
		Delta: &compare.Delta{Load: analyze.LoadKeyOf(analyze.AxisConcurrency, 8, 0), Unit: "s", Baseline: 0.06, Candidate: 0.075, Change: 0.25, Test: "mw", P: &p, Significant: true}}
	pass := compare.RuleResult{Rule: "throughput<-5%", Metric: "throughput", Candidate: "cand", Baseline: "base", Status: "pass",
		Delta: &compare.Delta{Unit: "tok/s", Baseline: 300, Candidate: 290, Change: -1.0 / 30}}
	unchecked := func(why, metric string) compare.RuleResult {
		return compare.RuleResult{Rule: metric + ">+1%", Metric: metric, Candidate: "cand", Baseline: "base", Status: "unchecked", Unchecked: why}
	}
	stopped := &rundir.Stopped{Reason: "error", Error: "connection refused", Time: time.Unix(0, 0)}
	for _, tt := range []struct{ got, want string }{
		{GateLine(c, fail), "FAIL ttft_p99>+10% [cand vs base]: ttft_p99 at c=8 60 ms -> 75 ms (+25.0%; p = 0.002, significant)"},
		{GateLine(c, pass), "ok throughput<-5% [cand vs base]: throughput 300.0 tok/s -> 290.0 tok/s (-3.3%; no test)"},
		{GateLine(c, compare.RuleResult{Rule: "cost>+1%", Metric: "cost", Status: "unchecked", Unchecked: compare.UncheckedOneGroup}),
			"UNCHECKED cost>+1%: only one group of runs; give a baseline and a candidate"},
		{GateLine(c, unchecked(compare.UncheckedNotComparable, "ttft_p50")),
			"UNCHECKED ttft_p50>+1% [cand vs base]: not comparable: workload.prompt_tokens differs (fixed 512 against fixed 128)"},
		{GateLine(c, unchecked(compare.UncheckedNoLevel, "ttft_p50")), "UNCHECKED ttft_p50>+1% [cand vs base]: no load level measured by both groups"},
		{GateLine(c, unchecked(compare.UncheckedNoSLO, "goodput")),
			"UNCHECKED goodput>+1% [cand vs base]: goodput needs an SLO (--slo) and a level inside it in both groups"},
		{GateLine(c, unchecked(compare.UncheckedNoPrice, "cost")), "UNCHECKED cost>+1% [cand vs base]: cost needs a GPU price (--gpu-hour-usd or --gpu-preset)"},
		{GateLine(c, unchecked(compare.UncheckedNoValue, "throughput")), "UNCHECKED throughput>+1% [cand vs base]: no value of throughput in both groups"},
		{LeftOutWhy(compare.LeftOut{Why: compare.LeftOutNoLevels, Stopped: stopped}),
			"no request was measured (no sweep level was written); the collector stopped (error: connection refused)"},
		{LeftOutWhy(compare.LeftOut{Why: compare.LeftOutNoData, Complete: true}), "it holds no sweep level and no probe"},
		{LeftOutWhy(compare.LeftOut{Why: compare.LeftOutNoRequests}), "no request was measured; the collector did not finish (killed?)"},
		{LeftOutWhy(compare.LeftOut{Why: compare.LeftOutAllFailed, Requests: 5, Complete: true}), "every one of its 5 measured requests failed"},
		{LeftOutList([]compare.LeftOut{{Dir: "a", Why: compare.LeftOutNoData, Complete: true}, {Dir: "b", Why: compare.LeftOutNoRequests, Complete: true}}),
			"a: it holds no sweep level and no probe; b: no request was measured"},
		{compareWarnings([]compare.Warning{{Kind: compare.WarnIncomplete, Dir: "runs/x"}})[0],
			"runs/x is incomplete (the collector was interrupted): its numbers cover only what it measured"},
		{compareWarnings([]compare.Warning{{Kind: compare.WarnNonFinite, Count: 3}})[0],
			"3 values computed were not finite numbers (an overflow) and are shown as 0 or left out"},
		{loadName(analyze.LoadKeyOf(analyze.AxisRate, 64, 4)), "4.00 req/s"},
		{loadName(analyze.LoadKey{Axis: analyze.AxisInEngine, Concurrency: 12}), "12 in the engine"},
		{loadName(analyze.LoadKey{}), ""},
		{sloMissingText(compare.SLOMissingNoSLO), "no SLO given (--slo)"},
		{sloMissingText(compare.SLOMissingNoLevel), "no level inside the SLO"},
		{gpuCount("NVIDIA H200", 2), "2× NVIDIA H200"},
		{gpuCount("NVIDIA H200", 1), "NVIDIA H200"},
	} {
		if tt.got != tt.want {
			t.Errorf("got  %q\nwant %q", tt.got, tt.want)
		}
	}
}
