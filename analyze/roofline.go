package analyze

import (
	"fmt"

	"github.com/headroom-llm/headroom/roofline"
	"github.com/headroom-llm/headroom/rundir"
)

// KneeFraction is the seed's definition of the compute knee: the smallest
// batch whose throughput reaches this fraction of the peak.
const KneeFraction = roofline.KneeFraction

// Roofline is the hardware ceiling measured by a probe.
type Roofline struct {
	GPU string `json:"gpu"`
	rundir.ProbeRoofline
	// KneeBatch is the smallest batch at >= 90% of peak; 0 if none.
	KneeBatch int  `json:"knee_batch"`
	Validated bool `json:"validated"`
	Throttled bool `json:"throttled"`
	// ClocksBelowBase and Busy: the probe ran with the SM clock below base
	// for no power or thermal reason, or with other processes on the GPU.
	ClocksBelowBase bool             `json:"clocks_below_base,omitempty"`
	Busy            bool             `json:"busy,omitempty"`
	Points          []RooflinePoint  `json:"points"`
	Bandwidths      []BandwidthPoint `json:"bandwidths"`
	// FP8 is the same GEMM's ceiling in FP8 (E4M3), when the probe measured
	// it (`probe --dtype fp8`): the compute ceiling of FP8-served models.
	FP8 *Ceiling `json:"fp8,omitempty"`
	// StepFloors is the measured GEMM floor of the model's decode step per
	// batch and dtype (`probe --model-config`); FloorModel names the model.
	StepFloors []StepFloor `json:"step_floors,omitempty"`
	FloorModel string      `json:"floor_model,omitempty"`
}

// RooflinePoint is one measured GEMM shape.
type RooflinePoint struct {
	Batch        int64   `json:"batch"`
	Intensity    float64 `json:"intensity_flop_per_byte"`
	FLOPPerS     float64 `json:"flop_per_s"`
	TimeS        float64 `json:"time_per_call_s"`
	TimeMinS     float64 `json:"time_per_call_min_s"`
	TimeMaxS     float64 `json:"time_per_call_max_s"`
	FractionPeak float64 `json:"fraction_of_peak"`
	// Attainable is min(peak, intensity x bandwidth): the roofline's bound.
	AttainableFLOPPerS float64 `json:"attainable_flop_per_s"`
}

// BandwidthPoint is one measured bandwidth.
type BandwidthPoint struct {
	Method      string  `json:"method"`
	BufferBytes int64   `json:"buffer_bytes"`
	BytesPerS   float64 `json:"bytes_per_s"`
}

// Ceiling is one dtype's GEMM peak, ridge (against the probe's copy
// bandwidth) and knee.
type Ceiling struct {
	DType            string          `json:"dtype"`
	PeakFLOPPerS     float64         `json:"peak_flop_per_s"`
	PeakBatch        int             `json:"peak_batch"`
	RidgeFLOPPerByte float64         `json:"ridge_flop_per_byte"`
	KneeBatch        int             `json:"knee_batch"`
	Points           []RooflinePoint `json:"points"`
}

// StepFloor is the measured GEMM floor of one decode step (rundir.StepFloors).
type StepFloor = rundir.StepFloor

// DTypeFP8 is the probe's dtype name of its FP8 (E4M3) GEMMs.
const DTypeFP8 = "fp8_e4m3"

// primaryDType is the dtype whose GEMM rows make a probe's roofline: bf16
// (the seed's) when present, else the first row's.
func primaryDType(rows []rundir.ProbeGEMMRow) string {
	for _, g := range rows {
		if g.DType == "bf16" || g.DType == "" {
			return g.DType
		}
	}
	if len(rows) > 0 {
		return rows[0].DType
	}
	return ""
}

// probeRoofline builds the roofline of one device of a probe run. Peak,
// bandwidth, ridge and knee are the manifest's, which the probe wrote by
// the rule of package roofline (the seed's script 01); a run whose
// manifest lacks them (older runs, hand-made ones) gets them from its
// tables by the same rule. The points come from the tables.
func probeRoofline(run *Run, device int32) (*Roofline, error) {
	rf := roofline.Compute(run.GEMM, run.Bandwidth, roofline.Select{Device: device, DType: primaryDType(run.GEMM)})
	if len(rf.GEMM) == 0 {
		return nil, fmt.Errorf("%s: no GEMM rows for device %d", run.Dir, device)
	}
	rl := &Roofline{ProbeRoofline: rundir.ProbeRoofline{
		DType: rf.DType, K: int(rf.K), N: int(rf.N),
		PeakFLOPPerS: rf.PeakFLOPPerS, PeakBatch: int(rf.PeakBatch),
		BandwidthBytesPerS: rf.BandwidthBytesPerS, BandwidthMethod: rf.BandwidthMethod,
		RidgeFLOPPerByte: rf.RidgeFLOPPerByte,
	}, KneeBatch: int(rf.KneeBatch)}
	if m := run.Manifest; m != nil {
		for _, g := range m.GPUs {
			if g.Index == int(device) {
				rl.GPU = g.Name
			}
		}
		if p := m.Probe; p != nil {
			rl.Validated, rl.Throttled = p.Validated, p.Throttled
			rl.ClocksBelowBase, rl.Busy = p.ClocksBelowBase, p.Busy
			if p.PeakFLOPPerS > 0 && p.BandwidthBytesPerS > 0 && p.RidgeFLOPPerByte > 0 && (len(p.Devices) == 0 || p.Devices[0] == int(device)) {
				rl.PeakFLOPPerS, rl.PeakBatch = p.PeakFLOPPerS, p.PeakBatch
				rl.BandwidthBytesPerS, rl.BandwidthMethod = p.BandwidthBytesPerS, p.BandwidthMethod
				rl.RidgeFLOPPerByte = p.RidgeFLOPPerByte
				if p.KneeBatch > 0 { // absent in runs that did not reach it, or predate it
					rl.KneeBatch = p.KneeBatch
				}
			}
		}
	}
	if rl.BandwidthBytesPerS <= 0 {
		return nil, fmt.Errorf("%s: no bandwidth rows for device %d", run.Dir, device)
	}
	for _, b := range rf.Bandwidth {
		rl.Bandwidths = append(rl.Bandwidths, BandwidthPoint{Method: b.Method, BufferBytes: b.BufferBytes, BytesPerS: b.BytesPerS})
	}
	for _, g := range rf.GEMM {
		rl.Points = append(rl.Points, RooflinePoint{
			Batch: g.Batch, Intensity: g.Intensity, FLOPPerS: g.FLOPPerS,
			TimeS: g.TimeMedianS, TimeMinS: g.TimeMinS, TimeMaxS: g.TimeMaxS,
			FractionPeak:       g.FLOPPerS / rl.PeakFLOPPerS,
			AttainableFLOPPerS: min(rl.PeakFLOPPerS, g.Intensity*rl.BandwidthBytesPerS),
		})
	}
	rl.FP8 = fp8Ceiling(run, device, rl.BandwidthBytesPerS)
	rl.StepFloors, rl.FloorModel = stepFloors(run.ModelGEMM, device)
	return rl, nil
}

// fp8Ceiling is the FP8 rows' ceiling by the same rule as the bf16 one,
// against the same copy bandwidth; nil without FP8 rows.
func fp8Ceiling(run *Run, device int32, bandwidth float64) *Ceiling {
	rf := roofline.Compute(run.GEMM, run.Bandwidth, roofline.Select{Device: device, DType: DTypeFP8})
	if len(rf.GEMM) == 0 || bandwidth <= 0 {
		return nil
	}
	c := &Ceiling{DType: DTypeFP8, PeakFLOPPerS: rf.PeakFLOPPerS, PeakBatch: int(rf.PeakBatch), KneeBatch: int(rf.KneeBatch),
		RidgeFLOPPerByte: rf.PeakFLOPPerS / bandwidth}
	for _, g := range rf.GEMM {
		c.Points = append(c.Points, RooflinePoint{
			Batch: g.Batch, Intensity: g.Intensity, FLOPPerS: g.FLOPPerS,
			TimeS: g.TimeMedianS, TimeMinS: g.TimeMinS, TimeMaxS: g.TimeMaxS,
			FractionPeak:       g.FLOPPerS / c.PeakFLOPPerS,
			AttainableFLOPPerS: min(c.PeakFLOPPerS, g.Intensity*bandwidth),
		})
	}
	return c
}

// stepFloors is the device's floors and the model they are of.
func stepFloors(rows []rundir.ProbeModelGEMMRow, device int32) ([]StepFloor, string) {
	var out []StepFloor
	for _, f := range rundir.StepFloors(rows) {
		if f.Device == device {
			out = append(out, f)
		}
	}
	model := ""
	for _, r := range rows {
		if r.Device == device {
			model = r.Model
		}
	}
	return out, model
}

// FloorAt is the measured GEMM floor of a decode step of batch b in dtype:
// the floor at b, else linear between the nearest measured batches around
// it; ok is false outside the measured batches or without a floor.
func (rl *Roofline) FloorAt(b float64, dtype string) (seconds float64, ok bool) {
	var lo, hi *StepFloor
	for i := range rl.StepFloors {
		f := &rl.StepFloors[i]
		if f.DType != dtype {
			continue
		}
		if float64(f.Batch) == b {
			return f.GEMMSeconds, true
		}
		if float64(f.Batch) < b && (lo == nil || f.Batch > lo.Batch) {
			lo = f
		}
		if float64(f.Batch) > b && (hi == nil || f.Batch < hi.Batch) {
			hi = f
		}
	}
	if lo == nil || hi == nil {
		return 0, false
	}
	t := (b - float64(lo.Batch)) / float64(hi.Batch-lo.Batch)
	return lo.GEMMSeconds + t*(hi.GEMMSeconds-lo.GEMMSeconds), true
}
