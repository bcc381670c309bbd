package importer

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/internal/runtest"
	"github.com/headroom-llm/headroom/rundir"
)

const samples = "../../testdata/imports/"

func importOne(t *testing.T, opts Options, paths ...string) (*rundir.Run, []rundir.LevelRow, []rundir.RequestRow, []rundir.TokenRow) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	run, err := ImportFiles(paths, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Check(); err != nil {
		t.Fatal(err)
	}
	levels := runtest.Table[rundir.LevelRow](t, dir, rundir.TableLevels)
	reqs := runtest.Table[rundir.RequestRow](t, dir, rundir.TableRequests)
	toks := runtest.Table[rundir.TokenRow](t, dir, rundir.TableTokens)
	return run, levels, reqs, toks
}

func ns(t time.Time) int64 { return t.UnixNano() }

func val(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

func tokensOf(toks []rundir.TokenRow, id string) []int64 {
	var out []int64
	for _, k := range toks {
		if k.RequestID == id {
			out = append(out, k.RecvNS)
		}
	}
	return out
}

func TestDetect(t *testing.T) {
	cases := map[string]Kind{
		"vllm/detailed-0.11.json":                  KindVLLMBench,
		"vllm/detailed-benchmark_serving-0.6.json": KindVLLMBench,
		"vllm/aggregate-append.json":               KindVLLMBench,
		"aiperf/run1/profile_export.jsonl":         KindAIPerfRecords,
		"aiperf/run1/profile_export_aiperf.json":   KindAIPerfSummary,
		"genai-perf/openai_profile_export.json":    KindGenAIPerf,
		"genai-perf/triton_profile_export.json":    KindGenAIPerf,
		"guidellm/benchmarks-0.3.json":             KindGuideLLM,
		"guidellm/benchmarks-0.4.json":             KindGuideLLM,
		"../seed/roofline_NVIDIA_H200.json":        KindSeedRoofline,
	}
	for name, want := range cases {
		data, err := os.ReadFile(samples + name)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := Detect(data); got != want || err != nil {
			t.Errorf("%s: Detect = %q, %v; want %q", name, got, err, want)
		}
	}
}

// vllm bench serve --save-detailed with start_times and latencies (vllm
// 0.11 layout): times are anchored at "date" minus "duration".
func TestImportVLLMDetailed(t *testing.T) {
	run, levels, reqs, toks := importOne(t, Options{}, samples+"vllm/detailed-0.11.json")
	start := time.Date(2025, 1, 2, 3, 4, 3, 500_000_000, time.UTC) // 03:04:05 - 1.5 s
	m := run.Manifest
	if !m.StartTime.Equal(start) || m.Engine.Model != "meta-llama/Llama-3.1-8B-Instruct" ||
		!slices.Equal(m.Workload.Levels, []int{2}) || m.Workload.Mode != "closed" ||
		!slices.Contains(m.Tags, "engine_version=0.11.0") || !slices.Contains(m.Tags, "tp=1") ||
		!strings.HasPrefix(m.Source.Tool, "vllm bench serve") || m.Source.SHA256 == "" {
		t.Fatalf("manifest: start %v engine %+v workload %+v tags %v source %+v", m.StartTime, m.Engine, m.Workload, m.Tags, m.Source)
	}
	if !m.EndTime.Equal(start.Add(365 * time.Millisecond)) {
		t.Errorf("end %v", m.EndTime)
	}
	if m.Workload.Prompt != (rundir.Dist{Kind: "fixed", Mean: 100}) || m.Workload.Output.Mean != 4 {
		t.Errorf("workload lengths %+v %+v", m.Workload.Prompt, m.Workload.Output)
	}
	if len(levels) != 1 || levels[0].Concurrency != 2 || levels[0].Requests != 4 || levels[0].Errors != 1 ||
		levels[0].StartNS != ns(start) || levels[0].WarmupEndNS != ns(start) || levels[0].EndNS != ns(start)+365_000_000 {
		t.Fatalf("levels %+v", levels)
	}
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	r0 := reqs[0]
	// Request ids are unique across runs: the run's id, then the tool's.
	if r0.RequestID != m.RunID+"-0" || r0.SendNS != ns(start) || val(r0.FirstTokenNS) != ns(start)+100_000_000 ||
		r0.EndNS != ns(start)+170_000_000 || val(r0.ServerCompletionTokens) != 4 || val(r0.ServerPromptTokens) != 100 ||
		r0.ClientChunks != 4 || r0.Status != rundir.StatusOK {
		t.Errorf("request 0: %+v", r0)
	}
	wantChunks := []int64{ns(start) + 100_000_000, ns(start) + 120_000_000, ns(start) + 140_000_000, ns(start) + 170_000_000}
	if got := tokensOf(toks, m.RunID+"-0"); !slices.Equal(got, wantChunks) {
		t.Errorf("chunks of request 0: %v\nwant %v", got, wantChunks)
	}
	r2 := reqs[2]
	if r2.RequestID != m.RunID+"-2" || r2.Status != rundir.StatusHTTPError || r2.HTTPStatus != 500 || r2.FirstTokenNS != nil ||
		r2.SendNS != ns(start)+170_000_000 || r2.EndNS != ns(start)+220_000_000 || r2.Error != "Internal Server Error" {
		t.Errorf("request 2: %+v", r2)
	}
	if !slices.ContainsFunc(m.Source.Lacks, func(s string) bool { return strings.Contains(s, "tokens per streamed chunk") }) {
		t.Errorf("lacks: %v", m.Source.Lacks)
	}
}

// An older benchmark_serving.py result has no start_times: sends are
// reconstructed by replaying the client's schedule (at most 2 in flight).
func TestImportVLLMReconstructsSends(t *testing.T) {
	run, levels, reqs, _ := importOne(t, Options{}, samples+"vllm/detailed-benchmark_serving-0.6.json")
	start := time.Date(2024, 6, 10, 11, 59, 59, 100_000_000, time.UTC)
	// latencies (ttft + itls): 0.3, 0.3, 0.3, 0.5; two slots.
	wantSend := []int64{0, 0, 300_000_000, 300_000_000}
	wantEnd := []int64{300_000_000, 300_000_000, 600_000_000, 800_000_000}
	for i, r := range reqs {
		if r.SendNS != ns(start)+wantSend[i] || r.EndNS != ns(start)+wantEnd[i] {
			t.Errorf("request %d: send %d end %d; want %d %d (relative)", i, r.SendNS-ns(start), r.EndNS-ns(start), wantSend[i], wantEnd[i])
		}
	}
	if len(levels) != 1 || levels[0].Concurrency != 2 {
		t.Fatalf("levels %+v", levels)
	}
	if !slices.ContainsFunc(run.Manifest.Notes, func(s string) bool { return strings.Contains(s, "send times are reconstructed") }) ||
		!slices.ContainsFunc(run.Manifest.Source.Lacks, func(s string) bool { return strings.Contains(s, "request send times") }) {
		t.Errorf("notes %v lacks %v", run.Manifest.Notes, run.Manifest.Source.Lacks)
	}
}

func TestReplaySchedule(t *testing.T) {
	cases := []struct {
		lat  []float64
		conc int
		rate float64
		want []float64
	}{
		{[]float64{1, 1, 1}, 0, math.Inf(1), []float64{0, 0, 0}},
		{[]float64{1, 2, 1, 1}, 2, math.Inf(1), []float64{0, 0, 1, 2}},
		{[]float64{1, 1, 1}, 0, 2, []float64{0, 0.5, 1}},
		{[]float64{3, 3, 3}, 1, 2, []float64{0, 3, 6}},
		{[]float64{0.1, 0.1, 0.1}, 1, 2, []float64{0, 0.5, 1}},
	}
	for _, c := range cases {
		if got := replaySchedule(c.lat, c.conc, c.rate); !slices.Equal(got, c.want) {
			t.Errorf("replaySchedule(%v, %d, %g) = %v; want %v", c.lat, c.conc, c.rate, got, c.want)
		}
	}
}

// Two results appended to one file (--append-result, no --save-detailed)
// become two levels of per-level statistics.
func TestImportVLLMAggregateAppend(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	run, err := Import(samples+"vllm/aggregate-append.json", dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rows := runtest.Table[rundir.LevelStatsRow](t, dir, rundir.TableLevelStats)
	want := []rundir.LevelStatsRow{
		{Concurrency: 1, RequestsOK: 100, WindowS: 160, RequestsPerS: 0.625, OutputTokPerS: 80, TotalTokPerS: 400, MeanPromptTokens: 512, MeanOutputTokens: 128,
			TTFTP50S: 0.040, TTFTP99S: 0.044, TPOTP50S: 0.012, TPOTP99S: 0.0125, ITLP50S: 0.012, ITLP99S: 0.015, PercentileMethod: VLLMPercentileMethod},
		{Concurrency: 4, RequestsOK: 100, WindowS: 42.666666666666664, RequestsPerS: 2.34375, OutputTokPerS: 300, TotalTokPerS: 1500, MeanPromptTokens: 512, MeanOutputTokens: 128,
			TTFTP50S: 0.045, TTFTP99S: 0.060, TPOTP50S: 0.013, TPOTP99S: 0.014, ITLP50S: 0.013, ITLP99S: 0.0168, PercentileMethod: VLLMPercentileMethod},
	}
	near := func(a, b rundir.LevelStatsRow) bool {
		// The ms-to-s conversion leaves float noise in the last digit.
		return math.Abs(a.ITLP99S-b.ITLP99S) < 1e-12 && func() bool { a.ITLP99S = b.ITLP99S; return a == b }()
	}
	if len(rows) != 2 || !near(rows[0], want[0]) || !near(rows[1], want[1]) {
		t.Fatalf("level_stats\n got %+v\nwant %+v", rows, want)
	}
	if rundir.HasTable(dir, rundir.TableRequests) || !slices.Equal(run.Manifest.Workload.Levels, []int{1, 4}) {
		t.Errorf("requests table present or levels %v", run.Manifest.Workload.Levels)
	}
	// The earlier result's date minus its duration (12800/80 = 160 s).
	if want := time.Date(2025, 1, 3, 9, 57, 20, 0, time.UTC); !run.Manifest.StartTime.Equal(want) {
		t.Errorf("start %v, want %v", run.Manifest.StartTime, want)
	}
}

// AIPerf's own example artifacts (real output, a subset of the records):
// the directory import finds the records and reads the load setting from
// profile_export_aiperf.json beside them.
func TestImportAIPerfArtifactDir(t *testing.T) {
	run, levels, reqs, toks := importOne(t, Options{}, samples+"aiperf/run1")
	m := run.Manifest
	if m.Engine.Model != "openai/gpt-oss-20b" || m.Engine.BaseURL != "localhost:9000" || m.Workload.Endpoint != "chat" ||
		!m.StartTime.Equal(time.Unix(0, 1759522419154829652)) {
		t.Fatalf("manifest %+v %+v start %v", m.Engine, m.Workload, m.StartTime)
	}
	if len(levels) != 1 || levels[0].Concurrency != 100 || levels[0].Requests != 3 || levels[0].Errors != 1 {
		t.Fatalf("levels %+v", levels)
	}
	byID := map[string]rundir.RequestRow{}
	for _, r := range reqs {
		byID[r.RequestID] = r
	}
	c := byID[m.RunID+"-c087da26-5552-4785-958a-cad75c7b22de"]
	if c.Status != rundir.StatusCanceled || c.HTTPStatus != 499 || c.SendNS != 1759522419154829652 ||
		c.Error != "RequestCancellationError: Request was cancelled after 0.000 seconds" {
		t.Errorf("cancelled record: %+v", c)
	}
	r := byID[m.RunID+"-1ed40a0d-e708-434d-bb8e-fb1b44cb8717"]
	send := int64(1759522419159192408)
	if r.Status != rundir.StatusOK || r.SendNS != send || val(r.FirstTokenNS) != send+1_680_543_782 ||
		r.EndNS != send+7_936_968_269 || val(r.ServerCompletionTokens) != 193 || val(r.ServerPromptTokens) != 550 || r.ClientChunks != 193 {
		t.Errorf("record 1ed40a0d: %+v", r)
	}
	chunks := tokensOf(toks, r.RequestID)
	if len(chunks) != 193 || chunks[1] != send+1_680_543_782+134_440_792 {
		t.Fatalf("chunks: %d, second at %d", len(chunks), chunks[1]-send)
	}
	// ttft + the gaps ends where request_latency does (to rounding).
	if d := chunks[192] - r.EndNS; d < -2 || d > 2 {
		t.Errorf("last chunk %d ns from the end", d)
	}
}

// The aggregate file alone imports as one level of statistics.
func TestImportAIPerfSummary(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	run, err := Import(samples+"aiperf/run1/profile_export_aiperf.json", dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rows := runtest.Table[rundir.LevelStatsRow](t, dir, rundir.TableLevelStats)
	// AIPerf's own figures (its console and CSV export show the same); its
	// 11 error requests are all its own cancellations (error_summary:
	// RequestCancellationError, --request-cancellation-rate 10).
	want := rundir.LevelStatsRow{Concurrency: 100, RequestsOK: 89, Incomplete: 11, OutputTokPerS: 2320.7222350404572,
		WindowS: 9.317788951, RequestsPerS: 9.551622221540914, MeanPromptTokens: 550, MeanOutputTokens: 242.96629213483146,
		TTFTP50S: 2.369317693, TTFTP90S: 3.7969311679999995, TTFTP99S: 3.8333894000399997,
		TPOTP50S: 0.027615130366666667, TPOTP90S: 0.03287232279340302, TPOTP99S: 0.03373224787406911,
		ITLP50S: 0.022673047999999998, ITLP90S: 0.024875479600000003, ITLP99S: 0.14053429475999998,
		E2EP50S: 9.097345014999998, E2EP90S: 9.2775984794, E2EP99S: 9.297609933759999, PercentileMethod: AIPerfPercentileMethod}
	if len(rows) != 1 || rows[0] != want {
		t.Fatalf("level_stats %+v\nwant %+v", rows, want)
	}
	if want := time.Date(2025, 10, 3, 13, 13, 39, 146443000, time.UTC); !run.Manifest.StartTime.Equal(want) {
		t.Errorf("start %v", run.Manifest.StartTime)
	}
}

// GenAI-Perf's own unit-test fixture (OpenAI chat): the role-only first
// response, the empty last delta and [DONE] are not tokens, as in
// GenAI-Perf, so TTFT is 5-1 and 7-2 ns. The timestamps are not Unix times,
// so the run is anchored at --date.
func TestImportGenAIPerfOpenAI(t *testing.T) {
	at := time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC)
	run, levels, reqs, toks := importOne(t, Options{Date: at}, samples+"genai-perf/openai_profile_export.json")
	base := ns(at) - 1 // the earliest timestamp (1) lands on --date
	if run.Manifest.Engine.Model != "llama-2-7b" || run.Manifest.Workload.Endpoint != "chat" || len(levels) != 1 || levels[0].Concurrency != 10 {
		t.Fatalf("manifest %+v levels %+v", run.Manifest.Engine, levels)
	}
	want := []struct {
		send, first, end int64
		chunks           []int64
	}{
		{1, 5, 12, []int64{5, 8, 12}},
		{2, 7, 15, []int64{7, 11, 15}},
	}
	for i, w := range want {
		r := reqs[i]
		if r.SendNS != base+w.send || val(r.FirstTokenNS) != base+w.first || r.EndNS != base+w.end || r.ClientChunks != 3 ||
			r.ServerCompletionTokens != nil || r.Status != rundir.StatusOK {
			t.Errorf("request %d: %+v", i, r)
		}
		var rel []int64
		for _, c := range tokensOf(toks, r.RequestID) {
			rel = append(rel, c-base)
		}
		if !slices.Equal(rel, w.chunks) {
			t.Errorf("request %d chunks %v, want %v", i, rel, w.chunks)
		}
	}
}

// GenAI-Perf's Triton fixture has a concurrency and a request-rate
// experiment: a closed-loop and an open-loop run.
func TestImportGenAIPerfTritonTwoExperiments(t *testing.T) {
	at := time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC)
	dir := filepath.Join(t.TempDir(), "runs")
	runs, err := ImportAll([]string{samples + "genai-perf/triton_profile_export.json"}, dir, Options{Date: at})
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 2 || runs[0].Dir != filepath.Join(dir, "closed-loop") || runs[1].Dir != filepath.Join(dir, "open-loop") ||
		runs[0].Manifest.Workload.Mode != "closed" || runs[1].Manifest.Workload.Mode != "open" {
		t.Fatalf("runs %v", runs)
	}
	closed, err := rundir.ReadTable[rundir.LevelRow](runs[0].Dir, rundir.TableLevels)
	if err != nil || len(closed) != 1 || closed[0].Concurrency != 10 {
		t.Fatalf("closed-loop levels %+v %v", closed, err)
	}
	levels, err := rundir.ReadTable[rundir.LevelRow](runs[1].Dir, rundir.TableLevels)
	if err != nil || len(levels) != 1 || levels[0].RateRPS != 2 {
		t.Fatalf("open-loop levels %+v %v", levels, err)
	}
	reqs := runtest.Table[rundir.RequestRow](t, runs[1].Dir, rundir.TableRequests)
	base := ns(at) - 1
	var ttft []int64
	for _, r := range reqs {
		if r.LevelIndex == 0 {
			ttft = append(ttft, val(r.FirstTokenNS)-r.SendNS)
			if r.SendNS == base+5 && r.EndNS != base+18 {
				t.Errorf("end %d", r.EndNS-base)
			}
		}
	}
	// Requests are in send order: timestamp 3 (TTFT 6-3) before 5 (7-5).
	if !slices.Equal(ttft, []int64{3, 2}) {
		t.Errorf("TTFT of the request-rate level: %v, want [3 2]", ttft)
	}
}

func TestImportGuideLLM03(t *testing.T) {
	run, levels, reqs, toks := importOne(t, Options{}, samples+"guidellm/benchmarks-0.3.json")
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	m := run.Manifest
	if m.Engine.Model != "Qwen/Qwen2.5-0.5B-Instruct" || !m.StartTime.Equal(t0) || !slices.Equal(m.Workload.Levels, []int{1, 2}) {
		t.Fatalf("manifest %+v start %v levels %v", m.Engine, m.StartTime, m.Workload.Levels)
	}
	if len(levels) != 2 || levels[0].Concurrency != 1 || levels[1].Concurrency != 2 || levels[1].Errors != 1 || len(toks) != 0 {
		t.Fatalf("levels %+v, %d token rows", levels, len(toks))
	}
	r := reqs[0]
	if r.RequestID != run.Manifest.RunID+"-r0" || r.SendNS != ns(t0) || val(r.FirstTokenNS) != ns(t0)+50_000_000 || r.EndNS != ns(t0)+91_000_000 ||
		val(r.ServerCompletionTokens) != 5 || val(r.ServerPromptTokens) != 128 {
		t.Errorf("r0: %+v", r)
	}
	var errored rundir.RequestRow
	for _, r := range reqs {
		if r.RequestID == run.Manifest.RunID+"-r4" {
			errored = r
		}
	}
	if errored.Status != rundir.StatusTimeout || errored.FirstTokenNS != nil || !strings.HasPrefix(errored.Error, "TimeoutError") {
		t.Errorf("r4: %+v", errored)
	}
}

func TestImportGuideLLM04(t *testing.T) {
	run, levels, reqs, _ := importOne(t, Options{}, samples+"guidellm/benchmarks-0.4.json")
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	if run.Manifest.Source.Tool != "guidellm 0.4.0 (benchmarks.json)" || run.Manifest.Workload.Mode != "open" ||
		len(levels) != 1 || levels[0].RateRPS != 2 || levels[0].Concurrency != 0 {
		t.Fatalf("tool %q levels %+v", run.Manifest.Source.Tool, levels)
	}
	r := reqs[1]
	if r.RequestID != run.Manifest.RunID+"-n1" || r.SendNS != ns(t0)+500_000_000 || val(r.FirstTokenNS) != ns(t0)+600_000_000 ||
		r.EndNS != ns(t0)+640_000_000 || val(r.ServerCompletionTokens) != 3 {
		t.Errorf("n1: %+v", r)
	}
}

// Several files of one tool are levels of one run.
func TestImportFilesMerge(t *testing.T) {
	data, err := os.ReadFile(samples + "vllm/detailed-0.11.json")
	if err != nil {
		t.Fatal(err)
	}
	four := filepath.Join(t.TempDir(), "c4.json")
	os.WriteFile(four, []byte(strings.Replace(string(data), `"max_concurrency": 2`, `"max_concurrency": 4`, 1)), 0o644)
	run, levels, reqs, _ := importOne(t, Options{}, four, samples+"vllm/detailed-0.11.json")
	if len(levels) != 2 || levels[0].Concurrency != 2 || levels[1].Concurrency != 4 || len(reqs) != 8 ||
		!strings.Contains(run.Manifest.Source.File, "; ") || strings.Count(run.Manifest.Source.SHA256, "; ") != 1 {
		t.Fatalf("levels %+v, %d requests, source %+v", levels, len(reqs), run.Manifest.Source)
	}
}

func TestImportErrorsNameTheFile(t *testing.T) {
	tmp := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	vllm := `{"date": "20250101-000000", "duration": 1, "completed": 1, "output_throughput": 1, "request_rate": "inf",` +
		` "max_concurrency": 1, "ttfts": [0.1], "itls": [[0.1]], "input_lens": [1], "output_lens": [2, 3]}`
	cases := []struct {
		name    string
		paths   []string
		message string
	}{
		{"truncated jsonl", []string{write("a.jsonl", `{"metadata": {"timestamp_ns": 1}, "metrics": {}, "error": null}`+"\n"+`{"metadata": {"timest`)}, "line 2"},
		{"arrays of different lengths", []string{write("v.json", vllm)}, `"output_lens" has 2`},
		{"no start time", []string{write("b.jsonl", `{"metadata": {}, "metrics": {}, "error": null}`)}, "line 1: metadata has neither"},
		{"pooling", []string{write("p.json", `{"duration": 1, "completed": 1, "request_throughput": 1, "model_id": "e"}`)}, "pooling (embedding) benchmark"},
		{"two configurations", []string{samples + "vllm/detailed-0.11.json", samples + "vllm/detailed-benchmark_serving-0.6.json"}, "the files hold 2 runs (model=Llama-3.1-8B-Instruct"},
		{"two tools", []string{samples + "vllm/detailed-0.11.json", samples + "guidellm/benchmarks-0.4.json"}, "import files of one tool"},
		{"empty dir", []string{tmp + "/nothing"}, "no such file"},
	}
	for _, c := range cases {
		_, err := ImportFiles(c.paths, filepath.Join(t.TempDir(), "run"), Options{})
		if err == nil || !strings.Contains(err.Error(), c.message) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.message)
			continue
		}
		if len(c.paths) == 1 && !strings.Contains(err.Error(), c.paths[0]) {
			t.Errorf("%s: error %q does not name %s", c.name, err, c.paths[0])
		}
	}
}

func TestPythonJSON(t *testing.T) {
	in := `{"a": NaN, "b": [Infinity, -Infinity], "c": "NaN and Infinity stay in strings \" NaN", "d": 1}`
	want := `{"a": null, "b": [null, null], "c": "NaN and Infinity stay in strings \" NaN", "d": 1}`
	if got := string(pythonJSON([]byte(in))); got != want {
		t.Errorf("pythonJSON:\n got %s\nwant %s", got, want)
	}
}

func FuzzImportFormats(f *testing.F) {
	for _, name := range []string{
		"vllm/detailed-0.11.json", "vllm/detailed-benchmark_serving-0.6.json", "vllm/aggregate-append.json",
		"aiperf/run1/profile_export.jsonl", "aiperf/run1/profile_export_aiperf.json",
		"genai-perf/openai_profile_export.json", "genai-perf/triton_profile_export.json",
		"guidellm/benchmarks-0.3.json", "guidellm/benchmarks-0.4.json",
	} {
		data, err := os.ReadFile(samples + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		kind, err := Detect(data)
		if err != nil || kind == KindSeedRoofline || kind == KindSeedSweep {
			return
		}
		f := fileRef{path: "fuzz.json", data: data, modTime: time.Unix(1e9, 0)}
		if f.decode() != nil {
			return
		}
		srcs, err := parseSweep(kind, f, Options{})
		if err != nil {
			return
		}
		for _, s := range srcs {
			for _, l := range s.levels {
				for _, r := range l.requests {
					if r.status == "" {
						t.Fatalf("request without a status: %+v", r)
					}
				}
			}
		}
	})
}

// guidellm kept a sample of the requests (--output-sampling): their
// throughput would be understated, so guidellm's own statistics are used.
func TestImportGuideLLMSampled(t *testing.T) {
	report := `{"benchmarks": [{"type_": "generative_benchmark", "args": {"strategy": {"type_": "concurrent", "streams": 8}},
	  "start_time": 1735689600.0, "end_time": 1735689660.0,
	  "request_totals": {"successful": 500, "incomplete": 0, "errored": 2, "total": 502},
	  "requests": {"successful": [{"request_id": "s", "prompt_tokens": 10, "output_tokens": 5, "start_time": 1735689600.0,
	      "first_token_time": 1735689600.1, "last_token_time": 1735689600.2, "end_time": 1735689600.2}], "incomplete": [], "errored": []},
	  "metrics": {"output_tokens_per_second": {"successful": {"mean": 812.5}},
	    "time_to_first_token_ms": {"successful": {"median": 95.0, "percentiles": {"p99": 240.0}}},
	    "inter_token_latency_ms": {"successful": {"median": 12.5, "percentiles": {"p99": 19.0}}},
	    "request_latency": {"successful": {"median": 1.7}}}}]}`
	src := filepath.Join(t.TempDir(), "benchmarks.json")
	os.WriteFile(src, []byte(report), 0o644)
	dir := filepath.Join(t.TempDir(), "run")
	run, err := Import(src, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rows := runtest.Table[rundir.LevelStatsRow](t, dir, rundir.TableLevelStats)
	want := rundir.LevelStatsRow{Concurrency: 8, RequestsOK: 500, Errors: 2, OutputTokPerS: 812.5, TTFTP50S: 0.095, TTFTP99S: 0.240,
		TPOTP50S: 0.0125, TPOTP99S: 0.019, E2EP50S: 1.7, PercentileMethod: GuideLLMPercentileMethod}
	if len(rows) != 1 || rows[0] != want || rundir.HasTable(dir, rundir.TableRequests) {
		t.Fatalf("level_stats %+v\nwant %+v", rows, want)
	}
	if !slices.ContainsFunc(run.Manifest.Source.Lacks, func(s string) bool { return strings.Contains(s, "only a sample") }) {
		t.Errorf("lacks %v", run.Manifest.Source.Lacks)
	}
}

// AIPerf records without profile_export_aiperf.json beside them: the
// concurrency is the peak in flight, and the manifest says so.
func TestImportAIPerfRecordsAlone(t *testing.T) {
	data, err := os.ReadFile(samples + "aiperf/run1/profile_export.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "profile_export.jsonl")
	os.WriteFile(src, data, 0o644)
	run, levels, _, _ := importOne(t, Options{}, src)
	// The two completed requests overlap; the cancelled one ends as it starts.
	if len(levels) != 1 || levels[0].Concurrency != 2 {
		t.Fatalf("levels %+v", levels)
	}
	if !slices.ContainsFunc(run.Manifest.Notes, func(s string) bool { return strings.Contains(s, "largest number of requests in flight") }) ||
		!slices.ContainsFunc(run.Manifest.Source.Lacks, func(s string) bool { return strings.Contains(s, "load setting") }) {
		t.Errorf("notes %v lacks %v", run.Manifest.Notes, run.Manifest.Source.Lacks)
	}
}

// Credentials in an imported file's command line or URL stay out of the
// run: AIPerf records its whole command, guidellm its target URL.
func TestImportKeepsSecretsOut(t *testing.T) {
	const key, token, password = "sk-import-secret-4242", "Zq8vK1mX2pL7rT4wY9nB3cD6fG5hJ0sQ", "hunter2pw"
	data, err := os.ReadFile(samples + "aiperf/run1/profile_export_aiperf.json")
	if err != nil {
		t.Fatal(err)
	}
	cmd := `aiperf profile -m \"openai/gpt-oss-20b\" --url \"localhost:9000\" --streaming --num-requests 100 --concurrency 100 --endpoint-type \"chat\" --osl 250 --request-cancellation-rate 10`
	if !bytes.Contains(data, []byte(cmd)) {
		t.Fatal("the AIPerf sample changed")
	}
	data = bytes.Replace(data, []byte(cmd), []byte(cmd+` --api-key `+key+` --header \"Authorization: Bearer `+token+`\"`), 1)
	data = bytes.Replace(data, []byte(`"url": "localhost:9000"`), []byte(`"url": "http://user:`+password+`@localhost:9000"`), 1)
	src := filepath.Join(t.TempDir(), "profile_export_aiperf.json")
	os.WriteFile(src, data, 0o644)
	dir := filepath.Join(t.TempDir(), "run")
	run, err := Import(src, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	manifest, _ := os.ReadFile(filepath.Join(dir, rundir.ManifestFile))
	for _, secret := range []string{key, token, password} {
		if bytes.Contains(manifest, []byte(secret)) {
			t.Errorf("manifest.json contains %q", secret)
		}
	}
	notes := strings.Join(run.Manifest.Notes, "\n")
	if !strings.Contains(notes, "--api-key <redacted>") || !strings.Contains(notes, "Authorization: <redacted>") {
		t.Errorf("notes %q", notes)
	}
}

// AIPerf's config files name the load per phase, as a list or (in other
// versions) a map by name. The one phase in the results decides; warm-up
// is not in them; several phases in the results mix their loads.
func TestAIPerfProfilingPhase(t *testing.T) {
	for _, tt := range []struct {
		phases      string
		concurrency int64
		rate        float64
		problem     bool
	}{
		{`[{"name":"warmup","type":"concurrency","exclude_from_results":true,"requests":16,"concurrency":16},
		   {"name":"profiling","type":"concurrency","requests":96,"concurrency":16}]`, 16, 0, false},
		{`[{"type":"gamma","name":"profiling","exclude_from_results":false,"requests":8,"rate":20.0,"concurrency":4}]`, 4, 20, false},
		{`{"warmup":{"type":"poisson","rate":5,"exclude_from_results":true},"main":{"type":"poisson","rate":10}}`, 0, 10, false},
		{`[{"name":"a","type":"concurrency","concurrency":1},{"name":"b","type":"concurrency","concurrency":8}]`, 0, 0, true},
		{`[{"name":"w","kind":"warmup","type":"concurrency","concurrency":2},{"name":"p","kind":"profiling","type":"concurrency","concurrency":8}]`, 8, 0, false},
		{`"not phases"`, 0, 0, false},
		{``, 0, 0, false},
	} {
		c, r, problem := profilingPhase(json.RawMessage(tt.phases))
		if c != tt.concurrency || r != tt.rate || (problem != "") != tt.problem {
			t.Errorf("%s: concurrency %d, rate %g, problem %q; want %d, %g, problem %v", tt.phases, c, r, problem, tt.concurrency, tt.rate, tt.problem)
		}
	}
}
