package analyze

import (
	"math"
	"testing"
)

func analyzeLlamacpp(t *testing.T, sweep, config string) *SweepAnalysis {
	t.Helper()
	set := testSettings()
	set.Model = llamacppConfig(t, config)
	rep, err := Analyze([]*Run{llamacppRun(t, "probe"), llamacppRun(t, sweep)}, set)
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
	if p.KVWallConcurrency != 0 {
		t.Errorf("KV wall at c=%d with 163840 tokens for 1088-token sequences up to c=16", p.KVWallConcurrency)
	}
	// A 16k-token cache holds 15 sequences of 1,088 tokens: the wall is c=16.
	small, err := Predict("f16", f16, llamacppConfig(t, "config-8b-f16.json"), Variant{Model: q4spec, KVCapacityTokens: 16384}, "", nil)
	if err != nil || small.KVWallConcurrency != 16 {
		t.Errorf("KV wall %d (%v), want 16", small.KVWallConcurrency, err)
	}
}
