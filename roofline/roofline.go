// Package roofline derives a GPU's roofline from the probe's measurements,
// as the seed's script 01 defines it, in base units: the peak is the
// highest measured GEMM throughput (FLOP/s), the bandwidth the best
// measured copy (bytes read plus written per second), the ridge
// peak / bandwidth (FLOP per byte), and the knee the smallest batch size
// whose throughput reaches 90% of the peak.
//
// The probe uses it for the manifest and its printout, the analyzer for
// runs whose manifest lacks the numbers, so both say the same. It reads the
// run directory's probe rows and nothing else.
package roofline

import (
	"cmp"
	"slices"

	"github.com/headroom-llm/headroom/rundir"
)

// KneeFraction is the seed's knee: the smallest batch reaching 90% of the peak.
const KneeFraction = 0.9

// ModeSolo is the probe_gemm and probe_bandwidth mode of a GPU measured
// alone: the ceiling. Rows measured with every GPU busy at once
// ("concurrent") are for the probe's agreement check.
const ModeSolo = "solo"

// Select says which rows make one roofline.
type Select struct {
	Device int32
	// Mode is ModeSolo (the default, "") or "concurrent". Runs written
	// before the mode column existed leave it empty; they count as solo.
	Mode string
	// DType keeps only GEMM rows of this element type ("bf16"); "" keeps
	// every row. The bandwidth does not depend on it.
	DType string
	// K and N keep only GEMM rows of this shape; 0 keeps every shape.
	K, N int64
	// KneeFraction of the peak defines the knee; 0 means KneeFraction.
	KneeFraction float64
}

// Roofline is the ceiling of one GPU.
type Roofline struct {
	DType string // of the GEMM rows used ("" when they disagree)
	K, N  int64  // of the GEMM rows used (0 when they disagree)

	PeakFLOPPerS float64 // highest measured GEMM throughput
	PeakBatch    int64   // its batch size (the first such row)
	// BandwidthBytesPerS is the best copy bandwidth (bytes read plus
	// written), over methods and buffer sizes; the method and buffer say
	// where it was reached.
	BandwidthBytesPerS   float64
	BandwidthMethod      string
	BandwidthBufferBytes int64
	// ReadBandwidthBytesPerS is the best read-only bandwidth; it does not
	// enter the ridge, which the seed defines from a copy.
	ReadBandwidthBytesPerS float64
	// RidgeFLOPPerByte is peak / bandwidth; 0 without both.
	RidgeFLOPPerByte float64
	// KneeBatch is the smallest batch at or above KneeFraction of the peak;
	// 0 without GEMM rows.
	KneeBatch    int64
	KneeFraction float64

	// GEMM holds the rows used, by batch size; Bandwidth the bandwidth
	// rows of the device and mode, in their order.
	GEMM      []rundir.ProbeGEMMRow
	Bandwidth []rundir.ProbeBandwidthRow
}

// Compute derives the roofline from the rows sel picks. Without GEMM or
// bandwidth rows the corresponding numbers stay zero: a probe stopped part
// way has a roofline, incomplete.
func Compute(gemm []rundir.ProbeGEMMRow, bandwidth []rundir.ProbeBandwidthRow, sel Select) *Roofline {
	rl := &Roofline{KneeFraction: sel.KneeFraction}
	if rl.KneeFraction == 0 {
		rl.KneeFraction = KneeFraction
	}
	for i, g := range gemm {
		if g.Device != sel.Device || !sameMode(g.Mode, sel.Mode) || sel.DType != "" && g.DType != sel.DType ||
			sel.K != 0 && g.K != sel.K || sel.N != 0 && g.N != sel.N {
			continue
		}
		if len(rl.GEMM) == 0 {
			rl.DType, rl.K, rl.N = g.DType, g.K, g.N
		} else if rl.DType != g.DType || rl.K != g.K || rl.N != g.N {
			rl.DType, rl.K, rl.N = "", 0, 0
		}
		rl.GEMM = append(rl.GEMM, gemm[i])
		if g.FLOPPerS > rl.PeakFLOPPerS {
			rl.PeakFLOPPerS, rl.PeakBatch = g.FLOPPerS, g.Batch
		}
	}
	slices.SortStableFunc(rl.GEMM, func(a, b rundir.ProbeGEMMRow) int { return cmp.Compare(a.Batch, b.Batch) })
	for _, g := range rl.GEMM {
		if g.FLOPPerS >= rl.KneeFraction*rl.PeakFLOPPerS {
			rl.KneeBatch = g.Batch
			break
		}
	}
	for i, b := range bandwidth {
		if b.Device != sel.Device || !sameMode(b.Mode, sel.Mode) {
			continue
		}
		rl.Bandwidth = append(rl.Bandwidth, bandwidth[i])
		switch {
		case ReadOnly(b):
			rl.ReadBandwidthBytesPerS = max(rl.ReadBandwidthBytesPerS, b.BytesPerS)
		case b.BytesPerS > rl.BandwidthBytesPerS:
			rl.BandwidthBytesPerS, rl.BandwidthMethod, rl.BandwidthBufferBytes = b.BytesPerS, b.Method, b.BufferBytes
		}
	}
	if rl.PeakFLOPPerS > 0 && rl.BandwidthBytesPerS > 0 {
		rl.RidgeFLOPPerByte = rl.PeakFLOPPerS / rl.BandwidthBytesPerS
	}
	return rl
}

// ReadOnly reports whether a bandwidth row measured reads alone: it moved
// fewer bytes per call than a copy of its buffer (read plus write). The
// ridge uses copies only, as the seed's script measures them.
func ReadOnly(b rundir.ProbeBandwidthRow) bool { return b.BytesPerCall < 2*float64(b.BufferBytes) }

// Attainable is the roofline's bound at an arithmetic intensity (FLOP per
// byte): min(peak, intensity × bandwidth).
func (rl *Roofline) Attainable(intensity float64) float64 {
	return min(rl.PeakFLOPPerS, intensity*rl.BandwidthBytesPerS)
}

func sameMode(row, want string) bool {
	if want == "" || want == ModeSolo {
		return row == "" || row == ModeSolo
	}
	return row == want
}
