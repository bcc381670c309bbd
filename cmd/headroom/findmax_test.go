package main

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/internal/testengine"
	"github.com/headroom-llm/headroom/rundir"
)

// The SLO search finds a boundary known by construction: a test engine
// with one sequence serves one request at a time, so from concurrency 2 up
// every request waits for the one before it to finish (~160 ms for 256
// tokens), while at 1 its TTFT is the prefill alone (~5 ms). With
// ttft_p90=60ms the highest passing concurrency is 1. Started at 3, the
// search must go down (3 fails, 1 passes), bisect (2 fails), find [1, 2),
// keep every probe as a level, and agree with the operating point the
// report gives for a plain sweep of every concurrency from 1 to 3.
func TestFindMaxMatchesFineSweep(t *testing.T) {
	e := testengine.Start(t, testengine.Options{Sequences: 1, CtxPerSeq: 512})
	const sloSpec = "ttft_p90=60ms"
	common := []string{"--base-url", e.BaseURL, "--requests-per-level", "15", "--warmup", "2", "--prompt-tokens", "32",
		"--output-tokens", "256", "--no-gpu", "--metrics-interval", "0", "--timeout", "1m"}
	search := filepath.Join(t.TempDir(), "search")
	code, _, errs := headroom(t, append([]string{"sweep", "--find-max", "--slo", sloSpec, "--find-max-precision", "0", "--concurrency", "3", "-o", search}, common...)...)
	if code != 0 {
		t.Fatalf("search: exit %d: %s", code, errs)
	}
	m, err := rundir.ReadManifest(search)
	if err != nil {
		t.Fatal(err)
	}
	s := m.Workload.Search
	var probed []string
	for _, p := range s.Probes {
		probed = append(probed, fmt.Sprintf("c=%d %v (ttft p90 %.1f ms)", p.Concurrency, p.Pass, p.Bounds[0].ValueS*1e3))
	}
	t.Logf("search: %v; max %v fail %v", probed, s.Max, s.Fail)
	levels, _ := rundir.ReadTable[rundir.LevelRow](search, rundir.TableLevels)
	if !m.Complete || !s.Done || s.Max != 1 || s.Fail != 2 || len(levels) != len(s.Probes) || fmt.Sprint(m.Workload.Levels) != "[3 1 2]" {
		t.Errorf("search found [%v, %v) in %d probes (levels %v, %d level rows)", s.Max, s.Fail, len(s.Probes), m.Workload.Levels, len(levels))
	}

	fine := filepath.Join(t.TempDir(), "fine")
	code, _, errs = headroom(t, append([]string{"sweep", "--concurrency", "1,2,3", "-o", fine}, common...)...)
	if code != 0 {
		t.Fatalf("fine sweep: exit %d: %s", code, errs)
	}
	run, err := analyze.Load(fine)
	if err != nil {
		t.Fatal(err)
	}
	set := analyze.Default()
	if set.SLO, err = analyze.ParseSLO(sloSpec); err != nil {
		t.Fatal(err)
	}
	rep, err := analyze.Analyze([]*analyze.Run{run}, set)
	if err != nil {
		t.Fatal(err)
	}
	g := rep.Runs[0].Sweep.Goodput
	if g.OperatingConcurrency != int(s.Max) || g.FirstFailingConcurrency != int(s.Fail) {
		t.Errorf("the fine sweep's report operates at c=%d, first failing c=%d; the search found [%v, %v)",
			g.OperatingConcurrency, g.FirstFailingConcurrency, s.Max, s.Fail)
	}
}
