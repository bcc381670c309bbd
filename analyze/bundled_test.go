package analyze

import (
	"path/filepath"
	"testing"
)

// The bundled real runs, each with a wall known from docs/validation.md and
// examples/runs/README.md: the verdict on them must not drift. Together
// they cover a compute knee (the 8B shape on the H200), a compute knee
// with a KV wall after it, an inconclusive knee with a KV wall after it
// on a CPU engine without GPU telemetry, and one on the H200 where the GPU
// idled at the knee (the 1B shape).
func TestBundledRunsVerdicts(t *testing.T) {
	type finding struct {
		status    string
		level     int
		afterKnee bool
	}
	for _, tt := range []struct {
		run      string
		wall     string
		short    string
		findings map[string]finding
	}{
		{"sweep-testengine", WallInconclusive, "inconclusive: TPOT bent at c=4; then the KV-cache wall from c=8", map[string]finding{
			WallKVCache: {StatusHit, 3, true}, WallCompute: {StatusUnknown, 2, false}, WallQueueing: {StatusClear, -1, false}, WallClientBound: {StatusClear, -1, false}}},
		{"h200/sweep-kv256", WallCompute, "compute knee at c=16; then the KV-cache wall from c=64", map[string]finding{
			WallKVCache: {StatusHit, 6, true}, WallCompute: {StatusHit, 4, false}, WallQueueing: {StatusClear, -1, false}, WallClientBound: {StatusClear, -1, false}}},
		{"h200/sweep-kv768", WallCompute, "compute knee at c=16", map[string]finding{
			WallKVCache: {StatusClear, -1, false}, WallCompute: {StatusHit, 4, false}, WallQueueing: {StatusClear, -1, false}, WallClientBound: {StatusClear, -1, false}}},
		{"h200-1b/sweep-kv256", WallInconclusive, "inconclusive: TPOT bent at c=16; then the KV-cache wall from c=64", map[string]finding{
			WallKVCache: {StatusHit, 6, true}, WallCompute: {StatusClear, 4, false}, WallQueueing: {StatusClear, -1, false}, WallClientBound: {StatusClear, -1, false}}},
	} {
		t.Run(tt.run, func(t *testing.T) {
			run, err := Load(filepath.Join("..", "examples", "runs", filepath.FromSlash(tt.run)))
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Analyze([]*Run{run}, Default())
			if err != nil {
				t.Fatal(err)
			}
			d := rep.Runs[0].Sweep.Diagnosis
			if d.Wall != tt.wall || d.Short != tt.short {
				t.Errorf("wall %q (%q), want %q (%q)", d.Wall, d.Short, tt.wall, tt.short)
			}
			if len(d.Findings) != len(tt.findings) {
				t.Fatalf("%d findings, want %d", len(d.Findings), len(tt.findings))
			}
			for _, f := range d.Findings {
				want, ok := tt.findings[f.Check]
				got := finding{f.Status, f.LevelIndex, f.AfterKnee}
				if !ok || got != want {
					t.Errorf("%s: %+v, want %+v", f.Check, got, want)
				}
				if f.Status == StatusHit && len(f.Evidence) == 0 {
					t.Errorf("%s: hit without evidence", f.Check)
				}
			}
		})
	}
}
