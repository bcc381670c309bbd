package analyze

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/headroom-llm/headroom/examples"
)

// probeRun loads the bundled real H200 probe.
func probeRun(t *testing.T) *Run {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "probe")
	if _, _, err := examples.Extract("h200-probe", dir); err != nil {
		t.Fatal(err)
	}
	run, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// The roofline gap of a constructed sweep against the real H200 probe and
// the published Llama 3.1 8B config.
func TestDecodeRooflineGap(t *testing.T) {
	t.Parallel()
	probe := probeRun(t)
	sweep := kneeSweep(t).write()
	set := testSettings()
	set.Model = readConfig(t, "llama-3.1-8b-instruct.json")
	rep, err := Analyze([]*Run{probe, sweep}, set)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Runs[0].Sweep != nil || rep.Runs[1].Sweep == nil {
		t.Fatal("the probe run must not be analysed as a sweep, the sweep must")
	}
	d := rep.Runs[1].Sweep.Decode
	if d == nil || d.ProbeRun != probe.Dir || d.Model == nil {
		t.Fatalf("decode roofline %+v", d)
	}
	bw, peak := probe.Manifest.Probe.BandwidthBytesPerS, probe.Manifest.Probe.PeakFLOPPerS
	if d.BandwidthBytesPerS != bw || d.PeakFLOPPerS != peak || d.TensorParallel != 1 {
		t.Errorf("ceilings %v B/s %v FLOP/s", d.BandwidthBytesPerS, d.PeakFLOPPerS)
	}
	if len(d.Levels) != 6 {
		t.Fatalf("%d decode levels", len(d.Levels))
	}
	m := set.Model
	for _, dl := range d.Levels {
		b := float64(dl.Concurrency)
		ctx := 512 + 16.0/2
		bytes := m.WeightBytesPerStep(b) + b*ctx*131072
		flop := b * m.FLOPPerToken(ctx)
		step := max(bytes/bw, flop/peak)
		if !near(dl.PredictedStepS, step, 1e-12) || dl.ContextTokens != ctx || !near(dl.KVBytes, b*ctx*131072, 1e-12) {
			t.Errorf("c=%d: step %v want %v, ctx %v", dl.Concurrency, dl.PredictedStepS, step, dl.ContextTokens)
		}
		// Decode of an 8B model at these batches reads far more bytes than
		// it does FLOPs per byte at the ridge: memory-bound.
		if dl.Bound != "memory" {
			t.Errorf("c=%d bound %s", dl.Concurrency, dl.Bound)
		}
		want := wantTokPerS(dl.Concurrency) / (b / step)
		if !near(dl.ThroughputFraction, want, 1e-6) || !near(dl.TPOTRatio, kneeTPOT[dl.Concurrency]/step, 1e-6) {
			t.Errorf("c=%d gap %v (want %v), TPOT ratio %v", dl.Concurrency, dl.ThroughputFraction, want, dl.TPOTRatio)
		}
	}
	// About 15 GB of weights over 4.19 TB/s: a TPOT floor near 3.6 ms.
	if f := d.Levels[0].PredictedTPOTS; f < 3.5e-3 || f > 3.7e-3 {
		t.Errorf("c=1 TPOT floor %v", f)
	}
	rc := d.Ridge
	if rc.KneeConcurrency != 16 || rc.Approximate || rc.Verdict != RidgeKneeBefore || rc.RidgeFLOPPerByte < 186 || rc.RidgeFLOPPerByte > 188 {
		t.Errorf("ridge check %+v", rc)
	}
	if h := rep.Headline; h == nil || h.RidgeFLOPPerByte != probe.Manifest.Probe.RidgeFLOPPerByte || h.PeakConcurrency != 32 {
		t.Errorf("headline %+v", h)
	}
}

// Without a model config the ridge check uses the seed's intensity ≈
// batch and says so; with no probe the gap is named as missing.
func TestRidgeCheckApproximateAndMissing(t *testing.T) {
	t.Parallel()
	rep, err := Analyze([]*Run{probeRun(t), kneeSweep(t).write()}, testSettings())
	if err != nil {
		t.Fatal(err)
	}
	d := rep.Runs[1].Sweep.Decode
	if d.Model != nil || len(d.Levels) != 0 || !slices.ContainsFunc(d.Notes, func(n Note) bool { return n.Kind == NoteNoModelConfig }) {
		t.Errorf("without --model-config: %+v", d)
	}
	if !d.Ridge.Approximate || d.Ridge.IntensityFLOPPerByte != 16 || d.Ridge.Verdict != RidgeKneeBefore {
		t.Errorf("ridge check %+v", d.Ridge)
	}
	sw := analyzeOne(t, kneeSweep(t).write(), testSettings())
	if sw.Decode != nil || !slices.ContainsFunc(sw.Notes, func(n Note) bool { return n.Kind == NoteNoProbe }) {
		t.Errorf("no probe: decode %v, notes %+v", sw.Decode, sw.Notes)
	}
}

func TestTensorParallelFromFlags(t *testing.T) {
	t.Parallel()
	f := newFakeSweep(t)
	f.manifest.Engine.Flags = []string{"--tensor-parallel-size", "2"}
	if got := manifestTensorParallel(f.manifest); got != 2 {
		t.Errorf("tp %d", got)
	}
	f.manifest.Engine.Flags = []string{"-tp=4"}
	if got := manifestTensorParallel(f.manifest); got != 4 {
		t.Errorf("tp %d", got)
	}
	f.manifest.Engine.Config = map[string]string{"tensor_parallel_size": "8"}
	if got := manifestTensorParallel(f.manifest); got != 8 {
		t.Errorf("tp %d", got)
	}
}

// A knee far below the ridge with the GPU "busy" is not the compute wall:
// NVML counts the time any kernel runs, not how much of the chip works, so
// the verdict is the engine's overhead, on the ridge.
func TestKneeBelowRidgeIsEngineOverhead(t *testing.T) {
	t.Parallel()
	f := cleanKneeSweep(t)
	f.gpuEveryLevel(95, 400)
	rep, err := Analyze([]*Run{probeRun(t), f.write()}, testSettings())
	if err != nil {
		t.Fatal(err)
	}
	d := rep.Runs[1].Sweep.Diagnosis
	wantWall(t, d, WallEngineOverhead, 16)
	if d.Primary.Basis != BasisRidge || d.Primary.Evidence[0].Kind != EvRidge || check(d, WallCompute).Reason != ReasonBelowRidge {
		t.Errorf("overhead %+v", d.Primary)
	}
	// vLLM without --enforce-eager already runs CUDA graphs: not suggested.
	if !hasFix(d.Primary.Fixes, FixChunkedPrefill, "--max-num-batched-tokens") || hasFix(d.Primary.Fixes, FixCUDAGraphs, "--enforce-eager") {
		t.Errorf("fixes %+v", d.Primary.Fixes)
	}
}
