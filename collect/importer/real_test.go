package importer

import (
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/rundir"
)

// Every real result file imports with the headline numbers its own tool
// printed or wrote (testdata/imports/SOURCES.md quotes them): requests
// completed and failed, output throughput, and the percentiles as the tool
// computed them, in ms.
func TestRealFilesKeepTheirToolsHeadline(t *testing.T) {
	type headline struct {
		conc                             int64
		rate                             float64
		ok, failed                       int64
		stopped                          int64 // cancelled or cut by the tool itself
		outTokPerS                       float64
		ttftP50, ttftP99, tpot50, tpot99 float64 // ms; 0 = the tool did not report it
	}
	cases := map[string]headline{
		"vllm/ascend-0.18-rate1-one-failed.json": {rate: 1, ok: 199, failed: 1, outTokPerS: 124.59,
			ttftP50: 98.94, ttftP99: 113.89, tpot50: 34.45, tpot99: 35.01},
		"vllm/ascend-openai-1.0qps-Qwen3-VL-8B-Instruct-20260722-041843.json": {rate: 1, ok: 200, outTokPerS: 125.79,
			ttftP50: 95.70, ttftP99: 143.33, tpot50: 27.68, tpot99: 31.20},
		"vllm/llmd-benchmark_serving-10qps.json": {rate: 10, ok: 300, outTokPerS: 2249.25, ttftP50: 53.00, ttftP99: 89.77, tpot50: 13.51, tpot99: 17.65},
		"vllm/llmd-benchmark_serving-30qps.json": {rate: 30, ok: 900, outTokPerS: 5914.31, ttftP50: 74.51, ttftP99: 169.39, tpot50: 24.65, tpot99: 32.72},
		// request_rate "inf" and no --max-concurrency: all 900 at once.
		"vllm/llmd-benchmark_serving-infqps.json": {conc: 900, ok: 900, outTokPerS: 11481.02, ttftP50: 877.08, ttftP99: 1353.17, tpot50: 43.74, tpot99: 67.41},
		// GenAI-Perf of this release writes no request count.
		"genai-perf/triton-trtllm-c100-streaming_genai_perf.json": {conc: 100, outTokPerS: 44190.56, ttftP50: 172.81, ttftP99: 425.03, tpot50: 2.18, tpot99: 2.26},
		// Not streamed: GenAI-Perf's TTFT is the whole latency and is not a TTFT.
		"genai-perf/triton-trtllm-c100-nostreaming_genai_perf.json": {conc: 100, outTokPerS: 12277.70},
		// AIPerf's 11 "errors" are its own cancellations (RequestCancellationError,
		// --request-cancellation-rate 10).
		"aiperf/run1/profile_export_aiperf.json": {conc: 100, ok: 89, stopped: 11, outTokPerS: 2320.72, ttftP50: 2369.32, ttftP99: 3833.39, tpot50: 27.62, tpot99: 33.73},
		"aiperf/run1/profile_export_aiperf.csv":  {conc: 100, ok: 89, stopped: 11, outTokPerS: 2320.72, ttftP50: 2369.32, ttftP99: 3833.39, tpot50: 27.62, tpot99: 33.73},
	}
	round := func(v float64) float64 { return math.Round(v*100) / 100 }
	for name, want := range cases {
		dir := filepath.Join(t.TempDir(), "run")
		if _, err := Import(samples+name, dir, Options{}); err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		rows, err := rundir.ReadTable[rundir.LevelStatsRow](dir, rundir.TableLevelStats)
		if err != nil || len(rows) != 1 {
			t.Errorf("%s: %d level rows, %v", name, len(rows), err)
			continue
		}
		r := rows[0]
		got := headline{conc: r.Concurrency, rate: r.RateRPS, ok: r.RequestsOK, failed: r.Errors, stopped: r.Incomplete, outTokPerS: round(r.OutputTokPerS),
			ttftP50: round(r.TTFTP50S * 1e3), ttftP99: round(r.TTFTP99S * 1e3), tpot50: round(r.TPOTP50S * 1e3), tpot99: round(r.TPOTP99S * 1e3)}
		if got != want {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got, want)
		}
	}
}

// Every file in testdata/imports imports, or is refused in one line that
// names what is missing in the file's own words (no Go types).
func TestEveryImportSampleImportsOrIsRefusedInOneLine(t *testing.T) {
	refused := map[string]string{
		"vllm/partial-percentiles-only.json": `no "output_throughput": not a whole vllm bench serve --save-result file`,
	}
	goTypes := regexp.MustCompile(`\b(u?int(8|16|32|64)|float(32|64)|struct \{|map\[|\[\]|main\.|importer\.)|(^|\s)json: `)
	var names []string
	err := filepath.WalkDir(samples, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(samples, p)
		switch {
		case d.IsDir() && strings.Contains(rel, "sweep-experiment/"):
			return fs.SkipDir // read as one experiment below
		case d.IsDir() && strings.HasSuffix(rel, "sweep-experiment"):
			names = append(names, rel)
			return fs.SkipDir
		case d.IsDir() || strings.HasSuffix(p, ".md") || strings.HasSuffix(p, "_output.txt"): // sources, a tool's console output
			return nil
		}
		names = append(names, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		runs, err := ImportAll([]string{samples + name}, filepath.Join(t.TempDir(), "run"), Options{})
		want, isRefused := refused[name]
		switch {
		case err == nil && isRefused:
			t.Errorf("%s: imported, want a refusal %q", name, want)
		case err != nil && !isRefused:
			t.Errorf("%s: %v", name, err)
		case err != nil:
			msg := err.Error()
			if !strings.Contains(msg, want) || strings.Contains(msg, "\n") || goTypes.MatchString(msg) {
				t.Errorf("%s: refusal %q; want one line containing %q and no Go types", name, msg, want)
			}
		default:
			for _, run := range runs {
				if err := run.Check(); err != nil {
					t.Errorf("%s: %v", name, err)
				}
			}
		}
	}
	if len(names) < 20 {
		t.Errorf("only %d samples found", len(names))
	}
}

// A type mismatch is said in JSON's words.
func TestDecodeErrorsSayJSONWords(t *testing.T) {
	var r vllmResult
	err := decodeStrict([]byte(`{"completed": "ten"}`), &r)
	if err == nil || err.Error() != `line 1: "completed" is a string where a whole number belongs` {
		t.Errorf("got %v", err)
	}
}

// vllm bench sweep serve: the experiment directory's run=N.json files, one
// run per serve setting and repeat; warm-up runs are left out; the
// combinations' concurrencies are the levels.
func TestImportVLLMSweepExperiment(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "runs")
	runs, err := ImportAll([]string{samples + "vllm/sweep-experiment"}, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range runs {
		names = append(names, filepath.Base(r.Dir))
		if !slices.Equal(r.Manifest.Workload.Levels, []int{4, 8}) || !strings.HasPrefix(r.Manifest.Source.Tool, "vllm bench sweep serve") {
			t.Errorf("%s: levels %v tool %q", r.Dir, r.Manifest.Workload.Levels, r.Manifest.Source.Tool)
		}
		rows, err := rundir.ReadTable[rundir.LevelStatsRow](r.Dir, rundir.TableLevelStats)
		if err != nil || len(rows) != 2 || rows[0].RequestsOK != 40 {
			t.Errorf("%s: rows %+v %v (the 8-request warm-up must be left out)", r.Dir, rows, err)
		}
	}
	want := []string{"max_num_seqs=128,repeat-1", "max_num_seqs=128,repeat-2", "max_num_seqs=64,repeat-1", "max_num_seqs=64,repeat-2"}
	if !slices.Equal(names, want) {
		t.Errorf("runs %v, want %v", names, want)
	}
	// One combination's summary.json is the same runs as a JSON array.
	comb := samples + "vllm/sweep-experiment/SERVE--max_num_seqs=64-BENCH--max_concurrency=8/summary.json"
	runs, err = ImportAll([]string{comb}, filepath.Join(t.TempDir(), "comb"), Options{})
	if err != nil || len(runs) != 2 {
		t.Fatalf("summary.json: %d runs, %v", len(runs), err)
	}
	if _, err := ImportFiles([]string{samples + "vllm/sweep-experiment"}, filepath.Join(t.TempDir(), "one"), Options{}); err == nil ||
		!strings.Contains(err.Error(), "the files hold 4 runs (max_num_seqs=128,repeat-1;") {
		t.Errorf("ImportFiles of several groups: %v", err)
	}
}

// --append-result with two --metadata settings and a repeated level: the
// settings set the runs apart, the repeat becomes a run of its own.
func TestImportVLLMAppendGroups(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "runs")
	runs, err := ImportAll([]string{samples + "vllm/append-two-configs.json"}, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]int{}
	for _, r := range runs {
		got[filepath.Base(r.Dir)] = r.Manifest.Workload.Levels
	}
	want := map[string][]int{"tp=1,repeat-1": {1, 4}, "tp=1,repeat-2": {4}, "tp=2": {1, 4}}
	if len(got) != len(want) {
		t.Fatalf("runs %v, want %v", got, want)
	}
	for k, v := range want {
		if !slices.Equal(got[k], v) {
			t.Errorf("%s: levels %v, want %v", k, got[k], v)
		}
	}
}

// benchmark_serving.py before "failed" existed: failures are num_prompts −
// completed, and the open loop keeps its rate.
func TestImportVLLMWithoutFailed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	run, err := Import(samples+"vllm/benchmark_serving-no-failed.json", dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := rundir.ReadTable[rundir.LevelStatsRow](dir, rundir.TableLevelStats)
	if len(rows) != 1 || rows[0].RequestsOK != 97 || rows[0].Errors != 3 || rows[0].RateRPS != 4 || rows[0].Concurrency != 0 ||
		run.Manifest.Workload.Mode != "open" {
		t.Fatalf("rows %+v mode %s", rows, run.Manifest.Workload.Mode)
	}
	if !slices.ContainsFunc(run.Manifest.Notes, func(s string) bool { return strings.Contains(s, "num_prompts − completed") }) {
		t.Errorf("notes %v", run.Manifest.Notes)
	}
}

// vllm bench serve counts a request completed when it succeeded, output or
// not; a failure is known by its error text or its zero latency.
func TestImportVLLMFailuresAsVLLMCountsThem(t *testing.T) {
	_, levels, reqs, _ := importOne(t, Options{}, samples+"vllm/detailed-failures.json")
	var status []string
	for _, r := range reqs {
		status = append(status, r.Status)
	}
	want := []string{rundir.StatusOK, rundir.StatusOK, rundir.StatusStreamError, rundir.StatusConnect}
	if !slices.Equal(status, want) || levels[0].Errors != 2 {
		t.Errorf("statuses %v (errors %d), want %v: the success without output counts as completed", status, levels[0].Errors, want)
	}
	if reqs[1].ServerCompletionTokens == nil || *reqs[1].ServerCompletionTokens != 0 {
		t.Errorf("the empty success: %+v", reqs[1])
	}
}

// guidellm 0.7 as YAML: requests outside [measure_start_time,
// measure_end_time] are warm-up or cool-down, and the incomplete one is
// neither a success nor an error, as guidellm counts them (3 successful,
// 1 errored).
func TestImportGuideLLM07YAML(t *testing.T) {
	run, levels, reqs, _ := importOne(t, Options{}, samples+"guidellm/benchmarks-0.7.yaml")
	if run.Manifest.Source.Tool != "guidellm 0.7.1 (benchmarks.yaml)" || run.Manifest.Engine.Model != "Qwen/Qwen3-8B" {
		t.Fatalf("manifest %+v %+v", run.Manifest.Source, run.Manifest.Engine)
	}
	if len(levels) != 1 || levels[0].Concurrency != 2 || levels[0].Requests != 4 || levels[0].Errors != 1 {
		t.Fatalf("levels %+v: want 4 measured requests (3 successful, 1 errored)", levels)
	}
	warm := map[string]bool{} // by guidellm's own request id, after the run's
	for _, r := range reqs {
		warm[strings.TrimPrefix(r.RequestID, run.Manifest.RunID+"-")] = r.Warmup
	}
	if !warm["r0"] || !warm["r4"] || !warm["r5"] || warm["r1"] || warm["r6"] {
		t.Errorf("warm-up flags %v", warm)
	}
	if levels[0].StartNS != epochNSFromS(1748000000.0) || levels[0].WarmupEndNS != epochNSFromS(1748000001.0) {
		t.Errorf("level start %d, measured from %d", levels[0].StartNS, levels[0].WarmupEndNS)
	}
}

// GenAI-Perf's nested input_config: the stimulus is the load, request_count
// the number of requests.
func TestImportGenAIPerfNestedConfig(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	run, err := Import(samples+"genai-perf/nested-config_genai_perf.json", dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := rundir.ReadTable[rundir.LevelStatsRow](dir, rundir.TableLevelStats)
	if len(rows) != 1 || rows[0].RateRPS != 4 || rows[0].RequestsOK != 117 || rows[0].OutputTokPerS != 499.2 ||
		rows[0].TTFTP50S != 0.075 || rows[0].TPOTP99S != 0.019 || run.Manifest.Workload.Endpoint != "chat" ||
		run.Manifest.Engine.Model != "Qwen/Qwen3-8B" {
		t.Fatalf("rows %+v manifest %+v", rows, run.Manifest.Engine)
	}
}

// AIPerf's CSV alone has no load setting: refused, naming the file to
// import instead.
func TestImportAIPerfCSVAlone(t *testing.T) {
	data, err := os.ReadFile(samples + "aiperf/run1/profile_export_aiperf.csv")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "profile_export_aiperf.csv")
	os.WriteFile(p, data, 0o644)
	_, err = Import(p, filepath.Join(t.TempDir(), "run"), Options{})
	if err == nil || !strings.Contains(err.Error(), "import profile_export_aiperf.json or profile_export.jsonl instead") {
		t.Errorf("got %v", err)
	}
}

// guidellm's own report of a real run (its tests' benchmarks_stripped.json
// and .yaml at f1dfdc6, v0.2.1+32, requests sampled) imports with the
// numbers guidellm printed for it (benchmarks_stripped_output.txt, kept
// beside them).
func TestImportGuideLLMRealReport(t *testing.T) {
	assets := samples + "guidellm/repo-assets-f1dfdc6"
	for _, name := range []string{"benchmarks_stripped.json", "benchmarks_stripped.yaml"} {
		dir := filepath.Join(t.TempDir(), "run")
		if _, err := Import(filepath.Join(assets, name), dir, Options{}); err != nil {
			t.Fatal(err)
		}
		rows, err := rundir.ReadTable[rundir.LevelStatsRow](dir, rundir.TableLevelStats)
		if err != nil || len(rows) != 1 {
			t.Fatalf("%s: %+v %v", name, rows, err)
		}
		r := rows[0]
		// guidellm: synchronous, 46 completed, 1 incomplete, 0 errored;
		// 198.1 output tok/s, 992.7 total; TTFT median 16.4 p99 21.3 ms;
		// ITL median 4.9, p99 5.3 ms; 1.55 requests/s.
		if r.Concurrency != 1 || r.RequestsOK != 46 || r.Incomplete != 1 || r.Errors != 0 ||
			math.Round(r.OutputTokPerS*10) != 1981 || math.Round(r.TotalTokPerS*10) != 9927 ||
			math.Round(r.TTFTP50S*1e4) != 164 || math.Round(r.TTFTP99S*1e4) != 213 ||
			math.Round(r.TPOTP50S*1e4) != 49 || math.Round(r.TPOTP99S*1e4) != 53 || math.Round(r.RequestsPerS*100) != 155 {
			t.Errorf("%s: %+v", name, r)
		}
	}
}
