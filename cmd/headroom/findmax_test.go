package main

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/internal/runtest"
	"github.com/headroom-llm/headroom/internal/testengine"
	"github.com/headroom-llm/headroom/rundir"
	"github.com/headroom-llm/headroom/slo"
	"github.com/headroom-llm/headroom/stats"
)

// The SLO search finds a boundary known by construction, and a plain sweep
// of every concurrency shows the same one.
//
// The scenario: a test engine with one sequence serves one request at a
// time. At concurrency 1 a request starts at once: its TTFT is the prefill
// of 16 tokens. From 2 up, each request waits for the request ahead of it
// to finish all its 192 tokens. The bound is set from this machine's speed,
// not in milliseconds, so a slow or loaded machine moves both sides and the
// bound alike: a first, separate sweep measures the median TTFT at
// concurrency 1 and at 2, and the bound on the TTFT p75 is their geometric
// mean (about a factor of 4 from both: 4-10 ms against 100-200 ms in
// recordings here). p75 of 8 requests, not p99, so that a stall of the
// machine in one or two requests at concurrency 1 does not move a
// boundary fixed by construction. So the highest passing concurrency is 1.
// Started at 3, the search must halve (3 fails, 1 passes), bisect (2
// fails), find [1, 2) and keep every probe as a level.
//
// How the recordings are compared: by their verdicts and by a statistic,
// not by one number each. The search's [Max, Fail) and the report's
// operating point for the plain sweep (concurrency 1, 2, 3) must be the
// same, and in each recording the TTFTs at concurrency 2 must be larger
// than those at 1 by a Mann-Whitney U test at p < 0.01, so that the two
// sides of the boundary differ beyond chance in both, not only in one
// percentile. The p75 of each level, with its 95 % bootstrap interval, is
// logged for both recordings.
func TestFindMaxMatchesFineSweep(t *testing.T) {
	e := testengine.Start(t, testengine.Options{Sequences: 1, CtxPerSeq: 256})
	common := []string{"--base-url", e.BaseURL, "--warmup", "1", "--prompt-tokens", "16", "--output-tokens", "192",
		"--no-gpu", "--metrics-interval", "0", "--timeout", "1m"}
	calib := filepath.Join(t.TempDir(), "calib")
	if code, _, errs := headroom(t, append([]string{"sweep", "--concurrency", "1,2", "--requests-per-level", "4", "-o", calib}, common...)...); code != 0 {
		t.Fatalf("calibration: exit %d: %s", code, errs)
	}
	c := levelTTFTs(t, calib)
	if len(c[1]) == 0 || len(c[2]) == 0 {
		t.Fatalf("calibration: TTFTs %v", c)
	}
	alone, waiting := stats.Median(stats.Sorted(c[1])), stats.Median(stats.Sorted(c[2]))
	boundMS := math.Ceil(math.Sqrt(alone*waiting) * 1e3)
	boundS, sloSpec := boundMS/1e3, fmt.Sprintf("ttft_p75=%gms", boundMS)
	common = append(common, "--requests-per-level", "8")

	fine := filepath.Join(t.TempDir(), "fine")
	if code, _, errs := headroom(t, append([]string{"sweep", "--concurrency", "1,2,3", "-o", fine}, common...)...); code != 0 {
		t.Fatalf("fine sweep: exit %d: %s", code, errs)
	}
	search := filepath.Join(t.TempDir(), "search")
	code, _, errs := headroom(t, append([]string{"sweep", "--find-max", "--slo", sloSpec, "--find-max-precision", "0", "--concurrency", "3", "-o", search}, common...)...)
	if code != 0 {
		t.Fatalf("search: exit %d: %s", code, errs)
	}

	searchTTFT, fineTTFT := levelTTFTs(t, search), levelTTFTs(t, fine)
	b := stats.Bootstrap{Resamples: 2000, Seed: 1, Confidence: 0.95}
	var table []string
	for _, c := range []int{1, 2, 3} {
		s, _ := b.Percentile(searchTTFT[c], 75)
		f, _ := b.Percentile(fineTTFT[c], 75)
		table = append(table, fmt.Sprintf("c=%d search %s fine %s", c, msInterval(s), msInterval(f)))
	}
	t.Logf("calibration: TTFT median %.1f ms alone, %.1f ms waiting; bound %s; TTFT p75 (95%% bootstrap interval):\n  %s",
		alone*1e3, waiting*1e3, sloSpec, strings.Join(table, "\n  "))
	for name, ttfts := range map[string]map[int][]float64{"search": searchTTFT, "fine sweep": fineTTFT} {
		// The claim is one-sided (waiting for the slot makes TTFT larger),
		// so the one-sided p: half the two-sided one, U on the larger side.
		mw, ok := stats.MannWhitneyU(ttfts[2], ttfts[1])
		if !ok || mw.P/2 >= 0.01 || mw.U <= float64(mw.N1*mw.N2)/2 {
			t.Errorf("%s: TTFT at c=2 against c=1: %+v; want larger at one-sided p < 0.01", name, mw)
		}
	}

	m, err := rundir.ReadManifest(search)
	if err != nil {
		t.Fatal(err)
	}
	s := m.Workload.Search
	levels, _ := rundir.ReadTable[rundir.LevelRow](search, rundir.TableLevels)
	if !m.Complete || !s.Done || s.Max != 1 || s.Fail != 2 || len(levels) != len(s.Probes) || fmt.Sprint(m.Workload.Levels) != "[3 1 2]" {
		t.Errorf("search found [%v, %v): complete %v, done %v, levels %v, %d level rows, %d probes",
			s.Max, s.Fail, m.Complete, s.Done, m.Workload.Levels, len(levels), len(s.Probes))
	}
	// Each probe's verdict is the SLO's own judgement of its p75.
	for _, p := range s.Probes {
		if len(p.Bounds) != 1 || p.Pass != (p.Bounds[0].ValueS <= boundS) || !p.Bounds[0].Reliable {
			t.Errorf("probe c=%d: pass %v, bounds %+v", p.Concurrency, p.Pass, p.Bounds)
		}
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

// levelTTFTs is, per concurrency of a closed-loop run, the TTFT of each
// measured request that succeeded, as the SLO measures it.
func levelTTFTs(t *testing.T, dir string) map[int][]float64 {
	t.Helper()
	levels := runtest.Table[rundir.LevelRow](t, dir, rundir.TableLevels)
	reqs := runtest.Table[rundir.RequestRow](t, dir, rundir.TableRequests)
	conc := map[int32]int{}
	for _, l := range levels {
		conc[l.LevelIndex] = int(l.Concurrency)
	}
	out := map[int][]float64{}
	for i := range reqs {
		if r := &reqs[i]; !r.Warmup {
			if q := slo.RequestOf(r, nil); q.OK {
				out[conc[r.LevelIndex]] = append(out[conc[r.LevelIndex]], q.TTFTS)
			}
		}
	}
	return out
}

func msInterval(iv stats.Interval) string {
	return fmt.Sprintf("%.1f ms [%.1f, %.1f] n=%d", iv.Estimate*1e3, iv.Low*1e3, iv.High*1e3, iv.N)
}
