package compare

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/headroom-llm/headroom/analyze"
)

// Each bundled sweep, compared, carries the wall its own report names:
// compare.Load reads what the diagnosis needs (server metrics, the server
// log and its receive times, GPU telemetry, client samples). The expected
// verdicts are those pinned by analyze's TestBundledRunsVerdicts; the test
// also checks them against the report's own analysis of the full run.
func TestBundledRunsWallMatchesReport(t *testing.T) {
	want := map[string]string{
		// Each run alone, without its probe: the H200 8B knee is the compute
		// wall here (the demo, given the probe, places it far below the
		// ridge: engine overhead).
		"sweep-testengine":    "kv_cache at c=8",
		"h200/sweep-kv256":    "compute at c=16; then kv_cache at c=64",
		"h200/sweep-kv768":    "compute at c=16",
		"h200-1b/sweep-kv256": "engine_overhead at c=16; then kv_cache at c=64",
	}
	var dirs []string
	for run := range want {
		dirs = append(dirs, filepath.Join("..", "..", "examples", "runs", filepath.FromSlash(run)))
	}
	runs, err := LoadAll(context.Background(), dirs)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compare(context.Background(), runs, opts())
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range c.Runs {
		rel, _ := filepath.Rel(filepath.Join("..", "..", "examples", "runs"), r.Dir)
		rel = filepath.ToSlash(rel)
		if r.Sweep == nil {
			t.Fatalf("%s: no sweep summary", rel)
		}
		if wallShort(r.Sweep) != want[rel] {
			t.Errorf("%s: wall %q, want %q", rel, wallShort(r.Sweep), want[rel])
		}
		full, err := analyze.Load(dirs[i])
		if err != nil {
			t.Fatal(err)
		}
		rep, err := analyze.Analyze([]*analyze.Run{full}, opts().Settings)
		if err != nil {
			t.Fatal(err)
		}
		d := rep.Runs[0].Sweep.Diagnosis
		if r.Sweep.Wall != d.Wall || r.Sweep.WallAt != rep.Runs[0].Sweep.Levels[d.Primary.At.LevelIndex].Load {
			t.Errorf("%s: compare says %s at %+v, its report %s at level %d", rel, r.Sweep.Wall, r.Sweep.WallAt, d.Wall, d.Primary.At.LevelIndex)
		}
	}
	rows := c.Index()
	for i, row := range rows {
		if row.Wall == nil || *row.Wall != c.Runs[i].Sweep.Wall || row.WallShort == nil || *row.WallShort != wallShort(c.Runs[i].Sweep) {
			t.Errorf("index row %d: wall %v / %v", i, row.Wall, row.WallShort)
		}
	}
}
