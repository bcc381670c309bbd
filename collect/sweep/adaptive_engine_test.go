package sweep

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/internal/testengine"
	"github.com/headroom-llm/headroom/rundir"
)

// A test engine with two sequences saturates by construction once more
// than two requests are in flight: throughput stays where two sequences
// put it and requests queue, so TTFT grows with every doubling. The sweep
// stops raising the load there, skips the levels above, and says so in
// the manifest; it never stops before the third level of the flat part.
func TestStopWhenSaturatedAgainstTestEngine(t *testing.T) {
	e := testengine.Start(t, testengine.Options{Sequences: 2, CtxPerSeq: 256})
	dir := filepath.Join(t.TempDir(), "run")
	s := mustNew(t, e.BaseURL, WithLevels(1, 2, 4, 8, 16, 32), WithRequestsPerLevel(30), WithWarmup(2),
		WithPromptTokens(Fixed(32)), WithOutputTokens(Fixed(32)), WithStopWhenSaturated(true),
		WithMetricsInterval(0), WithTimeout(time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run, err := s.Record(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	w := run.Manifest.Workload
	levels, _ := rundir.ReadTable[rundir.LevelRow](dir, rundir.TableLevels)
	sat := w.Saturated
	if !run.Manifest.Complete || !w.StopWhenSaturated || sat == nil {
		t.Fatalf("complete %v, workload %+v", run.Manifest.Complete, w)
	}
	t.Logf("saturated at c=%d: throughput %.0f tok/s, gains per doubling %.3f, TTFT p50 %.3f s; skipped %v",
		sat.Concurrency, sat.OutputTokPerS, sat.GainPerDoubling, sat.TTFTP50S, sat.Skipped)
	if sat.Concurrency < 8 || len(levels) != sat.LevelIndex+1 || len(sat.Skipped) == 0 ||
		len(levels)+len(sat.Skipped) != 6 || sat.Skipped[0] != float64(2*sat.Concurrency) {
		t.Errorf("%d levels run, saturation %+v", len(levels), sat)
	}
}
