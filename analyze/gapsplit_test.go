package analyze

import (
	"math"
	"path/filepath"
	"testing"
)

// llamacppH200 holds the bundled llama.cpp runs on the H200; llamacppH100,
// the same engine, models and plan on an H100 (with --cache-ram 0).
var (
	llamacppH200 = filepath.Join("..", "examples", "runs", "h200-llamacpp")
	llamacppH100 = filepath.Join("..", "testdata", "h100-llamacpp")
)

// llamacppRun loads one run of examples/runs/h200-llamacpp (llama.cpp's
// llama-server on the H200, recorded 2026-12-01).
func llamacppRun(t *testing.T, name string) *Run { return runIn(t, llamacppH200, name) }

// runIn loads run name of the folder root.
func runIn(t *testing.T, root, name string) *Run {
	t.Helper()
	run, err := Load(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func llamacppConfig(t *testing.T, name string) *ModelSpec {
	return modelConfigIn(t, llamacppH200, name)
}

// modelConfigIn reads the model config name of the folder root.
func modelConfigIn(t *testing.T, root, name string) *ModelSpec {
	t.Helper()
	m, err := ReadModelConfig(filepath.Join(root, name))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestProbeCeilingsByDType: a probe with bf16 and FP8 rows keeps its bf16
// roofline (the seed's) and carries the FP8 one beside it; the FP8 rows must
// not become the bf16 peak.
func TestProbeCeilingsByDType(t *testing.T) {
	rl, err := probeRoofline(llamacppRun(t, "probe"), 0)
	if err != nil {
		t.Fatal(err)
	}
	if rl.DType != "bf16" || rl.PeakFLOPPerS < 700e12 || rl.PeakFLOPPerS > 900e12 || len(rl.Points) != 18 {
		t.Errorf("bf16 roofline: %s, peak %.4g, %d points", rl.DType, rl.PeakFLOPPerS, len(rl.Points))
	}
	if rl.FP8 == nil || rl.FP8.PeakFLOPPerS < 1.3e15 || rl.FP8.PeakFLOPPerS > 2e15 || math.Abs(rl.FP8.RidgeFLOPPerByte-rl.FP8.PeakFLOPPerS/rl.BandwidthBytesPerS) > 1e-9 {
		t.Errorf("FP8 ceiling %+v", rl.FP8)
	}
	// 9 decode batches × {bf16, fp8}, each the sum of 5 GEMMs.
	if len(rl.StepFloors) != 18 || rl.FloorModel != "llama-3.1-8b-shape-random-f16" {
		t.Fatalf("%d step floors of %q", len(rl.StepFloors), rl.FloorModel)
	}
	if f, ok := rl.FloorAt(1, "bf16"); !ok || f < 3e-3 || f > 6e-3 {
		t.Errorf("bf16 floor at batch 1: %v %v", f, ok)
	}
	// Between measured batches the floor is interpolated; outside, there is none.
	f2, _ := rl.FloorAt(2, "bf16")
	f4, _ := rl.FloorAt(4, "bf16")
	if f3, ok := rl.FloorAt(3, "bf16"); !ok || math.Abs(f3-(f2+f4)/2) > 1e-15 {
		t.Errorf("floor at 3: %v, want the mean of %v and %v", f3, f2, f4)
	}
	if _, ok := rl.FloorAt(512, "bf16"); ok {
		t.Error("a floor beyond the measured batches")
	}
}

// TestGapSplitLlamaCpp: on the recorded f16 sweep, silicon × engine is the
// roofline gap, the silicon share is the measured GEMMs against the copy
// bandwidth, and a model of another weight type gets no measured floor.
func TestGapSplitLlamaCpp(t *testing.T) {
	set := testSettings()
	set.Model = llamacppConfig(t, "config-8b-f16.json")
	rep, err := Analyze([]*Run{llamacppRun(t, "probe"), llamacppRun(t, "sweep-f16")}, set)
	if err != nil {
		t.Fatal(err)
	}
	d := rep.Runs[1].Sweep.Decode
	if d.FloorDType != "bf16" || d.CeilingDType != "bf16" || len(d.Levels) == 0 {
		t.Fatalf("floor %q, ceiling %q, %d levels", d.FloorDType, d.CeilingDType, len(d.Levels))
	}
	for _, l := range d.Levels {
		if l.MeasuredFloorS <= 0 {
			t.Fatalf("c=%d: no measured floor", l.Concurrency)
		}
		if math.Abs(l.SiliconFactor*l.EngineFactor-l.TPOTRatio) > 1e-9*l.TPOTRatio {
			t.Errorf("c=%d: silicon %.3f × engine %.3f ≠ gap %.3f", l.Concurrency, l.SiliconFactor, l.EngineFactor, l.TPOTRatio)
		}
		// Real GEMMs stream below copy bandwidth, never above it by much.
		if l.SiliconFactor < 0.95 || l.SiliconFactor > 1.5 {
			t.Errorf("c=%d: silicon factor %.3f", l.Concurrency, l.SiliconFactor)
		}
	}
	// Issue 22: the measured floor at batch 1 is at or below what llama.cpp reached.
	if l := d.Levels[0]; l.Concurrency != 1 || l.MeasuredFloorS > l.MeasuredTPOTP50S {
		t.Errorf("c=%d: floor %.3g s above the measured TPOT %.3g s", l.Concurrency, l.MeasuredFloorS, l.MeasuredTPOTP50S)
	}

	set.Model = llamacppConfig(t, "config-8b-q4_0.json")
	rep, err = Analyze([]*Run{llamacppRun(t, "probe"), llamacppRun(t, "sweep-q4_0")}, set)
	if err != nil {
		t.Fatal(err)
	}
	if d := rep.Runs[1].Sweep.Decode; d.FloorDType != "" || d.Levels[0].MeasuredFloorS != 0 {
		t.Errorf("q4_0 weights got a measured floor (%q)", d.FloorDType)
	}
}

// TestFP8ModelUsesFP8Ceiling: FP8 weights take the FP8 peak and ridge, and
// the FP8 floor of the same shape.
func TestFP8ModelUsesFP8Ceiling(t *testing.T) {
	m, err := ParseModelConfig([]byte(`{"model_type":"llama","num_hidden_layers":32,"hidden_size":4096,"num_attention_heads":32,
		"num_key_value_heads":8,"intermediate_size":14336,"vocab_size":128256,"torch_dtype":"bfloat16",
		"quantization_config":{"quant_method":"fp8","modules_to_not_convert":[]}}`))
	if err != nil {
		t.Fatal(err)
	}
	set := testSettings()
	set.Model = m
	rep, err := Analyze([]*Run{llamacppRun(t, "probe"), llamacppRun(t, "sweep-f16")}, set)
	if err != nil {
		t.Fatal(err)
	}
	d := rep.Runs[1].Sweep.Decode
	probe := rep.Runs[0].Roofline
	if d.CeilingDType != DTypeFP8 || d.PeakFLOPPerS != probe.FP8.PeakFLOPPerS || d.FloorDType != DTypeFP8 {
		t.Errorf("ceiling %s %.4g (want the FP8 peak %.4g), floor %q", d.CeilingDType, d.PeakFLOPPerS, probe.FP8.PeakFLOPPerS, d.FloorDType)
	}
}
