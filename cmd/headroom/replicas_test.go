package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/internal/testengine"
)

// Issue 24 from the command line, against two real test engines: a sweep
// spread over both (--base-url A,B, a --server-log each) is reported as one
// set with a per-replica table whose counts add up to the set's, and
// compare puts it beside a one-server sweep of the same workload, grouped
// by layout.
func TestReplicasSweepReportCompare(t *testing.T) {
	es := testengine.StartAll(t, testengine.Options{Sequences: 2, CtxPerSeq: 256}, testengine.Options{Sequences: 2, CtxPerSeq: 256})
	e0, e1 := es[0], es[1]
	tmp := t.TempDir()
	one, set := filepath.Join(tmp, "one"), filepath.Join(tmp, "set")
	common := []string{"--concurrency", "2,4", "--requests-per-level", "8", "--warmup", "0", "--prompt-tokens", "32",
		"--output-tokens", "8", "--metrics-interval", "200ms", "--no-gpu", "--timeout", "1m"}
	if code, _, errs := headroom(t, append([]string{"sweep", "--base-url", e0.BaseURL, "--server-log", e0.LogPath, "-o", one, "--label", "one server"}, common...)...); code != 0 {
		t.Fatalf("sweep (one server): exit %d: %s", code, errs)
	}
	if code, _, errs := headroom(t, append([]string{"sweep", "--base-url", e0.BaseURL + "," + e1.BaseURL, "--server-log", e0.LogPath,
		"--server-log", e1.LogPath, "-o", set, "--label", "two replicas"}, common...)...); code != 0 {
		t.Fatalf("sweep (two replicas): exit %d: %s", code, errs)
	}
	if code, _, errs := headroom(t, "report", set); code != 0 {
		t.Fatalf("report: exit %d: %s", code, errs)
	}
	var rep analyze.Report
	data, err := os.ReadFile(filepath.Join(set, "analysis.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	sw := rep.Runs[0].Sweep
	if sw == nil || len(sw.Replicas) != 2 || sw.Balance != "least-outstanding" {
		t.Fatalf("analysis: %+v", sw)
	}
	for li, l := range sw.Levels {
		sum, share := 0, 0.0
		for _, r := range sw.Replicas {
			sum += r.Levels[li].Requests
			share += r.Levels[li].Share
		}
		if sum != l.Requests || share < 0.999 || share > 1.001 {
			t.Errorf("level %+v: the replicas' requests add to %d (shares %.3f), the set measured %d", l.Load, sum, share, l.Requests)
		}
	}
	for _, r := range sw.Replicas {
		if r.Engine != "node-llama-cpp" || r.LogFile == "" || r.Requests == 0 || r.Wall == "" {
			t.Errorf("replica %d: %+v", r.Index, r)
		}
	}
	md, _ := os.ReadFile(filepath.Join(set, "report.md"))
	for _, want := range []string{"Per replica", e0.BaseURL, e1.BaseURL, "2 servers of one model"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}

	out := filepath.Join(tmp, "cmp")
	if code, _, errs := headroom(t, "compare", one, set, "--group-by", "layout", "-o", out, "--format", "md"); code != 0 {
		t.Fatalf("compare: exit %d: %s", code, errs)
	}
	c, cmd := readComparison(t, out)
	if len(c.Groups) != 2 {
		t.Fatalf("compare --group-by layout: %d groups, want 2 (one server, 2 replicas)", len(c.Groups))
	}
	for _, want := range []string{"one server", "2 replicas"} {
		if !strings.Contains(cmd, want) {
			t.Errorf("compare.md lacks %q", want)
		}
	}
}

// Walls known by construction, per replica: replica 0 has KV cache to
// spare, replica 1 a KV budget that holds one request (150 tokens for
// requests of 64 + 32: from two at once it preempts, as the kv scenario of
// bench/verdicts.sh). Round-robin gives each half the load. The set must
// read as hitting the KV wall (replica 1's preemptions are the set's), and
// the per-replica table must put the wall on replica 1 alone.
func TestReplicaWallsByConstruction(t *testing.T) {
	es := testengine.StartAll(t, testengine.Options{Sequences: 8, CtxPerSeq: 128, KVBudgetTokens: 1024},
		testengine.Options{Sequences: 8, CtxPerSeq: 128, KVBudgetTokens: 150})
	ample, starved := es[0], es[1]
	record := func() *analyze.SweepAnalysis {
		set := filepath.Join(t.TempDir(), "set")
		if code, _, errs := headroom(t, "sweep", "--base-url", ample.BaseURL+","+starved.BaseURL, "--server-log", ample.LogPath,
			"--server-log", starved.LogPath, "--balance", "round-robin", "--concurrency", "2,4,8", "--requests-per-level", "16",
			"--warmup", "0", "--prompt-tokens", "64", "--output-tokens", "32", "--metrics-interval", "200ms", "--no-gpu",
			"--timeout", "1m", "-o", set); code != 0 {
			t.Fatalf("sweep: exit %d: %s", code, errs)
		}
		if code, _, errs := headroom(t, "report", set); code != 0 {
			t.Fatalf("report: exit %d: %s", code, errs)
		}
		var rep analyze.Report
		data, _ := os.ReadFile(filepath.Join(set, "analysis.json"))
		if err := json.Unmarshal(data, &rep); err != nil {
			t.Fatal(err)
		}
		sw := rep.Runs[0].Sweep
		if sw == nil || len(sw.Replicas) != 2 || sw.Balance != "round-robin" {
			t.Fatalf("analysis: %+v", sw)
		}
		return sw
	}
	// The construction needs a load generator with its cores: on a host
	// busy enough to starve it, the right verdict is client-bound, and the
	// scenario is recorded again (at most three times).
	sw := record()
	for attempt := 2; attempt <= 3 && sw.Diagnosis.Wall == analyze.WallClientBound; attempt++ {
		t.Logf("the host starved the load generator (load %s): recording again", loadAverage())
		sw = record()
	}
	t.Logf("set: %s; replica 0: %s (share %.2f); replica 1: %s (share %.2f)", sw.Diagnosis.Wall,
		sw.Replicas[0].Wall, sw.Replicas[0].Share, sw.Replicas[1].Wall, sw.Replicas[1].Share)
	if sw.Diagnosis.Wall != analyze.WallKVCache {
		t.Errorf("the set's wall: %s, want %s (replica 1 preempts)", sw.Diagnosis.Wall, analyze.WallKVCache)
	}
	if sw.Replicas[1].Wall != analyze.WallKVCache {
		t.Errorf("the starved replica's wall: %s, want %s", sw.Replicas[1].Wall, analyze.WallKVCache)
	}
	if sw.Replicas[0].Wall == analyze.WallKVCache {
		t.Errorf("the replica with cache to spare reads %s", sw.Replicas[0].Wall)
	}
	for _, r := range sw.Replicas {
		if r.Share < 0.45 || r.Share > 0.55 {
			t.Errorf("round-robin: replica %d took %.2f of the requests, want half", r.Index, r.Share)
		}
	}
}
