package analyze

import (
	"path/filepath"
	"slices"
	"testing"
)

// exampleAnalysis analyzes a bundled example the way `headroom demo`
// does: its runs together, with its model config and SLO.
func exampleAnalysis(t *testing.T, example string, runs []string, config, slo string) *Report {
	t.Helper()
	root := filepath.Join("..", "examples", "runs", example)
	set := testSettings()
	if config != "" {
		m, err := ReadModelConfig(filepath.Join(root, config))
		if err != nil {
			t.Fatal(err)
		}
		set.Model = m
	}
	if slo != "" {
		var err error
		if set.SLO, err = ParseSLO(slo); err != nil {
			t.Fatal(err)
		}
	}
	var rs []*Run
	for _, r := range runs {
		run, err := Load(filepath.Join(root, r))
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, run)
	}
	rep, err := Analyze(rs, set)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// The bundled real runs, each with a wall known from docs/validation.md and
// examples/runs/README.md: the verdict on them must not drift.
func TestBundledRunsVerdicts(t *testing.T) {
	const slo = "ttft_p99=2s,tpot_p99=100ms"
	for _, tt := range []struct {
		example       string
		runs          []string
		config        string
		wall          string
		at            int   // concurrency of the primary wall
		then          []int // concurrency of each secondary wall
		thenKinds     []string
		basis         string
		operatingConc int
	}{
		// The demo: TPOT bends at c=16 at 14 FLOP/byte against a ridge of 189
		// with NVML saying 90% busy: the engine's per-step work, then the KV
		// cache (admission stops at 44 running) from c=64.
		{"h200", []string{"sweep-kv256", "probe"}, "config-8b.json", WallEngineOverhead, 16, []int{64}, []string{WallKVCache}, BasisRidge, 16},
		{"h200", []string{"sweep-kv768", "probe"}, "config-8b.json", WallEngineOverhead, 16, nil, nil, BasisRidge, 16},
		// The 1B shape: the GPU idled at the knee.
		{"h200-1b", []string{"sweep-kv256", "probe"}, "config-1b.json", WallEngineOverhead, 16, []int{64}, []string{WallKVCache}, BasisGPU, 32},
		// The test engine (CPU, no server CPU recorded): preemptions from c=8.
		{"sweep-testengine", []string{"."}, "", WallKVCache, 8, nil, nil, "", 32},
	} {
		t.Run(tt.example+"/"+tt.runs[0], func(t *testing.T) {
			rep := exampleAnalysis(t, tt.example, tt.runs, tt.config, slo)
			sw := rep.Runs[0].Sweep
			d := sw.Diagnosis
			wantWall(t, d, tt.wall, tt.at)
			if d.Primary.Basis != tt.basis {
				t.Errorf("basis %q, want %q", d.Primary.Basis, tt.basis)
			}
			var then []int
			var kinds []string
			for _, w := range d.Secondary {
				then, kinds = append(then, w.At.Concurrency), append(kinds, w.Kind)
			}
			if !slices.Equal(then, tt.then) || !slices.Equal(kinds, tt.thenKinds) {
				t.Errorf("secondary %v %v, want %v %v", kinds, then, tt.thenKinds, tt.then)
			}
			for _, w := range d.Walls() {
				if len(w.Evidence) == 0 {
					t.Errorf("%s: no evidence", w.Kind)
				}
			}
			if sw.Operating.At.Concurrency != tt.operatingConc {
				t.Errorf("operating point c=%d, want c=%d", sw.Operating.At.Concurrency, tt.operatingConc)
			}
			h := rep.Headline
			if h.Wall != d.Wall || h.Strongest == nil || *h.Strongest != d.Primary.Evidence[0] || h.Operating.At != sw.Operating.At {
				t.Errorf("headline %+v does not carry the diagnosis", h)
			}
		})
	}
}

// The demo said "Wall hit: compute knee" and then "the bend is not the
// compute wall", and offered "a CPU swap pool for preempted requests" for
// a run with no preemption (the first failure). The verdict is one
// wall, and no fix of it presumes what did not happen.
func TestDemoVerdictIsOneWall(t *testing.T) {
	rep := exampleAnalysis(t, "h200", []string{"sweep-kv256", "sweep-kv768", "probe"}, "config-8b.json", "ttft_p99=2s,tpot_p99=100ms")
	for _, ra := range rep.Runs[:2] {
		d := ra.Sweep.Diagnosis
		if d.Wall != WallEngineOverhead {
			t.Errorf("%s: wall %q, want engine_overhead", ra.Dir, d.Wall)
		}
		if c := check(d, WallCompute); c.Status == StatusHit {
			t.Errorf("%s: compute is a hit beside engine overhead", ra.Dir)
		}
		preempted := 0
		for _, l := range ra.Sweep.Levels {
			preempted += l.Server.Preemptions
		}
		for _, w := range d.Walls() {
			if hasFix(w.Fixes, FixSwapPreempted, "--cpu-offload-gib") && preempted == 0 {
				t.Errorf("%s: %s suggests a swap pool for preempted requests with %d preemptions", ra.Dir, w.Kind, preempted)
			}
		}
	}
}
