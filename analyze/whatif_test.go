package analyze

import (
	"math"
	"path/filepath"
	"testing"
)

func analyzeLlamacpp(t *testing.T, sweep, config string) *SweepAnalysis {
	return analyzeWithProbe(t, llamacppH200, sweep, config)
}

// analyzeWithProbe analyzes the sweep in root with the probe beside it and
// the model config in root.
func analyzeWithProbe(t *testing.T, root, sweep, config string) *SweepAnalysis {
	t.Helper()
	set := testSettings()
	set.Model = modelConfigIn(t, root, config)
	rep, err := Analyze([]*Run{runIn(t, root, "probe"), runIn(t, root, sweep)}, set)
	if err != nil {
		t.Fatal(err)
	}
	return rep.Runs[1].Sweep
}

// TestPredictIdentity: predicting the measured run itself gives back its own
// TPOT at every level (error 0), whatever the calibration.
func TestPredictIdentity(t *testing.T) {
	f16 := analyzeLlamacpp(t, "sweep-f16", "config-8b-f16.json")
	p, err := Predict("f16", f16, llamacppConfig(t, "config-8b-f16.json"), Variant{Label: "same"}, "f16", f16)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range p.Levels {
		if !l.HasMeasured || math.Abs(l.ErrorPct) > 1e-9 {
			t.Errorf("c=%d: error %.3g%% predicting the run from itself", l.Concurrency, l.ErrorPct)
		}
	}
}

// TestPredictQ4FromF16: the q4_0 model from the f16 run, against the
// measured q4_0 run. The bound is the q4_0 bytes at the probe's bandwidth;
// the errors are what they are (docs/gpu-engine.md discusses them), pinned
// here so a change to the method shows.
func TestPredictQ4FromF16(t *testing.T) {
	f16 := analyzeLlamacpp(t, "sweep-f16", "config-8b-f16.json")
	q4 := analyzeLlamacpp(t, "sweep-q4_0", "config-8b-q4_0.json")
	q4spec := llamacppConfig(t, "config-8b-q4_0.json")
	p, err := Predict("f16", f16, llamacppConfig(t, "config-8b-f16.json"),
		Variant{Label: "q4_0", Model: q4spec, KVCapacityTokens: 163840, Slots: 128, GPUHourUSD: 3.5}, "q4_0", q4)
	if err != nil {
		t.Fatal(err)
	}
	bw := f16.Decode.BandwidthBytesPerS
	for i, l := range p.Levels {
		rl := f16.Decode.Levels[i]
		want := (q4spec.WeightBytesPerStep(rl.Batch) + rl.Batch*rl.ContextTokens*q4spec.KVBytesPerToken()) / bw
		if math.Abs(l.VariantBoundS-want) > 1e-12 || math.Abs(l.PredictedTPOTS-(l.EngineOverheadS+want)) > 1e-12 {
			t.Errorf("c=%d: bound %.4g (want %.4g), TPOT %.4g", l.Concurrency, l.VariantBoundS, want, l.PredictedTPOTS)
		}
		if l.USDPerMTok <= 0 || l.BeyondWall {
			t.Errorf("c=%d: $%v per Mtok, beyond wall %v", l.Concurrency, l.USDPerMTok, l.BeyondWall)
		}
		t.Logf("c=%-3d ref %.2f ms, overhead %.2f ms, q4 bound %.2f ms → %.2f ms; measured %.2f ms (%+.1f%%)", l.Concurrency,
			l.ReferenceTPOTP50S*1e3, l.EngineOverheadS*1e3, l.VariantBoundS*1e3, l.PredictedTPOTS*1e3, l.MeasuredTPOTP50S*1e3, l.ErrorPct)
	}
	// c=2, where both runs are clean, is within the 15% goal.
	if l := p.Levels[1]; l.Concurrency != 2 || math.Abs(l.ErrorPct) > 15 {
		t.Errorf("c=%d: %+.1f%%", l.Concurrency, l.ErrorPct)
	}
	// The f16 run's wall (engine overhead: its prompt cache thrashes from
	// c=4) ends what it calibrates: only c=1 and c=2 are judged, and the
	// largest error is theirs (c=1's, −18.5%: q4_0's kernels cost more per
	// step than f16's, which the f16 run cannot show).
	if p.ReferenceWall != WallEngineOverhead || p.ReferenceWallConcurrency != 4 || p.Judged != 2 {
		t.Fatalf("reference wall %q at c=%d, %d judged levels", p.ReferenceWall, p.ReferenceWallConcurrency, p.Judged)
	}
	var worst float64
	for _, l := range p.Levels {
		if l.Judged != (l.Concurrency <= 2) || l.Judged != (l.Outside == "") {
			t.Errorf("c=%d: judged %v, outside %q", l.Concurrency, l.Judged, l.Outside)
		}
		if l.Concurrency >= 4 && l.Outside != OutsideReferenceWall {
			t.Errorf("c=%d: outside %q, want %q", l.Concurrency, l.Outside, OutsideReferenceWall)
		}
		if l.Judged {
			worst = math.Max(worst, math.Abs(l.ErrorPct))
		}
	}
	if p.MaxAbsErrorPct != worst || math.Abs(p.MaxAbsErrorPct-18.5) > 0.05 {
		t.Errorf("largest judged error %.2f%% (judged levels: %.2f%%)", p.MaxAbsErrorPct, worst)
	}
	if p.KVWallConcurrency != 0 {
		t.Errorf("KV wall at c=%d with 163840 tokens for 1088-token sequences up to c=16", p.KVWallConcurrency)
	}
	// A 16k-token cache holds 15 sequences of 1,088 tokens: the wall is c=16.
	small, err := Predict("f16", f16, llamacppConfig(t, "config-8b-f16.json"), Variant{Model: q4spec, KVCapacityTokens: 16384}, "", nil)
	if err != nil || small.KVWallConcurrency != 16 {
		t.Errorf("KV wall %d (%v), want 16", small.KVWallConcurrency, err)
	}
}

// TestPredictFromF16OnH100: the same engine, models and plan on an H100,
// with llama-server's prompt cache off (--cache-ram 0), so that every level
// up to c=128 is clean; q4_0 and q8_0 are predicted from f16 with the
// H100's own probe. The f16 run's wall is still engine overhead from c=4
// (its TPOT bends with the batch far below the ridge), so c=1 and c=2 are
// judged: q8_0 is inside the 15% goal at both, q4_0 misses at c=1 as on the
// H200 (its kernels cost more per step than f16's). Past the wall the
// method predicts too little for both formats (the quantized kernels'
// extra cost grows with the batch), pinned so a change shows.
func TestPredictFromF16OnH100(t *testing.T) {
	f16 := analyzeWithProbe(t, llamacppH100, "sweep-f16", "config-8b-f16.json")
	for _, tt := range []struct {
		quant string
		worst float64 // largest judged error, %
	}{
		{"q8_0", 12.0},
		{"q4_0", 16.4},
	} {
		config := "config-8b-" + tt.quant + ".json"
		spec := modelConfigIn(t, llamacppH100, config)
		measured := analyzeWithProbe(t, llamacppH100, "sweep-"+tt.quant, config)
		p, err := Predict("f16", f16, modelConfigIn(t, llamacppH100, "config-8b-f16.json"),
			Variant{Label: tt.quant, Model: spec, KVCapacityTokens: 163840, Slots: 128}, tt.quant, measured)
		if err != nil {
			t.Fatal(err)
		}
		if p.ReferenceWall != WallEngineOverhead || p.ReferenceWallConcurrency != 4 || p.Judged != 2 || len(p.Levels) != 8 {
			t.Fatalf("%s: reference wall %q at c=%d, %d judged of %d levels", tt.quant, p.ReferenceWall, p.ReferenceWallConcurrency, p.Judged, len(p.Levels))
		}
		if math.Abs(p.MaxAbsErrorPct-tt.worst) > 0.05 {
			t.Errorf("%s: largest judged error %.2f%%, want %.1f%%", tt.quant, p.MaxAbsErrorPct, tt.worst)
		}
		var past []float64
		for _, l := range p.Levels {
			t.Logf("%s c=%-3d overhead %.2f ms + bound %.2f ms = %.2f ms; measured %.2f ms (%+.1f%%) judged %v",
				tt.quant, l.Concurrency, l.EngineOverheadS*1e3, l.VariantBoundS*1e3, l.PredictedTPOTS*1e3, l.MeasuredTPOTP50S*1e3, l.ErrorPct, l.Judged)
			if !l.HasMeasured {
				t.Errorf("%s c=%d: no measured level", tt.quant, l.Concurrency)
			}
			// c=2 is inside the goal for both formats.
			if l.Concurrency == 2 && math.Abs(l.ErrorPct) > 15 {
				t.Errorf("%s c=2: %+.1f%%", tt.quant, l.ErrorPct)
			}
			if !l.Judged {
				past = append(past, l.ErrorPct)
			}
		}
		var sum float64
		for _, e := range past {
			sum += e
		}
		if m := sum / float64(len(past)); m > -10 {
			t.Errorf("%s: past the wall the prediction is %+.1f%% off on average, want more than 10%% too little", tt.quant, m)
		}
	}
}

// TestPredictAcrossShapesTransformers: on transformers' continuous batching
// (examples h200 and h200-1b, the same engine and card), the 1B shape
// predicted from the 8B shape. The engine's time per step is mostly host
// overhead that grows with the layers and kernels of the shape (8B: 30 ms
// beyond its bound at c=1; 1B: 10.7 ms), so the calibration does not carry
// across shapes: every level is off by more than 100%, and the prediction
// says the shapes differ. Pinned so that a method that claims to carry
// across shapes has to show it here.
func TestPredictAcrossShapesTransformers(t *testing.T) {
	dir8b, dir1b := filepath.Join("..", "examples", "runs", "h200"), filepath.Join("..", "examples", "runs", "h200-1b")
	ref, m8 := analyzeWithProbe(t, dir8b, "sweep-kv256", "config-8b.json"), modelConfigIn(t, dir8b, "config-8b.json")
	meas, m1 := analyzeWithProbe(t, dir1b, "sweep-kv256", "config-1b.json"), modelConfigIn(t, dir1b, "config-1b.json")
	p, err := Predict("8b", ref, m8, Variant{Label: "1b", Model: m1}, "1b", meas)
	if err != nil {
		t.Fatal(err)
	}
	if !p.OtherShape || len(p.Levels) == 0 {
		t.Fatalf("other shape %v, %d levels", p.OtherShape, len(p.Levels))
	}
	for _, l := range p.Levels {
		if !l.HasMeasured || l.ErrorPct < 100 {
			t.Errorf("c=%d: %+.1f%%", l.Concurrency, l.ErrorPct)
		}
		t.Logf("c=%-3d overhead %.2f ms + 1B bound %.2f ms → %.2f ms; measured %.2f ms (%+.1f%%, %s)", l.Concurrency,
			l.EngineOverheadS*1e3, l.VariantBoundS*1e3, l.PredictedTPOTS*1e3, l.MeasuredTPOTP50S*1e3, l.ErrorPct, l.Outside)
	}
	if same, _ := Predict("8b", ref, m8, Variant{}, "", nil); same.OtherShape {
		t.Error("the reference's own model counts as another shape")
	}
}
