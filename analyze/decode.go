package analyze

import (
	"math"
	"strconv"
	"strings"

	"github.com/headroom-llm/headroom/modelspec"
	"github.com/headroom-llm/headroom/rundir"
)

// DecodeRoofline is the roofline gap: per level, the decode ceiling the
// probe's bandwidth and peak predict for the model, against what the sweep
// measured; and where the measured knee lies relative to the ridge.
type DecodeRoofline struct {
	ProbeRun string `json:"probe_run"` // directory of the probe used
	GPU      string `json:"gpu"`
	// TensorParallel GPUs serve one model replica; bandwidth and peak are
	// the probe's per-GPU values times this (perfect scaling assumed).
	TensorParallel     int     `json:"tensor_parallel"`
	BandwidthBytesPerS float64 `json:"bandwidth_bytes_per_s"`
	PeakFLOPPerS       float64 `json:"peak_flop_per_s"`
	RidgeFLOPPerByte   float64 `json:"ridge_flop_per_byte"`
	// Model facts the prediction rests on; nil without --model-config.
	Model *ModelFacts `json:"model,omitempty"`
	// CeilingDType is the probe dtype whose peak is the compute ceiling:
	// fp8_e4m3 for FP8-served weights when the probe measured it, else bf16.
	CeilingDType string `json:"ceiling_dtype,omitempty"`
	// FloorDType is the probe dtype of the measured step floor the levels
	// use (probe --model-config); "" when there is none for this model.
	FloorDType string        `json:"floor_dtype,omitempty"`
	Levels     []DecodeLevel `json:"levels,omitempty"`
	Ridge      RidgeCheck    `json:"ridge_check"`
	Notes      []Note        `json:"notes,omitempty"`
}

// ModelFacts are the model numbers derived from its config.
type ModelFacts struct {
	Spec                 *ModelSpec `json:"spec"`
	TotalParams          float64    `json:"total_params"`
	ActiveParamsPerToken float64    `json:"active_params_per_token"`
	WeightBytesPerStepB1 float64    `json:"weight_bytes_per_step_batch1"`
	KVBytesPerToken      float64    `json:"kv_bytes_per_token"`
}

// DecodeLevel is the predicted decode ceiling at one level and the
// measured values against it.
type DecodeLevel struct {
	LevelIndex  int     `json:"level_index"`
	Concurrency int     `json:"concurrency"`
	RateRPS     float64 `json:"rate_rps,omitempty"`
	// Batch is the decode batch assumed: the concurrency (closed loop) or
	// the mean requests in flight by Little's law (open loop).
	Batch                float64 `json:"batch"`
	ContextTokens        float64 `json:"context_tokens"` // mean tokens in a sequence's cache during decode
	WeightBytes          float64 `json:"weight_bytes_per_step"`
	KVBytes              float64 `json:"kv_bytes_per_step"`
	FLOP                 float64 `json:"flop_per_step"`
	IntensityFLOPPerByte float64 `json:"intensity_flop_per_byte"`
	// Bound is "memory" or "compute": which term sets the predicted step.
	Bound                  string  `json:"bound"`
	PredictedStepS         float64 `json:"predicted_step_s"`
	PredictedTPOTS         float64 `json:"predicted_tpot_floor_s"`
	PredictedOutputTokPerS float64 `json:"predicted_output_tok_per_s_ceiling"`
	MeasuredTPOTP50S       float64 `json:"measured_tpot_p50_s"`
	MeasuredOutputTokPerS  float64 `json:"measured_output_tok_per_s"`
	// ThroughputFraction = measured / predicted throughput (the gap: 1 is
	// the roofline); TPOTRatio = measured p50 TPOT / predicted floor.
	ThroughputFraction float64 `json:"throughput_fraction_of_ceiling"`
	TPOTRatio          float64 `json:"tpot_over_floor"`
	// AchievedFLOPPerS is measured throughput × FLOPs per token, for the
	// roofline chart.
	AchievedFLOPPerS float64 `json:"achieved_flop_per_s"`

	// The measured floor, where the probe timed the model's own decode GEMMs
	// (probe --model-config): FloorGEMMS is their time at this batch,
	// FloorAttentionS the KV-cache reads at the probe's bandwidth (modelled,
	// not measured), MeasuredFloorS their sum. The roofline gap TPOTRatio
	// splits into SiliconFactor = MeasuredFloorS / PredictedTPOTS (the
	// silicon's: real GEMMs do not stream at copy bandwidth) and EngineFactor
	// = measured TPOT / MeasuredFloorS (the engine's: everything else it does
	// per step). Zero without a floor.
	FloorGEMMS      float64 `json:"floor_gemm_s,omitempty"`
	FloorAttentionS float64 `json:"floor_attention_modelled_s,omitempty"`
	MeasuredFloorS  float64 `json:"measured_floor_s,omitempty"`
	SiliconFactor   float64 `json:"silicon_factor,omitempty"`
	EngineFactor    float64 `json:"engine_factor,omitempty"`
}

// RidgeCheck compares the decode arithmetic intensity at the measured TPOT
// knee with the probe's ridge point.
type RidgeCheck struct {
	// KneeConcurrency is the TPOT knee (0: none, then the check is made
	// at the highest level); AtLevel, AtConcurrency and AtLoad name the
	// level checked.
	KneeConcurrency      int     `json:"knee_concurrency"`
	AtLevel              int     `json:"at_level"`
	AtConcurrency        int     `json:"at_concurrency"`
	AtLoad               LoadKey `json:"at_load"`
	IntensityFLOPPerByte float64 `json:"intensity_flop_per_byte"`
	// Approximate is true when the intensity is the seed's "intensity ≈
	// batch" (16-bit weights dominating the bytes) for want of a model config.
	Approximate      bool    `json:"approximate"`
	RidgeFLOPPerByte float64 `json:"ridge_flop_per_byte"`
	Ratio            float64 `json:"intensity_over_ridge"`
	// Verdict: "agree", "knee_before_ridge", "knee_after_ridge",
	// "no_knee", or "" when not computable; AgreeFactor is the factor of
	// the ridge within which the knee agrees with it.
	Verdict     string  `json:"verdict"`
	AgreeFactor float64 `json:"agree_factor"`
}

// Ridge check verdicts.
const (
	RidgeAgree      = "agree"
	RidgeKneeBefore = "knee_before_ridge"
	RidgeKneeAfter  = "knee_after_ridge"
	RidgeNoKnee     = "no_knee"
)

// ridgeAgreeFactor: the knee's intensity within this factor of the ridge
// counts as agreement.
const ridgeAgreeFactor = 2.0

// decodeRoofline builds the roofline gap from the probe's roofline.
func decodeRoofline(levels []LevelStats, knees Knees, probe *Roofline, probeDir string, model *ModelSpec, mode string, eng engineFacts) *DecodeRoofline {
	d := &DecodeRoofline{ProbeRun: probeDir, GPU: probe.GPU, TensorParallel: eng.tp()}
	tp := float64(d.TensorParallel)
	d.BandwidthBytesPerS = probe.BandwidthBytesPerS * tp
	d.PeakFLOPPerS = probe.PeakFLOPPerS * tp
	d.RidgeFLOPPerByte = probe.RidgeFLOPPerByte
	d.CeilingDType = probe.DType
	weights := weightDType(model)
	if weights == DTypeFP8 && probe.FP8 != nil {
		d.PeakFLOPPerS, d.RidgeFLOPPerByte, d.CeilingDType = probe.FP8.PeakFLOPPerS*tp, probe.FP8.RidgeFLOPPerByte, DTypeFP8
		d.Notes = append(d.Notes, Note{Kind: NoteFP8Ceiling})
	}
	if floorUsable(probe, model, weights) {
		d.FloorDType = weights
		d.Notes = append(d.Notes, Note{Kind: NoteMeasuredFloor, Text: probe.FloorModel, Name: weights})
	} else if model != nil && len(probe.StepFloors) > 0 {
		d.Notes = append(d.Notes, Note{Kind: NoteFloorOtherModel, Text: probe.FloorModel})
	}
	if d.TensorParallel > 1 {
		d.Notes = append(d.Notes, Note{Kind: NoteTensorParallel, Count: d.TensorParallel, FromLog: eng.fromLog[efTensorParallel]})
	}
	if d.CeilingDType != DTypeFP8 && probe.DType != "" && model != nil && modelspec.NormalizeDType(probe.DType) != model.DType {
		d.Notes = append(d.Notes, Note{Kind: NoteDTypeMismatch, Text: probe.DType, Name: model.DType})
	}
	d.Notes = append(d.Notes, Note{Kind: NoteDecodeOnly})
	if model == nil {
		d.Notes = append(d.Notes, Note{Kind: NoteNoModelConfig})
	} else {
		d.Model = &ModelFacts{
			Spec: model, TotalParams: model.TotalParams(), ActiveParamsPerToken: model.ActiveParamsPerToken(),
			WeightBytesPerStepB1: model.WeightBytesPerStep(1), KVBytesPerToken: model.KVBytesPerToken(),
		}
		for _, l := range levels {
			if dl, ok := predictLevel(l, model, d, mode); ok {
				splitGap(&dl, probe, d)
				d.Levels = append(d.Levels, dl)
			}
		}
	}
	d.Ridge = ridgeCheck(levels, knees, d, model, mode)
	return d
}

func predictLevel(l LevelStats, m *ModelSpec, d *DecodeRoofline, mode string) (DecodeLevel, bool) {
	b := decodeBatch(l, mode)
	if b <= 0 || l.MeanPromptTokens+l.MeanOutputTokens <= 0 {
		return DecodeLevel{}, false
	}
	dl := DecodeLevel{LevelIndex: l.LevelIndex, Concurrency: l.Concurrency, RateRPS: l.RateRPS, Batch: b}
	dl.ContextTokens = l.MeanPromptTokens + l.MeanOutputTokens/2
	dl.WeightBytes = m.WeightBytesPerStep(b)
	dl.KVBytes = b * dl.ContextTokens * m.KVBytesPerToken()
	dl.FLOP = b * m.FLOPPerToken(dl.ContextTokens)
	bytes := dl.WeightBytes + dl.KVBytes
	dl.IntensityFLOPPerByte = dl.FLOP / bytes
	memS, compS := bytes/d.BandwidthBytesPerS, dl.FLOP/d.PeakFLOPPerS
	dl.PredictedStepS, dl.Bound = memS, "memory"
	if compS > memS {
		dl.PredictedStepS, dl.Bound = compS, "compute"
	}
	dl.PredictedTPOTS = dl.PredictedStepS
	dl.PredictedOutputTokPerS = b / dl.PredictedStepS
	if l.TPOT != nil {
		dl.MeasuredTPOTP50S = l.TPOT.P50S
		if dl.MeasuredTPOTP50S > 0 {
			dl.TPOTRatio = dl.MeasuredTPOTP50S / dl.PredictedTPOTS
		}
	}
	dl.MeasuredOutputTokPerS = l.OutputTokPerS
	dl.ThroughputFraction = l.OutputTokPerS / dl.PredictedOutputTokPerS
	dl.AchievedFLOPPerS = l.OutputTokPerS * dl.FLOP / b
	return dl, true
}

// weightDType is the probe dtype that matches the model's weights: bf16 for
// 16-bit float weights (bf16 or fp16: the GEMMs run alike), fp8_e4m3 for
// FP8, "" for other quantizations (the probe has no int4 or GGUF GEMMs).
func weightDType(m *ModelSpec) string {
	switch {
	case m == nil:
		return ""
	case m.Quantized && m.WeightBits == 8 && strings.Contains(strings.ToLower(m.WeightBitsSource), "fp8"):
		return DTypeFP8
	case !m.Quantized && m.WeightBits == 16:
		return "bf16"
	}
	return ""
}

// floorUsable says whether the probe's step floors are of this model: same
// weight dtype, and the batch-1 floor reads the weights the model's GEMMs
// read (within 1%).
func floorUsable(probe *Roofline, m *ModelSpec, dtype string) bool {
	if m == nil || dtype == "" {
		return false
	}
	want := modelspec.GEMMWeightParams(m.DecodeGEMMs(1)) * 2
	if dtype == DTypeFP8 {
		want /= 2
	}
	for _, f := range probe.StepFloors {
		if f.DType == dtype && f.Batch == 1 {
			return math.Abs(f.WeightBytes-want) <= 0.01*want
		}
	}
	return false
}

// splitGap adds the measured floor and the silicon/engine split to a level.
func splitGap(dl *DecodeLevel, probe *Roofline, d *DecodeRoofline) {
	if d.FloorDType == "" {
		return
	}
	gemm, ok := probe.FloorAt(dl.Batch, d.FloorDType)
	if !ok {
		return
	}
	dl.FloorGEMMS = gemm / float64(d.TensorParallel)
	dl.FloorAttentionS = dl.KVBytes / d.BandwidthBytesPerS
	dl.MeasuredFloorS = dl.FloorGEMMS + dl.FloorAttentionS
	dl.SiliconFactor = dl.MeasuredFloorS / dl.PredictedTPOTS
	if dl.MeasuredTPOTP50S > 0 {
		dl.EngineFactor = dl.MeasuredTPOTP50S / dl.MeasuredFloorS
	}
}

// decodeBatch is the decode batch of a level: its concurrency in a closed
// loop; in an open loop, requests in flight by Little's law (completion
// rate × mean E2E), capped by the concurrency limit.
func decodeBatch(l LevelStats, mode string) float64 {
	if mode == "open" && l.E2E != nil && l.RequestsPerS > 0 {
		// Mean E2E is not kept; the median is a close, conservative stand-in.
		b := l.RequestsPerS * l.E2E.P50S
		if l.Concurrency > 0 {
			b = math.Min(b, float64(l.Concurrency))
		}
		return b
	}
	return float64(l.Concurrency)
}

func ridgeCheck(levels []LevelStats, knees Knees, d *DecodeRoofline, m *ModelSpec, mode string) RidgeCheck {
	rc := RidgeCheck{KneeConcurrency: knees.TPOTKneeConcurrency, RidgeFLOPPerByte: d.RidgeFLOPPerByte, AtLevel: -1, AgreeFactor: ridgeAgreeFactor}
	p := levelPos(levels, knees.TPOTKneeLevel)
	if p < 0 {
		p = len(levels) - 1 // no knee: the highest level
	}
	if p < 0 || d.RidgeFLOPPerByte <= 0 {
		return rc
	}
	lvl := &levels[p]
	rc.AtLevel, rc.AtConcurrency, rc.AtLoad = lvl.LevelIndex, lvl.Concurrency, lvl.Load
	b := decodeBatch(*lvl, mode)
	if m != nil && lvl.MeanPromptTokens+lvl.MeanOutputTokens > 0 {
		ctx := lvl.MeanPromptTokens + lvl.MeanOutputTokens/2
		rc.IntensityFLOPPerByte = b * m.FLOPPerToken(ctx) / (m.WeightBytesPerStep(b) + b*ctx*m.KVBytesPerToken())
	} else {
		rc.IntensityFLOPPerByte, rc.Approximate = b, true
	}
	rc.Ratio = rc.IntensityFLOPPerByte / d.RidgeFLOPPerByte
	switch {
	case knees.TPOTKneeLevel < 0:
		rc.Verdict = RidgeNoKnee
	case rc.Ratio < 1/ridgeAgreeFactor:
		rc.Verdict = RidgeKneeBefore
	case rc.Ratio > ridgeAgreeFactor:
		rc.Verdict = RidgeKneeAfter
	default:
		rc.Verdict = RidgeAgree
	}
	return rc
}

// manifestTensorParallel reads the tensor-parallel size from the
// manifest's engine config facts or flags; 0 when not recorded.
func manifestTensorParallel(m *rundir.Manifest) int {
	if m == nil || m.Engine == nil {
		return 0
	}
	if v, err := strconv.Atoi(m.Engine.Config["tensor_parallel_size"]); err == nil && v > 0 {
		return v
	}
	f := m.Engine.Flags
	for i, a := range f {
		name, val, hasVal := strings.Cut(a, "=")
		if name != "--tensor-parallel-size" && name != "-tp" && name != "--tp" && name != "--tp-size" {
			continue
		}
		if !hasVal && i+1 < len(f) {
			val = f[i+1]
		}
		if v, err := strconv.Atoi(val); err == nil && v > 0 {
			return v
		}
	}
	return 0
}
