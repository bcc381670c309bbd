package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/collect/sweep"
	"github.com/headroom-llm/headroom/internal/fakeserver"
	"github.com/headroom-llm/headroom/rundir"
)

// recordingServer streams max_tokens "a" tokens for any completion request
// and keeps every generation request's path, headers and body.
type recordingServer struct {
	*httptest.Server
	mu      sync.Mutex
	paths   []string
	headers []http.Header
	bodies  []map[string]any
}

func newRecordingServer(t *testing.T) *recordingServer {
	rs := &recordingServer{}
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v1/models":
			fmt.Fprint(w, `{"data":[{"id":"tiny","owned_by":"vllm"}]}`)
		case strings.HasSuffix(r.URL.Path, "/completions"):
			var body map[string]any
			data, _ := io.ReadAll(r.Body)
			_ = json.Unmarshal(data, &body)
			rs.mu.Lock()
			rs.paths, rs.headers, rs.bodies = append(rs.paths, r.URL.Path), append(rs.headers, r.Header.Clone()), append(rs.bodies, body)
			rs.mu.Unlock()
			n := 1
			if v, ok := body["max_tokens"].(float64); ok {
				n = int(v)
			}
			fakeserver.Stream(w, r, fakeserver.Reply{Tokens: n, PromptTokens: 10, Chat: strings.HasSuffix(r.URL.Path, "/chat/completions")})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(rs.Close)
	return rs
}

// vllm bench serve's command line works as it is: its names for the
// request count, the concurrency, the lengths and the warm-up, --header,
// the sampling parameters, --metadata, and --endpoint as a path. The
// header's value is sent and never written to the run.
func TestSweepTakesVLLMBenchFlags(t *testing.T) {
	rs := newRecordingServer(t)
	dir := filepath.Join(t.TempDir(), "run")
	code, _, errs := headroom(t, "sweep", "--base-url", rs.URL, "--endpoint", "/v1/chat/completions",
		"--num-prompts", "5", "--max-concurrency", "2", "--random-input-len", "40", "--random-output-len", "3",
		"--num-warmups", "1", "--header", "X-Tenant=secret-tenant-value", "--top-p", "0.9", "--top-k", "5",
		"--metadata", "tp=1", "--ignore-eos", "--no-gpu", "--metrics-interval", "0", "-o", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	reqs, _ := rundir.ReadTable[rundir.RequestRow](dir, rundir.TableRequests)
	levels, _ := rundir.ReadTable[rundir.LevelRow](dir, rundir.TableLevels)
	if len(reqs) != 6 || len(levels) != 1 || levels[0].Concurrency != 2 || levels[0].Requests != 5 {
		t.Fatalf("%d requests, levels %+v", len(reqs), levels)
	}
	for _, r := range reqs {
		if r.OutputTokensTarget != 3 || r.PromptTokensTarget != 40 || r.Endpoint != "chat" {
			t.Errorf("request %+v", r)
		}
	}
	rs.mu.Lock()
	for i, b := range rs.bodies {
		if rs.paths[i] != "/v1/chat/completions" || rs.headers[i].Get("X-Tenant") != "secret-tenant-value" ||
			b["top_p"] != 0.9 || b["top_k"] != 5.0 || b["ignore_eos"] != true {
			t.Errorf("request %d to %s: headers %v body %v", i, rs.paths[i], rs.headers[i], b)
		}
	}
	rs.mu.Unlock()
	m, _ := os.ReadFile(filepath.Join(dir, rundir.ManifestFile))
	var man rundir.Manifest
	_ = json.Unmarshal(m, &man)
	if bytes.Contains(m, []byte("secret-tenant-value")) || !slices.Contains(man.Tags, "tp=1") ||
		fmt.Sprint(man.Workload.Headers) != "[X-Tenant]" || man.Workload.ExtraBody["top_k"] != 5.0 {
		t.Errorf("manifest: tags %v headers %v extra %v (value kept: %v)", man.Tags, man.Workload.Headers, man.Workload.ExtraBody,
			bytes.Contains(m, []byte("secret-tenant-value")))
	}
}

// vllm bench's random dataset lengths: --random-range-ratio makes both
// lengths uniform around their value, --random-prefix-len comes on top of
// the input length as a shared prefix; --request-rate inf is the closed
// loop and a number the open loop; --host/--port make the address.
func TestSweepVLLMLengthsAndRate(t *testing.T) {
	rs := newRecordingServer(t)
	port := strings.TrimPrefix(rs.URL, "http://127.0.0.1:")
	for _, tc := range []struct {
		args  []string
		check func(*rundir.Workload) bool
	}{
		{[]string{"--random-input-len", "100", "--random-output-len", "10", "--random-range-ratio", "0.5", "--random-prefix-len", "20", "--request-rate", "inf", "--max-concurrency", "2"},
			func(w *rundir.Workload) bool {
				return w.Mode == "closed" && w.Prompt.Kind == "uniform" && w.Prompt.Min == 70 && w.Prompt.Max == 170 &&
					w.Output.Min == 5 && w.Output.Max == 15 && w.SharedPrefixTokens == 20 && fmt.Sprint(w.Levels) == "[2]"
			}},
		{[]string{"--request-rate", "50", "--max-concurrency", "8", "--burstiness", "0.5", "--random-output-len", "2"},
			func(w *rundir.Workload) bool {
				return w.Mode == "open" && fmt.Sprint(w.RatesRPS) == "[50]" && w.MaxConcurrency == 8 && w.Burstiness == 0.5
			}},
	} {
		dir := filepath.Join(t.TempDir(), "run")
		args := append([]string{"sweep", "--host", "127.0.0.1", "--port", port, "--num-prompts", "4", "--num-warmups", "0",
			"--no-gpu", "--metrics-interval", "0", "-o", dir}, tc.args...)
		code, _, errs := headroom(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errs)
		}
		m, err := rundir.ReadManifest(dir)
		if err != nil || !tc.check(m.Workload) {
			t.Errorf("%v: workload %+v (%v)", tc.args, m.Workload, err)
		}
	}
}

// A mistyped flag gets the nearest names, vllm bench's included; bad
// values of the vllm flags are one-line usage errors.
func TestSweepFlagSuggestions(t *testing.T) {
	for args, want := range map[string]string{
		"--num-promts 5":       "did you mean --num-prompts?",
		"--max-concurency 4":   "did you mean --max-concurrency?",
		"--concurency 4":       "did you mean --concurrency?",
		"--find-maximum":       "did you mean --find-max",
		"--requests-per-lvl 3": "did you mean --requests-per-level?",
	} {
		code, _, errs := headroom(t, append([]string{"sweep"}, strings.Fields(args)...)...)
		if code != 2 || !strings.Contains(errs, want) {
			t.Errorf("%s: exit %d, stderr %q; want %q", args, code, errs, want)
		}
	}
	for _, args := range [][]string{
		{"sweep", "--request-rate", "fast"},
		{"sweep", "--backend", "tgi"},
		{"sweep", "--goodput", "ttft=2000"},
		{"sweep", "--goodput", "ttft:2000"}, // an SLO without --find-max
		{"sweep", "--random-range-ratio", "1.5"},
		{"sweep", "--find-max"},
		{"sweep", "--slo", "ttft_p99=1s"},
		{"sweep", "--find-max", "--slo", "ttft_p99=1s", "--concurrency", "1,2"},
		{"sweep", "--header", "novalue"},
		{"sweep", "--extra-body", "[1]"},
		{"sweep", "--extra-body", `{"max_tokens":3}`},
		{"sweep", "--endpoint", "/v1/embeddings"},
		{"sweep", "--percentile-metrics", "ttft,latency"},
		{"sweep", "--metric-percentiles", "50,150"},
	} {
		code, _, errs := headroom(t, args...)
		if code != 2 || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line", args, code, errs)
		}
	}
}

// The progress line tells the time left in the level and, with the levels
// known ahead, in the sweep: the measured rate so far for this level and
// the closed-loop levels to come, the arrivals for open-loop ones.
func TestProgressETA(t *testing.T) {
	var b bytes.Buffer
	p := newProgressPrinter(&b)
	p.planned = func() []sweep.PlannedLevel {
		return []sweep.PlannedLevel{{Index: 0, Concurrency: 1, Requests: 110}, {Index: 1, Concurrency: 2, Requests: 110},
			{Index: 2, RateRPS: 10, Requests: 200}, {Index: 3, Duration: time.Minute}}
	}
	p.update(sweep.Progress{LevelIndex: 0, Levels: 4, Concurrency: 1, Phase: "measure", Done: 50, Total: 100, Elapsed: 10 * time.Second})
	// 50 left at 5/s: 10 s; then 110 at 5/s (22 s), 200 at 10/s (20 s), 60 s.
	if got := b.String(); !strings.Contains(got, "eta 10s (sweep ~1m52s)") {
		t.Errorf("progress %q", got)
	}
	b.Reset()
	p = newProgressPrinter(&b)
	p.update(sweep.Progress{LevelIndex: 4, Concurrency: 8, Phase: "measure", Done: 10, Total: 100, Elapsed: 5 * time.Second})
	if got := b.String(); !strings.Contains(got, "level 5 c=8") || !strings.Contains(got, "eta 45s") || strings.Contains(got, "sweep ~") {
		t.Errorf("a search's progress %q", got)
	}
}

// A ShareGPT file given to --dataset is read as ShareGPT (it used to fail
// with a Go type in the message); vllm bench's --dataset-name and
// --dataset-path work; a broken file is one line naming the file and the
// place; --dataset-name random with a file is refused, as vllm bench does.
func TestSweepDatasetFlags(t *testing.T) {
	rs := newRecordingServer(t)
	const sharegpt = "../../testdata/datasets/sharegpt-excerpt.json"
	for _, args := range [][]string{
		{"--dataset", sharegpt},
		{"--dataset-name", "sharegpt", "--dataset-path", sharegpt, "--sharegpt-output-len", "5"},
	} {
		dir := filepath.Join(t.TempDir(), "run")
		code, _, errs := headroom(t, append([]string{"sweep", "--base-url", rs.URL, "--concurrency", "2", "--num-prompts", "4",
			"--num-warmups", "0", "--no-gpu", "--metrics-interval", "0", "-o", dir}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errs)
		}
		m, _ := rundir.ReadManifest(dir)
		ds := m.Workload.DatasetSample
		if ds == nil || ds.Format != "sharegpt" || ds.Used != 4 || !strings.Contains(ds.Tokenizer, "4 bytes per token") {
			t.Errorf("%v: dataset sample %+v", args, ds)
		}
		reqs, _ := rundir.ReadTable[rundir.RequestRow](dir, rundir.TableRequests)
		for _, r := range reqs {
			if override := len(args) > 2; override && r.OutputTokensTarget != 5 || !override && r.OutputTokensTarget == 128 {
				t.Errorf("%v: request %s asked for %d tokens", args, r.RequestID, r.OutputTokensTarget)
			}
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`[{"id": "x", "conversations": "not a list"}]`), 0o644)
	for args, want := range map[string]string{
		"--dataset " + bad: bad + `: entry 0: "conversations" is not a list`,
		"--dataset-name random --dataset-path " + sharegpt: "--dataset-name random generates its prompts",
		"--dataset-name sharegpt":                          "needs the file",
		"--dataset-name parquet --dataset-path x":          `"--dataset-name" flag`,
	} {
		code, _, errs := headroom(t, append([]string{"sweep", "--base-url", rs.URL, "--no-gpu", "--metrics-interval", "0",
			"-o", filepath.Join(t.TempDir(), "run")}, strings.Fields(args)...)...)
		if code == 0 || !strings.Contains(errs, want) || strings.Contains(errs, "sweep.") {
			t.Errorf("%s: exit %d, stderr %q; want %q", args, code, errs, want)
		}
	}
}

// --trace replays a trace from the command line: every request once per
// --trace-speed, at most --concurrency in flight, its lengths cut to
// --max-model-len.
func TestSweepTraceFlags(t *testing.T) {
	rs := newRecordingServer(t)
	dir := filepath.Join(t.TempDir(), "run")
	code, _, errs := headroom(t, "sweep", "--base-url", rs.URL, "--trace", "../../testdata/traces/mooncake-conversation-head29.jsonl",
		"--trace-speed", "20,40", "--concurrency", "8", "--max-model-len", "64", "--no-gpu", "--metrics-interval", "0", "-o", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	m, _ := rundir.ReadManifest(dir)
	w := m.Workload
	if w.Trace == nil || w.Trace.Rows != 29 || fmt.Sprint(w.Trace.Speeds) != "[20 40]" || w.MaxConcurrency != 8 || w.MaxModelLen != 64 || len(w.RatesRPS) != 2 {
		t.Errorf("workload %+v, trace %+v", w, w.Trace)
	}
	reqs, _ := rundir.ReadTable[rundir.RequestRow](dir, rundir.TableRequests)
	if len(reqs) != 58 {
		t.Errorf("%d requests, want 29 per speed", len(reqs))
	}
	for _, r := range reqs {
		if r.PromptTokensTarget+r.OutputTokensTarget > 64 {
			t.Errorf("request %s: %d + %d tokens, over the model's 64", r.RequestID, r.PromptTokensTarget, r.OutputTokensTarget)
		}
	}
	for _, args := range [][]string{
		{"--trace", "missing.jsonl"},
		{"--trace", "../../testdata/traces/mooncake-conversation-head29.jsonl", "--rate", "2"},
		{"--trace", "../../testdata/traces/mooncake-conversation-head29.jsonl", "--find-max", "--slo", "ttft_p99=1s"},
	} {
		code, _, errs := headroom(t, append([]string{"sweep", "--base-url", rs.URL, "--no-gpu", "-o", filepath.Join(t.TempDir(), "x")}, args...)...)
		if code != 2 || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q", args, code, errs)
		}
	}
}
