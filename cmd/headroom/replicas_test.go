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
	e0 := testengine.Start(t, testengine.Options{Sequences: 2, CtxPerSeq: 256})
	e1 := testengine.Start(t, testengine.Options{Sequences: 2, CtxPerSeq: 256})
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
			t.Errorf("level %s: the replicas' requests add to %d (shares %.3f), the set measured %d", l.Load, sum, share, l.Requests)
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
