package analyze

import (
	"fmt"

	"github.com/headroom-llm/headroom/roofline"
)

// KneeFraction is the seed's definition of the compute knee: the smallest
// batch whose throughput reaches this fraction of the peak.
const KneeFraction = roofline.KneeFraction

// Roofline is the hardware ceiling measured by a probe.
type Roofline struct {
	GPU                string  `json:"gpu"`
	DType              string  `json:"dtype"`
	K                  int     `json:"k"`
	N                  int     `json:"n"`
	PeakFLOPPerS       float64 `json:"peak_flop_per_s"`
	PeakBatch          int     `json:"peak_batch"`
	BandwidthBytesPerS float64 `json:"bandwidth_bytes_per_s"`
	BandwidthMethod    string  `json:"bandwidth_method"`
	RidgeFLOPPerByte   float64 `json:"ridge_flop_per_byte"`
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

// probeRoofline builds the roofline of one device of a probe run. Peak,
// bandwidth, ridge and knee are the manifest's, which the probe wrote by
// the rule of package roofline (the seed's script 01); a run whose
// manifest lacks them (older runs, hand-made ones) gets them from its
// tables by the same rule. The points come from the tables.
func probeRoofline(run *Run, device int32) (*Roofline, error) {
	rf := roofline.Compute(run.GEMM, run.Bandwidth, roofline.Select{Device: device})
	if len(rf.GEMM) == 0 {
		return nil, fmt.Errorf("%s: no GEMM rows for device %d", run.Dir, device)
	}
	rl := &Roofline{
		DType: rf.DType, K: int(rf.K), N: int(rf.N),
		PeakFLOPPerS: rf.PeakFLOPPerS, PeakBatch: int(rf.PeakBatch),
		BandwidthBytesPerS: rf.BandwidthBytesPerS, BandwidthMethod: rf.BandwidthMethod,
		RidgeFLOPPerByte: rf.RidgeFLOPPerByte, KneeBatch: int(rf.KneeBatch),
	}
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
	return rl, nil
}
