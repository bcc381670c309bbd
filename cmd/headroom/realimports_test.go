package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Every real result file of testdata (testdata/imports, each named in its
// SOURCES.md with the headline its own tool printed, and the seed script's
// H200 result) imports and reports,
// and the report's answer states the tool's throughput without calling a
// run the tool counted as successful failed or saturated.
func TestRealImportsReportTheirToolsHeadline(t *testing.T) {
	const testdata = "../../testdata/"
	cases := []struct {
		file string
		peak string // the answer's throughput, as the tool wrote it (rounded)
	}{
		{"imports/vllm/ascend-0.18-rate1-one-failed.json", "at most 125 tok/s"},
		{"imports/vllm/ascend-openai-1.0qps-Qwen3-VL-8B-Instruct-20260722-041843.json", "at most 126 tok/s"},
		{"imports/vllm/llmd-benchmark_serving-10qps.json", "at most 2,249 tok/s"},
		{"imports/vllm/er0080-bench_serve_v0.25.1.json", "at most 82.9 tok/s"},
		{"imports/vllm/llmd-benchmark_serving-30qps.json", "at most 5,914 tok/s"},
		{"imports/vllm/llmd-benchmark_serving-infqps.json", "at most 11,481 tok/s"},
		{"imports/genai-perf/triton-trtllm-c100-streaming_genai_perf.json", "at most 44,191 tok/s"},
		{"imports/genai-perf/triton-trtllm-c100-nostreaming_genai_perf.json", "at most 12,278 tok/s"},
		// 89 completed and 11 cancelled by AIPerf itself (--request-cancellation-rate 10).
		// (aiperf/run1 keeps 3 of the 100 records: its aggregates are not theirs.)
		{"imports/aiperf/run1-all-records", "at most 2,321 tok/s"},
		{"imports/aiperf/run1/profile_export_aiperf.json", "at most 2,321 tok/s"},
		{"imports/aiperf/run1/profile_export_aiperf.csv", "at most 2,321 tok/s"},
		// AIPerf 0.10: the load is in input_config.phases.
		{"imports/aiperf/anud18-5090-agent-c16/profile_export_aiperf.json", "at most 1,172 tok/s of output, at c=16"},
		{"imports/guidellm/repo-assets-f1dfdc6/benchmarks_stripped.json", "at most 198 tok/s"},
		{"imports/guidellm/repo-assets-f1dfdc6/benchmarks_stripped.yaml", "at most 198 tok/s"},
		// guidellm 0.5 with warm-up and cool-down requests in the lists:
		// the window ends with the last measured request, not the cool-down.
		{"imports/guidellm/korat-8f24116/openai_gpt-oss-20b_tp4_quant-none_benchmarks.json", "at most 33.4 tok/s"},
		{"imports/guidellm/korat-8f24116/Qwen_Qwen3-30B-A3B_tp4_quant-fp8_benchmarks.json", "at most 25.9 tok/s"},
		// The seed's script 02 on the H200 (its console: peak 255 tok/s at c=64).
		{"h200-e2e/large-serving_sweep_large.json", "at most 255 tok/s"},
	}
	for _, c := range cases {
		md, ok := importedReport(t, testdata+c.file)
		if !ok {
			continue
		}
		answer := answerOf(md)
		if !strings.Contains(answer, c.peak) {
			t.Errorf("%s: the answer lacks %q:\n%s", c.file, c.peak, answer)
		}
		for _, wrong := range []string{"No level finished", "no level finished", "saturated", "backlog"} {
			if strings.Contains(answer, wrong) {
				t.Errorf("%s: the answer says %q of a run its tool counted as successful:\n%s", c.file, wrong, answer)
			}
		}
		// None of these files has the server's log or /metrics: the
		// answer cannot know that nothing was preempted or queued.
		for _, unknown := range []string{"nothing was preempted", "nothing queued"} {
			if strings.Contains(answer, unknown) {
				t.Errorf("%s: the answer says %q without the server's log or /metrics:\n%s", c.file, unknown, answer)
			}
		}
	}
}

// A tool's per-level percentiles are its own (vLLM's are numpy's linear
// interpolation): the latency table says so once, instead of headroom's
// nearest rank, and a p99 over 8 requests is starred as thin but not
// called the largest value seen, which an interpolated one is not.
func TestImportedPercentilesKeepTheirToolsMethod(t *testing.T) {
	md, ok := importedReport(t, "../../testdata/imports/vllm/er0080-bench_serve_v0.25.1.json")
	if !ok {
		return
	}
	caption := "latency percentiles of successful measured requests (as the source computed them: numpy.percentile, linear interpolation"
	if !strings.Contains(md, caption) || strings.Count(md, "numpy.percentile") != 1 {
		t.Errorf("want the table to name numpy's method once (%q):\n%s", caption, md)
	}
	if !strings.Contains(md, `| 734\* |`) {
		t.Errorf("the p99 over 8 requests is not starred:\n%s", md)
	}
	if strings.Contains(md, "largest value seen") {
		t.Errorf("an interpolated p99 is called the largest value seen:\n%s", md)
	}
}

// A result in which every request failed (vLLM's completed 0, failed 8)
// says so on page one, instead of naming a missing measurement or telling
// the reader to change the configuration.
func TestImportWhereEveryRequestFailed(t *testing.T) {
	md, ok := importedReport(t, "../../testdata/imports/vllm/er0080-bench_serve_all_requests_failed_v0.25.1.json")
	if !ok {
		return
	}
	answer := answerOf(md)
	if !strings.Contains(answer, "Every one of the 8 measured requests failed") {
		t.Errorf("the answer does not say every request failed:\n%s", answer)
	}
	for _, wrong := range []string{"lacks a TPOT", "change the configuration"} {
		if strings.Contains(answer, wrong) {
			t.Errorf("the answer says %q of a run whose every request failed:\n%s", wrong, answer)
		}
	}
}

// importedReport imports a result file, reports it and returns report.md;
// ok is false, with the failure reported, when either command failed.
func importedReport(t *testing.T, file string) (md string, ok bool) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	if code, _, errs := headroom(t, "import", file, "-o", dir); code != 0 {
		t.Errorf("%s: import: exit %d: %s", file, code, errs)
		return "", false
	}
	if code, _, errs := headroom(t, "report", dir, "--format", "md"); code != 0 {
		t.Errorf("%s: report: exit %d: %s", file, code, errs)
		return "", false
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

// answerOf is page one's answer: from its heading to the facts below it.
func answerOf(md string) string {
	if i := strings.Index(md, "### The answer"); i >= 0 {
		md = md[i:]
	}
	if i := strings.Index(md, "\n- **Peak"); i >= 0 {
		md = md[:i]
	}
	return md
}
