package analyze

import (
	"fmt"
	"sort"
)

// KneeFraction is the seed's definition of the compute knee: the smallest
// batch whose throughput reaches this fraction of the peak.
const KneeFraction = 0.9

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

// roofline builds the roofline of one device of a probe run. Peak,
// bandwidth, ridge and knee follow the seed's script 01: peak is the best
// measured GEMM, bandwidth the best measured copy, ridge = peak/bandwidth,
// knee the smallest batch at >= 90% of peak.
func roofline(run *Run, device int32) (*Roofline, error) {
	var pts []RooflinePoint
	rl := &Roofline{}
	for _, g := range run.GEMM {
		if g.Device != device || !soloMode(g.Mode) {
			continue
		}
		pts = append(pts, RooflinePoint{
			Batch: g.Batch, Intensity: g.Intensity, FLOPPerS: g.FLOPPerS,
			TimeS: g.TimeMedianS, TimeMinS: g.TimeMinS, TimeMaxS: g.TimeMaxS,
		})
		rl.DType, rl.K, rl.N = g.DType, int(g.K), int(g.N)
		if g.FLOPPerS > rl.PeakFLOPPerS {
			rl.PeakFLOPPerS, rl.PeakBatch = g.FLOPPerS, int(g.Batch)
		}
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("%s: no GEMM rows for device %d", run.Dir, device)
	}
	for _, b := range run.Bandwidth {
		if b.Device != device || !soloMode(b.Mode) {
			continue
		}
		rl.Bandwidths = append(rl.Bandwidths, BandwidthPoint{Method: b.Method, BufferBytes: b.BufferBytes, BytesPerS: b.BytesPerS})
		// The slope is copy bandwidth (bytes read plus bytes written), as the
		// seed's script 01 measures it; a read-only kernel moves half the
		// bytes per byte of buffer and is listed, not used.
		if b.BytesPerCall < 2*float64(b.BufferBytes) {
			continue
		}
		if b.BytesPerS > rl.BandwidthBytesPerS {
			rl.BandwidthBytesPerS, rl.BandwidthMethod = b.BytesPerS, b.Method
		}
	}
	if rl.BandwidthBytesPerS <= 0 {
		return nil, fmt.Errorf("%s: no bandwidth rows for device %d", run.Dir, device)
	}
	rl.RidgeFLOPPerByte = rl.PeakFLOPPerS / rl.BandwidthBytesPerS
	sort.Slice(pts, func(i, j int) bool { return pts[i].Batch < pts[j].Batch })
	for i := range pts {
		p := &pts[i]
		p.FractionPeak = p.FLOPPerS / rl.PeakFLOPPerS
		p.AttainableFLOPPerS = min(rl.PeakFLOPPerS, p.Intensity*rl.BandwidthBytesPerS)
		if rl.KneeBatch == 0 && p.FLOPPerS >= KneeFraction*rl.PeakFLOPPerS {
			rl.KneeBatch = int(p.Batch)
		}
	}
	rl.Points = pts
	if m := run.Manifest; m != nil {
		for _, g := range m.GPUs {
			if g.Index == int(device) {
				rl.GPU = g.Name
			}
		}
		if m.Probe != nil {
			rl.Validated, rl.Throttled = m.Probe.Validated, m.Probe.Throttled
			rl.ClocksBelowBase, rl.Busy = m.Probe.ClocksBelowBase, m.Probe.Busy
		}
	}
	return rl, nil
}

// soloMode reports whether a probe row measured the GPU alone. Rows from
// `probe --devices all` measured with every GPU busy at once are for the
// agreement check, not the ceiling. Runs written before the mode column
// was added leave it empty.
func soloMode(mode string) bool { return mode == "" || mode == "solo" }
