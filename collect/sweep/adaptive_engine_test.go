package sweep

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/internal/testengine"
	"github.com/headroom-llm/headroom/rundir"
)

// A server that serves two requests at once saturates by construction
// once more are in flight: throughput stays where two slots put it, and
// requests queue, so TTFT grows with every doubling. Paced by timers (a
// fake server), the shape holds on a loaded machine: the sweep stops at
// c=8, the first level with two flat levels after the best one (c=2), or
// at c=16 when noise makes c=4 the best; it skips the levels above and
// says so in the manifest. A request holds its slot ~165 ms, far longer
// than the client's and the server's own work on a request (tens of ms
// under -race on a busy machine): with 2 ms tokens that work, done
// outside the slots, was a third of a request, and more concurrency hid
// it, so throughput kept rising to c=8.
func TestStopWhenSaturated(t *testing.T) {
	f := newFakeServer(t, func(f *fakeServer) { f.slots, f.firstDelay, f.tokenDelay = 2, 15*time.Millisecond, 10*time.Millisecond })
	dir := filepath.Join(t.TempDir(), "run")
	s := mustNew(t, f.URL, WithLevels(1, 2, 4, 8, 16, 32), WithRequestsPerLevel(40), WithWarmup(2),
		WithPromptTokens(Fixed(32)), WithOutputTokens(Fixed(16)), WithStopWhenSaturated(true), WithMetricsInterval(0), WithNoGPU())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := s.Record(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	sat := run.Manifest.Workload.Saturated
	levels, _ := rundir.ReadTable[rundir.LevelRow](dir, rundir.TableLevels)
	if !run.Manifest.Complete || sat == nil || !(sat.Concurrency == 8 && fmt.Sprint(sat.Skipped) == "[16 32]" || sat.Concurrency == 16 && fmt.Sprint(sat.Skipped) == "[32]") ||
		len(levels) != sat.LevelIndex+1 || sat.PeakLevel > 2 {
		for i := range levels {
			t.Logf("levels 0-%d: %+v", i, s.saturationOf(levels[:i+1]))
		}
		t.Fatalf("complete %v, %d levels, saturated %+v", run.Manifest.Complete, len(levels), sat)
	}
}

// Against the real test engine (two sequences) the sweep runs with the
// saturation stop and keeps its books: when it stops, it stops at c=4 or
// later (a plateau needs two levels after the best one) with the skipped
// levels named and not run; when it does not (on a machine so loaded that
// throughput is noise), every level ran and the recorded levels, judged
// again from the run directory, show no saturation either.
func TestStopWhenSaturatedAgainstTestEngine(t *testing.T) {
	e := testengine.Start(t, testengine.Options{Sequences: 2, CtxPerSeq: 256})
	s := mustNew(t, e.BaseURL, WithLevels(1, 2, 4, 8, 16, 32), WithDurationPerLevel(2*time.Second), WithWarmup(2),
		WithPromptTokens(Fixed(32)), WithOutputTokens(Fixed(32)), WithStopWhenSaturated(true),
		WithMetricsInterval(0), WithTimeout(time.Minute))
	dir, run := engineRun(t, s)
	w := run.Manifest.Workload
	levels, _ := rundir.ReadTable[rundir.LevelRow](dir, rundir.TableLevels)
	if !run.Manifest.Complete || !w.StopWhenSaturated {
		t.Fatalf("complete %v, workload %+v", run.Manifest.Complete, w)
	}
	// The rule again, from the rows on disk.
	again := mustNew(t, e.BaseURL, WithLevels(1, 2, 4, 8, 16, 32))
	reqs, _ := rundir.ReadTable[rundir.RequestRow](dir, rundir.TableRequests)
	toks, _ := rundir.ReadTable[rundir.TokenRow](dir, rundir.TableTokens)
	byID := map[string][]rundir.TokenRow{}
	for _, k := range toks {
		byID[k.RequestID] = append(byID[k.RequestID], k)
	}
	for i := range reqs {
		again.levelLog.add(&reqs[i], byID[reqs[i].RequestID])
	}
	first := -1
	for i := 2; i < min(len(levels), 5) && first < 0; i++ { // the last planned level has nothing after it to skip
		if again.saturation(levels[:i+1]) != nil {
			first = i
		}
	}
	sat := w.Saturated
	if sat == nil {
		t.Logf("no saturation seen on this machine (load too high?): %d levels", len(levels))
		if len(levels) != 6 || first >= 0 {
			t.Errorf("not stopped, but %d levels ran and the rule finds saturation at level %d", len(levels), first)
		}
		return
	}
	t.Logf("saturated at c=%d: throughput %.0f tok/s, gains per doubling %.3f, TTFT p50 %.3f s; skipped %v",
		sat.Concurrency, sat.OutputTokPerS, sat.GainPerDoubling, sat.TTFTP50S, sat.Skipped)
	if sat.Concurrency < 4 || first != sat.LevelIndex || len(levels) != sat.LevelIndex+1 ||
		len(levels)+len(sat.Skipped) != 6 || sat.Skipped[0] != float64(2*sat.Concurrency) {
		t.Errorf("%d levels run, the rule on disk says level %d, saturation %+v", len(levels), first, sat)
	}
}
