package main

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/internal/testengine"
	"github.com/headroom-llm/headroom/rundir"
	"github.com/headroom-llm/headroom/slo"
	"github.com/headroom-llm/headroom/stats"
)

// The SLO search finds a boundary known by construction, and a plain sweep
// of every concurrency shows the same one.
//
// The scenario: a test engine with two sequences serves two requests at
// once. Up to concurrency 2 a request starts at once, so its TTFT is its
// prefill (10-50 ms on this CPU engine, scheduling noise included); from 3
// up it waits for a slot, i.e. for part of another request's 256 tokens of
// decoding (p90 200 ms to 2 s in recordings on a loaded machine).
// ttft_p90=100ms lies about a factor of 2 from both, so the highest
// passing concurrency is 2. Started at 1, the
// search must double (1 and 2 pass, 4 fails), bisect (3 fails), find
// [2, 3) and keep every probe as a level.
//
// How the two recordings are compared: not by one number each. For every
// concurrency each recording ran, the TTFT p90 gets a 95 % bootstrap
// interval from its requests; each recording's boundary is where the
// intervals leave the threshold behind (every level up to it wholly below
// the threshold, the next wholly above), so a verdict that a noisy p90 could flip
// is caught as "no clear boundary" rather than counted as agreement. The
// search's [Max, Fail), the fine sweep's boundary by its intervals and the
// report's operating point for the fine sweep must all be the same.
func TestFindMaxMatchesFineSweep(t *testing.T) {
	e := testengine.Start(t, testengine.Options{Sequences: 2, CtxPerSeq: 512})
	const sloSpec, thresholdS = "ttft_p90=100ms", 0.100
	common := []string{"--base-url", e.BaseURL, "--requests-per-level", "16", "--warmup", "2", "--prompt-tokens", "32",
		"--output-tokens", "256", "--no-gpu", "--metrics-interval", "0", "--timeout", "1m"}
	search := filepath.Join(t.TempDir(), "search")
	code, _, errs := headroom(t, append([]string{"sweep", "--find-max", "--slo", sloSpec, "--find-max-precision", "0", "--concurrency", "1", "-o", search}, common...)...)
	if code != 0 {
		t.Fatalf("search: exit %d: %s", code, errs)
	}
	m, err := rundir.ReadManifest(search)
	if err != nil {
		t.Fatal(err)
	}
	s := m.Workload.Search
	levels, _ := rundir.ReadTable[rundir.LevelRow](search, rundir.TableLevels)
	if !m.Complete || !s.Done || len(levels) != len(s.Probes) || fmt.Sprint(m.Workload.Levels) != "[1 2 4 3]" {
		t.Errorf("search: complete %v, done %v, levels %v, %d level rows, %d probes", m.Complete, s.Done, m.Workload.Levels, len(levels), len(s.Probes))
	}
	// Each probe's verdict is the SLO's own judgement of its p90.
	for _, p := range s.Probes {
		if len(p.Bounds) != 1 || p.Pass != (p.Bounds[0].ValueS <= thresholdS) || !p.Bounds[0].Reliable {
			t.Errorf("probe c=%d: pass %v, bounds %+v", p.Concurrency, p.Pass, p.Bounds)
		}
	}

	fine := filepath.Join(t.TempDir(), "fine")
	code, _, errs = headroom(t, append([]string{"sweep", "--concurrency", "1,2,3,4", "-o", fine}, common...)...)
	if code != 0 {
		t.Fatalf("fine sweep: exit %d: %s", code, errs)
	}

	searchP90, fineP90 := ttftP90Intervals(t, search), ttftP90Intervals(t, fine)
	var table []string
	for _, c := range []int{1, 2, 3, 4} {
		table = append(table, fmt.Sprintf("c=%d search %s fine %s", c, msInterval(searchP90[c]), msInterval(fineP90[c])))
	}
	t.Logf("TTFT p90 (95%% bootstrap interval), threshold %.0f ms:\n  %s", thresholdS*1e3, strings.Join(table, "\n  "))
	sMax, sFail, sClear := clearBoundary(searchP90, thresholdS)
	fMax, fFail, fClear := clearBoundary(fineP90, thresholdS)
	if !sClear || !fClear || sMax != 2 || sFail != 3 || fMax != 2 || fFail != 3 {
		t.Errorf("boundary by intervals: search [%d, %d) clear %v, fine sweep [%d, %d) clear %v; want [2, 3) for both", sMax, sFail, sClear, fMax, fFail, fClear)
	}
	if s.Max != float64(sMax) || s.Fail != float64(sFail) {
		t.Errorf("the search reports [%v, %v); its own levels' intervals put the boundary at [%d, %d)", s.Max, s.Fail, sMax, sFail)
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

// ttftP90Intervals is, per concurrency of a closed-loop run, the 95 %
// bootstrap interval of the measured requests' TTFT p90 (as the SLO
// measures TTFT).
func ttftP90Intervals(t *testing.T, dir string) map[int]stats.Interval {
	t.Helper()
	levels, err := rundir.ReadTable[rundir.LevelRow](dir, rundir.TableLevels)
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := rundir.ReadTable[rundir.RequestRow](dir, rundir.TableRequests)
	if err != nil {
		t.Fatal(err)
	}
	ttfts := map[int32][]float64{}
	for i := range reqs {
		if r := &reqs[i]; !r.Warmup {
			if q := slo.RequestOf(r, nil); q.OK {
				ttfts[r.LevelIndex] = append(ttfts[r.LevelIndex], q.TTFTS)
			}
		}
	}
	out := map[int]stats.Interval{}
	b := stats.Bootstrap{Resamples: 2000, Seed: 1, Confidence: 0.95}
	for _, l := range levels {
		if iv, ok := b.Percentile(ttfts[l.LevelIndex], 90); ok {
			out[int(l.Concurrency)] = iv
		}
	}
	return out
}

// clearBoundary reads a boundary off per-concurrency intervals: max is the
// highest concurrency up to which every interval lies wholly at or below
// the threshold, fail the next one run; clear says that fail's interval
// lies wholly above it (no level in between is a coin flip).
func clearBoundary(ivs map[int]stats.Interval, threshold float64) (maxPass, fail int, clear bool) {
	for _, c := range slices.Sorted(maps.Keys(ivs)) {
		if ivs[c].High > threshold {
			return maxPass, c, ivs[c].Low > threshold
		}
		maxPass = c
	}
	return maxPass, 0, false
}

func msInterval(iv stats.Interval) string {
	return fmt.Sprintf("%.1f ms [%.1f, %.1f] n=%d", iv.Estimate*1e3, iv.Low*1e3, iv.High*1e3, iv.N)
}
