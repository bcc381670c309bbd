package importer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/internal/runtest"
	"github.com/headroom-llm/headroom/rundir"
)

// A serving_sweep.json in the exact shape script 02 writes (json.dump of
// {"config": vars(args), "rows": rows}). The values only test the mapping;
// no report or demo uses them.
const sweepJSON = `{
  "config": {"base_url": "http://localhost:8000", "model": "m", "prompt_tokens": 512,
             "output_tokens": 128, "rounds": 2, "levels": "1,2", "out": "serving_sweep.json"},
  "rows": [
    {"concurrency": 1, "throughput_tok_s": 80.5, "ttft_p50_ms": 41.0, "ttft_p99_ms": 44.0,
     "tpot_p50_ms": 12.0, "tpot_p99_ms": 12.5, "e2e_p50_s": 1.6, "errors": 0, "completed": 2},
    {"concurrency": 2, "throughput_tok_s": 150.25, "ttft_p50_ms": 43.0, "ttft_p99_ms": 60.0,
     "tpot_p50_ms": 12.75, "tpot_p99_ms": 13.0, "e2e_p50_s": 1.7, "errors": 1, "completed": 3}
  ]
}`

func TestImportSeedSweep(t *testing.T) {
	src := filepath.Join(t.TempDir(), "serving_sweep.json")
	os.WriteFile(src, []byte(sweepJSON), 0o644)
	dir := filepath.Join(t.TempDir(), "run")
	run, err := Import(src, dir, Options{Date: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	m := run.Manifest
	if !m.Complete || !m.HasKind(rundir.KindSweep) || !m.HasKind(rundir.KindImport) ||
		m.Engine.Model != "m" || m.Workload.Prompt.Mean != 512 || m.Workload.Output.Mean != 128 ||
		len(m.Workload.Levels) != 2 || m.Workload.Levels[1] != 2 || len(m.Source.Lacks) == 0 {
		t.Fatalf("manifest: %+v %+v %+v", m, m.Engine, m.Workload)
	}
	rows := runtest.Table[rundir.LevelStatsRow](t, dir, rundir.TableLevelStats)
	want := rundir.LevelStatsRow{Concurrency: 2, RequestsOK: 3, Errors: 1, OutputTokPerS: 150.25,
		TTFTP50S: 0.043, TTFTP99S: 0.060, TPOTP50S: 0.01275, TPOTP99S: 0.013, E2EP50S: 1.7,
		PercentileMethod: SeedPercentileMethod}
	if len(rows) != 2 || rows[1] != want {
		t.Fatalf("rows %+v\nwant [1] = %+v", rows, want)
	}
}

func TestImportErrors(t *testing.T) {
	cases := map[string]string{
		"unknown":       `{"hello": 1}`,
		"not json":      `peak_tflops = 3`,
		"empty sweep":   `{"gpu": "X", "peak_tflops": 1, "bandwidth_tbs": 1, "sweep": []}`,
		"bad intensity": `{"gpu": "X", "peak_tflops": 1, "bandwidth_tbs": 1, "sweep": [{"batch": 1, "intensity": 7, "tflops": 1, "latency_ms": 1}]}`,
		"no rows":       `{"config": {}, "rows": []}`,
		"bad type":      "{\"config\": {},\n \"rows\": [{\"concurrency\": \"one\"}]}",
	}
	for name, content := range cases {
		src := filepath.Join(t.TempDir(), "in.json")
		os.WriteFile(src, []byte(content), 0o644)
		_, err := Import(src, filepath.Join(t.TempDir(), "run"), Options{})
		if err == nil || !strings.HasPrefix(err.Error(), src+": ") {
			t.Errorf("%s: want an error naming %s, got %v", name, src, err)
		}
	}
}

// FuzzImportSeed: any file that passes for one of the seed scripts' JSON
// imports into a run that reads back, or fails with an error; never a
// panic, never a half-written run that says it is complete.
func FuzzImportSeed(f *testing.F) {
	roofline, err := os.ReadFile("../../testdata/seed/roofline_NVIDIA_H200.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(roofline)
	f.Add([]byte(sweepJSON))
	f.Add([]byte(`{"gpu": "x", "peak_tflops": 1, "bandwidth_tbs": 1, "sweep": [{"batch": 1, "tflops": 1, "latency_ms": NaN}]}`))
	f.Add([]byte(`{"config": {}, "rows": [{"concurrency": 1, "throughput_tok_s": -1e308}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		kind, err := Detect(data)
		if err != nil || kind != KindSeedRoofline && kind != KindSeedSweep {
			return
		}
		src := filepath.Join(t.TempDir(), "seed.json")
		if err := os.WriteFile(src, data, 0o644); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "run")
		run, err := Import(src, dir, Options{})
		if err != nil {
			return
		}
		if err := run.Check(); err != nil {
			t.Fatalf("the imported run does not read back: %v", err)
		}
		if _, err := rundir.ReadManifest(dir); err != nil {
			t.Fatalf("the imported manifest does not read back: %v", err)
		}
	})
}
