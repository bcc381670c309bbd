package analyze

import (
	"errors"
	"fmt"
	"math"
)

// Variant is what a prediction changes against a measured run: another
// model (another quantization of the same shape), another KV-cache width or
// capacity, a slot cap, or another GPU (its bandwidth and peak, or its probe).
type Variant struct {
	Label string `json:"label"`
	// Model is the variant's model; nil keeps the measured run's.
	Model *ModelSpec `json:"model,omitempty"`
	// KVBits overrides the KV-cache element width (e.g. 8 for an FP8 cache).
	KVBits float64 `json:"kv_bits,omitempty"`
	// KVCapacityTokens is the KV cache the engine holds, in tokens; 0 sizes
	// it from MemoryBytes.
	KVCapacityTokens float64 `json:"kv_capacity_tokens,omitempty"`
	// Slots caps concurrent sequences (llama.cpp -np, vLLM --max-num-seqs).
	Slots int `json:"slots,omitempty"`
	// BandwidthBytesPerS and PeakFLOPPerS describe another GPU; 0 keeps the probe's.
	BandwidthBytesPerS float64 `json:"bandwidth_bytes_per_s,omitempty"`
	PeakFLOPPerS       float64 `json:"peak_flop_per_s,omitempty"`
	// MemoryBytes is the GPU memory that weights and KV cache share; with
	// MemoryFraction (default 0.9) it sizes the KV cache when
	// KVCapacityTokens is 0.
	MemoryBytes    float64 `json:"memory_bytes,omitempty"`
	MemoryFraction float64 `json:"memory_fraction,omitempty"`
	// GPUHourUSD prices the predicted throughput; 0: not priced.
	GPUHourUSD float64 `json:"gpu_hour_usd,omitempty"`
}

// Prediction is a variant's serving curve, calibrated on a measured run: at
// each level the engine's per-step time beyond the bandwidth bound (its
// overhead: launches, scheduling, prefill interleaved with decode, kernels
// below copy speed) is taken from the measured run and added to the
// variant's own bound.
type Prediction struct {
	Label     string `json:"label"`
	Reference string `json:"reference_run"`
	// KVCapacityTokens is the variant's KV cache in tokens (0: unknown);
	// KVWallConcurrency the first level whose sequences do not fit it
	// (0: none in the range), SlotCap the variant's slot cap.
	KVCapacityTokens  float64           `json:"kv_capacity_tokens,omitempty"`
	KVWallConcurrency int               `json:"kv_wall_concurrency,omitempty"`
	SlotCap           int               `json:"slot_cap,omitempty"`
	Levels            []PredictionLevel `json:"levels"`
	// MaxAbsErrorPct is the largest |error| over the judged levels
	// (PredictionLevel.Judged); Measured names the run measured.
	Measured       string  `json:"measured_run,omitempty"`
	MaxAbsErrorPct float64 `json:"max_abs_error_pct,omitempty"`
	// Judged counts the levels the error is judged over. ReferenceWall is
	// the wall the reference run reached (its diagnosis's primary wall; ""
	// for none) and ReferenceWallConcurrency its first level: from there
	// the reference's TPOT is that wall's, not decode's, and calibrates
	// nothing.
	Judged                   int    `json:"judged_levels"`
	ReferenceWall            string `json:"reference_wall,omitempty"`
	ReferenceWallConcurrency int    `json:"reference_wall_concurrency,omitempty"`
	// OtherShape: the variant's model has another shape (layers, widths,
	// heads, experts) than the reference's, so the engine's work per step
	// (kernels launched, their sizes) differs and the calibrated overhead
	// need not carry over.
	OtherShape bool `json:"other_shape,omitempty"`
	// KVSizing says how KVCapacityTokens was derived from the GPU's memory;
	// nil when it was given (or unknown).
	KVSizing *KVSizing `json:"kv_sizing,omitempty"`
}

// KVSizing is a KV capacity derived from GPU memory: Fraction of
// MemoryBytes, less the weights, at BytesPerToken.
type KVSizing struct {
	MemoryBytes   float64 `json:"memory_bytes"`
	Fraction      float64 `json:"fraction"`
	WeightBytes   float64 `json:"weight_bytes"`
	BytesPerToken float64 `json:"bytes_per_token"`
}

// PredictionLevel is one level of a prediction.
type PredictionLevel struct {
	Concurrency int `json:"concurrency"`
	// Calibration from the measured run: its p50 TPOT, its bandwidth bound,
	// and the difference, the engine's overhead per step at this level.
	ReferenceTPOTP50S  float64 `json:"reference_tpot_p50_s"`
	ReferenceBoundS    float64 `json:"reference_bound_s"`
	EngineOverheadS    float64 `json:"engine_overhead_s"`
	VariantBoundS      float64 `json:"variant_bound_s"`
	Bound              string  `json:"bound"` // memory or compute, for the variant
	PredictedTPOTS     float64 `json:"predicted_tpot_p50_s"`
	PredictedOutTokPer float64 `json:"predicted_output_tok_per_s"`
	USDPerMTok         float64 `json:"usd_per_mtok,omitempty"`
	// BeyondWall: the level is past the variant's KV wall or slot cap, where
	// the curve is queueing, not decode.
	BeyondWall bool `json:"beyond_wall,omitempty"`
	// MeasuredTPOTP50S and ErrorPct = (predicted − measured) / measured,
	// when a measured run of the variant is given.
	MeasuredTPOTP50S float64 `json:"measured_tpot_p50_s,omitempty"`
	ErrorPct         float64 `json:"error_pct,omitempty"`
	HasMeasured      bool    `json:"has_measured,omitempty"`
	// Judged: the level counts toward MaxAbsErrorPct. Otherwise Outside
	// says why not (an Outside* value).
	Judged  bool   `json:"judged,omitempty"`
	Outside string `json:"outside,omitempty"`
}

// Why a level with a measurement is not judged.
const (
	OutsideBeyondWall     = "beyond_wall"      // past the variant's KV wall or slot cap
	OutsideReferenceWall  = "reference_wall"   // at or past the reference run's wall
	OutsideNotSustained   = "not_sustained"    // either run did not sustain the level
	OutsideNoMeasuredTPOT = "no_measured_tpot" // the variant's run has no TPOT there
)

// Predict calibrates on ref (a sweep analysed with a probe and the model
// config: its Decode levels) and predicts v. measured, when not nil, is a
// sweep of the variant to compare with, level by level.
func Predict(refDir string, ref *SweepAnalysis, refModel *ModelSpec, v Variant, measuredDir string, measured *SweepAnalysis) (*Prediction, error) {
	if ref == nil || ref.Decode == nil || len(ref.Decode.Levels) == 0 || refModel == nil {
		return nil, errors.New("predict: the measured run needs a probe and its model config (--model-config) to calibrate on")
	}
	d := ref.Decode
	m := v.Model
	if m == nil {
		m = refModel
	}
	if v.KVBits > 0 {
		c := *m
		c.KVBits = v.KVBits
		m = &c
	}
	bw, peak := d.BandwidthBytesPerS, d.PeakFLOPPerS
	if v.BandwidthBytesPerS > 0 {
		bw = v.BandwidthBytesPerS
	}
	if v.PeakFLOPPerS > 0 {
		peak = v.PeakFLOPPerS
	}
	p := &Prediction{Label: v.Label, Reference: refDir, Measured: measuredDir, SlotCap: v.Slots, OtherShape: !sameShape(m, refModel)}
	p.KVCapacityTokens = v.KVCapacityTokens
	if p.KVCapacityTokens == 0 && v.MemoryBytes > 0 {
		frac := v.MemoryFraction
		if frac <= 0 {
			frac = 0.9
		}
		p.KVSizing = &KVSizing{MemoryBytes: v.MemoryBytes, Fraction: frac, WeightBytes: m.TotalParams() * m.WeightBits / 8, BytesPerToken: m.KVBytesPerToken()}
		p.KVCapacityTokens = math.Max(0, (v.MemoryBytes*frac-p.KVSizing.WeightBytes)/p.KVSizing.BytesPerToken)
	}
	meas := map[int]float64{}
	measSustained := map[int]bool{}
	if measured != nil {
		for _, l := range measured.Levels {
			if l.TPOT != nil && l.TPOT.P50S > 0 {
				meas[l.Concurrency] = l.TPOT.P50S
			}
			measSustained[l.Concurrency] = l.Sustained
		}
	}
	seqLen := map[int]float64{}
	refSustained := map[int]bool{}
	for _, l := range ref.Levels {
		seqLen[l.LevelIndex] = l.MeanPromptTokens + l.MeanOutputTokens
		refSustained[l.LevelIndex] = l.Sustained
	}
	wallAt := -1 // the reference's first level at its wall
	if w := ref.Diagnosis.Primary; w.Kind != "" && w.Kind != WallNone && w.Kind != WallInconclusive && w.At.LevelIndex >= 0 {
		wallAt = w.At.LevelIndex
		p.ReferenceWall, p.ReferenceWallConcurrency = w.Kind, w.At.Concurrency
	}
	for _, rl := range d.Levels {
		if rl.MeasuredTPOTP50S <= 0 {
			continue
		}
		pl := PredictionLevel{Concurrency: rl.Concurrency, ReferenceTPOTP50S: rl.MeasuredTPOTP50S, ReferenceBoundS: rl.PredictedTPOTS}
		pl.EngineOverheadS = math.Max(0, rl.MeasuredTPOTP50S-rl.PredictedTPOTS)
		b := rl.Batch
		if v.Slots > 0 {
			b = math.Min(b, float64(v.Slots))
		}
		bytes := m.WeightBytesPerStep(b) + b*rl.ContextTokens*m.KVBytesPerToken()
		memS, compS := bytes/bw, b*m.FLOPPerToken(rl.ContextTokens)/peak
		pl.VariantBoundS, pl.Bound = memS, "memory"
		if compS > memS {
			pl.VariantBoundS, pl.Bound = compS, "compute"
		}
		pl.PredictedTPOTS = pl.EngineOverheadS + pl.VariantBoundS
		pl.PredictedOutTokPer = b / pl.PredictedTPOTS
		if v.GPUHourUSD > 0 {
			pl.USDPerMTok = v.GPUHourUSD / (pl.PredictedOutTokPer * 3600) * 1e6
		}
		// At its end a sequence holds its prompt and all its output: the
		// level's sequences need concurrency × that many tokens of cache.
		need := float64(rl.Concurrency) * seqLen[rl.LevelIndex]
		if p.KVCapacityTokens > 0 && need > p.KVCapacityTokens {
			pl.BeyondWall = true
			if p.KVWallConcurrency == 0 {
				p.KVWallConcurrency = rl.Concurrency
			}
		}
		if v.Slots > 0 && rl.Concurrency > v.Slots {
			pl.BeyondWall = true
		}
		if t, ok := meas[rl.Concurrency]; ok {
			pl.MeasuredTPOTP50S, pl.HasMeasured = t, true
			pl.ErrorPct = (pl.PredictedTPOTS - t) / t * 100
		}
		if measured != nil {
			switch {
			case pl.BeyondWall:
				pl.Outside = OutsideBeyondWall
			case wallAt >= 0 && rl.LevelIndex >= wallAt:
				pl.Outside = OutsideReferenceWall
			case !refSustained[rl.LevelIndex] || !measSustained[rl.Concurrency]:
				pl.Outside = OutsideNotSustained
			case !pl.HasMeasured:
				pl.Outside = OutsideNoMeasuredTPOT
			default:
				pl.Judged = true
				p.Judged++
				p.MaxAbsErrorPct = math.Max(p.MaxAbsErrorPct, math.Abs(pl.ErrorPct))
			}
		}
		p.Levels = append(p.Levels, pl)
	}
	if len(p.Levels) == 0 {
		return nil, errors.New("predict: the measured run has no level with a TPOT to calibrate on")
	}
	return p, nil
}

// sameShape reports whether two models have the same layers and widths
// (they may differ in weight and KV-cache types).
func sameShape(a, b *ModelSpec) bool {
	return a.Layers == b.Layers && a.Hidden == b.Hidden && a.Heads == b.Heads && a.KVHeads == b.KVHeads &&
		a.HeadDim == b.HeadDim && a.Intermediate == b.Intermediate && a.Vocab == b.Vocab &&
		a.Experts == b.Experts && a.ActiveExperts == b.ActiveExperts && a.ExpertIntermediate == b.ExpertIntermediate
}

// reportPredictions predicts each sweep of the report that has a model of its
// own from the sweep named by set.PredictFrom, priced like the reference.
func reportPredictions(rep *Report, set Settings) ([]Prediction, error) {
	var ref *RunAnalysis
	for i := range rep.Runs {
		if rep.Runs[i].Dir == set.PredictFrom {
			ref = &rep.Runs[i]
		}
	}
	if ref == nil || ref.Sweep == nil {
		return nil, fmt.Errorf("predict from %s: not a sweep run of this report", set.PredictFrom)
	}
	refModel := set.modelFor(ref.Dir)
	var out []Prediction
	for i := range rep.Runs {
		r := &rep.Runs[i]
		m := set.RunModels[r.Dir]
		if r.Dir == ref.Dir || r.Sweep == nil || m == nil {
			continue
		}
		v := Variant{Label: analysisLabel(r), Model: m}
		if c := ref.Sweep.Cost; c != nil && c.USDPerGPUHour > 0 {
			v.GPUHourUSD = c.USDPerGPUHour * float64(max(1, c.GPUs))
		}
		p, err := Predict(ref.Dir, ref.Sweep, refModel, v, r.Dir, r.Sweep)
		if err != nil {
			return nil, fmt.Errorf("predict %s from %s: %w", r.Dir, ref.Dir, err)
		}
		out = append(out, *p)
	}
	return out, nil
}

// analysisLabel is a run's label, else its directory.
func analysisLabel(r *RunAnalysis) string {
	if r.Manifest != nil && r.Manifest.Label != "" {
		return r.Manifest.Label
	}
	return r.Dir
}
