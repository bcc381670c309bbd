package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

const logFixtures = "../../testdata/serverlogs/"

func TestInspectLog(t *testing.T) {
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{logFixtures + "vllm-0.6.4.post1-serve-enginedead.log", "--year", "2024"}, []string{
			"vllm (detected), engine V0", "0.6.4.post1", "meta-llama/Llama-3.2-1B",
			"65 read: 23 events, 38 ignored, 4 unknown, 0 bad",
			"2024-12-06 14:07:37 UTC .. 2024-12-06 14:09:39 UTC",
			"kv_cache_blocks_gpu      7366", "max_concurrency          1.12",
			"gpu_memory_utilization   0.95", // non-default argument
			"engine_dead              2", "first error              line 58: LLVM ERROR",
		}},
		{[]string{logFixtures + "vllm-0.5.0-offline-swap-preemption.log"}, []string{
			"151 (the engine's running total); 1 lines: swap 1", "KV cache usage max       99.2% (line 1)",
			"waiting max              9832 (line 1)", "swapped max              137 (line 3)",
			"06-16 21:24:15 .. 06-16 21:24:20 (no year in the log: pass --year)",
		}},
		{[]string{logFixtures + "sglang-0.5.18-startup-retract.log", "--tz", "Asia/Seoul"}, []string{
			"sglang (detected)", "5; 5 lines: retract 5", "KV cache usage max       100.0% (line 74)", "kv_cache_tokens          87552",
			"2026-09-13 16:05:03 KST", "(zone assumed Asia/Seoul)",
		}},
		{[]string{logFixtures + "llamacpp-b7xxx-print-timing-block.log", "--engine", "llama.cpp"}, []string{
			"engine                   llamacpp\n", "1 launched, 1 released", "prompt eval              1360 tokens in 5.1 s (267.0 tok/s)",
			"generation               10 tokens in 0.3 s (31.3 tok/s)", "HTTP responses           200: 1",
		}},
	}
	for _, tt := range tests {
		inspectLogWants(t, tt.args, tt.want)
	}
}

// inspectLogWants runs inspect-log with args and checks its output holds
// every want.
func inspectLogWants(t *testing.T, args, want []string) {
	t.Helper()
	code, out, errs := headroom(t, append([]string{"inspect-log"}, args...)...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, errs)
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%v: output lacks %q:\n%s", args, w, out)
		}
	}
}

func TestInspectLogJSON(t *testing.T) {
	code, out, errs := headroom(t, "inspect-log", "--json", logFixtures+"node-llama-cpp-3.21.1-preemptions.log")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, w := range []string{`"Engine": "node-llama-cpp"`, `"Preemptions": 7`, `"context_exceeded": 1`} {
		if !strings.Contains(out, w) {
			t.Errorf("JSON lacks %s:\n%s", w, out)
		}
	}
}

// The verdict a log or a /metrics dump alone supports: printed with its
// evidence line, and the top-level "wall" of --json.
func TestInspectLogVerdict(t *testing.T) {
	tests := []struct {
		args []string
		wall string
		want []string
	}{
		{[]string{logFixtures + "vllm-0.5.0-offline-swap-preemption.log"}, "kv_cache",
			[]string{"wall                     KV cache", "line 2: WARNING 06-16 21:24:15 scheduler.py:1089] Sequence group 165 is preempted", "cannot tell"}},
		{[]string{logFixtures + "vllm-0.10.1.1-v1-a100-7b-c500-maxseqs-waiting.log"}, "queueing",
			[]string{"up to 242 requests waiting in the engine", "the clients' per-request latencies"}},
		{[]string{logFixtures + "sglang-0.4.4-largest-len-draining.log"}, "compute",
			[]string{"compute (unconfirmed: GPU telemetry would confirm it)", "up to 509 requests running at once"}},
		{[]string{logFixtures + "vllm-0.6.4.post1-serve-enginedead.log", "--year", "2024"}, "engine_error",
			[]string{"engine error", "the engine failed"}},
		{[]string{"../../testdata/metrics/sglang-docs-llama31-8b.txt"}, "queueing",
			[]string{"metrics dump: ../../testdata/metrics/sglang-docs-llama31-8b.txt", "waiting max              2,826", "up to 2,826 requests waiting"}},
		{[]string{logFixtures + "vllm-0.10.1.1-v1-gptoss120b-4node-idle.log", "--metrics", "../../testdata/metrics/node-llama-cpp-3.21.1.txt"}, "kv_cache",
			[]string{"metrics dump: ../../testdata/metrics/node-llama-cpp-3.21.1.txt", "7 preemptions (nodellama:num_preemptions_total)"}},
	}
	for _, tt := range tests {
		inspectLogWants(t, tt.args, tt.want)
		code, out, errs := headroom(t, append([]string{"inspect-log", "--json"}, tt.args...)...)
		if code != 0 {
			t.Fatalf("%v --json: exit %d: %s", tt.args, code, errs)
		}
		if want := `{
  "wall": "` + tt.wall + `",`; !strings.HasPrefix(out, want) {
			t.Errorf("%v --json starts %q, want %q", tt.args, out[:min(len(out), 60)], want)
		}
	}
}

// headroom report takes a bare log or dump as a run without a sweep.
func TestReportBareLogAndDump(t *testing.T) {
	out := t.TempDir()
	code, _, errs := headroom(t, "report", "-o", out, "--format", "md", logFixtures+"vllm-0.5.0-offline-swap-preemption.log", "../../testdata/metrics/sglang-docs-llama31-8b.txt")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"### The wall this file alone supports", "**Wall hit:** KV cache", "**Wall hit:** queueing",
		"Sequence group 165 is preempted", "the server log or /metrics dump alone supports"} {
		if !strings.Contains(string(md), w) {
			t.Errorf("report.md lacks %q", w)
		}
	}
	if strings.Contains(string(md), "did not scrape") {
		t.Error("report.md says /metrics was not scraped though a dump was given")
	}
}

func TestInspectLogErrors(t *testing.T) {
	unknown := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(unknown, []byte("hello\nworld\n"), 0o644)
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"inspect-log", "/nonexistent/server.log"}, 1, "/nonexistent/server.log"},
		{[]string{"inspect-log", unknown}, 1, "name it with --engine"},
		{[]string{"inspect-log", "--engine", "tgi", unknown}, 2, "--engine"},
		{[]string{"inspect-log", "--tz", "Mars/Olympus", unknown}, 2, "--tz"},
		{[]string{"inspect-log"}, 2, "accepts 1 arg"},
	}
	for _, tt := range tests {
		code, _, errs := headroom(t, tt.args...)
		if code != tt.code || !strings.Contains(errs, tt.want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q on one line", tt.args, code, errs, tt.code, tt.want)
		}
	}
}

// A run directory: the year comes from the manifest's start time and the
// lines are aligned with the server_log_lines table.
func TestInspectLogRunDir(t *testing.T) {
	dir := t.TempDir()
	log, err := os.ReadFile(logFixtures + "vllm-0.6.3-swap-pending.log")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.ServerLogFile), log, 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Date(2024, time.October, 28, 11, 0, 0, 0, time.UTC)
	m := &rundir.Manifest{FormatVersion: rundir.FormatVersion, Kinds: []string{rundir.KindSweep}, StartTime: start,
		Engine: &rundir.Engine{Name: "vllm"}}
	if err := rundir.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	// the client got each line 1.5 s after the engine's stamp
	stamps := []time.Time{time.Date(2024, 10, 28, 11, 16, 34, 0, time.UTC), time.Date(2024, 10, 28, 11, 16, 39, 0, time.UTC)}
	var rows []rundir.ServerLogLineRow
	for i, s := range stamps {
		rows = append(rows, rundir.ServerLogLineRow{Line: int64(i + 1), RecvNS: s.Add(1500 * time.Millisecond).UnixNano()})
	}
	if err := rundir.WriteTable(dir, rundir.TableServerLogLines, rows); err != nil {
		t.Fatal(err)
	}
	code, out, errs := headroom(t, "inspect-log", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, w := range []string{"engine                   vllm, engine V0 (from the shape of its lines)\n", "2024-10-28 11:16:34 UTC .. 2024-10-28 11:16:39 UTC", "lines arrived 1.5s after their stamp (median of 2)", "waiting max              98"} {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}
