package probe

import (
	"fmt"
	"io"
	"strings"

	"github.com/headroom-llm/headroom/rundir"
)

// WriteSummary prints the probe's numbers for a terminal: per GPU run, the
// GEMM sweep, the bandwidth points, and peak, bandwidth, ridge and knee;
// then the warnings.
func (r *Result) WriteSummary(w io.Writer) error {
	var b strings.Builder
	for _, d := range r.allDevices() {
		g := d.GPU
		fmt.Fprintf(&b, "\nGPU %d  %s  %.0f GB  %d SMs  (%s)\n", g.Ordinal, g.Name, float64(g.TotalMemoryBytes)/1e9, g.Multiprocessors, d.Mode)
		fmt.Fprintf(&b, "  %6s %10s %10s %9s %10s %7s\n", "B", "intensity", "TFLOP/s", "ms/call", "spread", "calls")
		for _, p := range d.GEMM {
			if len(p.RepeatTimesMS) == 0 {
				continue
			}
			fmt.Fprintf(&b, "  %6d %10.1f %10.1f %9.4f %9.1f%% %7d\n", p.Batch, p.Intensity, p.TFLOPS, p.TimeMS.Median, p.TimeMS.SpreadPct, p.CallsPerRepeat)
		}
		for _, p := range d.Bandwidth {
			fmt.Fprintf(&b, "  %-12s %5d MiB %8.0f GB/s (spread %.1f%%)\n", p.Method, p.BufferBytes>>20, p.GBps, p.TimeMS.SpreadPct)
		}
		fmt.Fprintf(&b, "  bandwidth        %.0f GB/s  (%s, %d MiB buffer, bytes read + written)\n", d.BandwidthGBps, d.BandwidthMethod, d.BandwidthBufferBytes>>20)
		fmt.Fprintf(&b, "  read-only        %.0f GB/s\n", d.ReadBandwidthGBps)
		fmt.Fprintf(&b, "  peak observed    %.1f TFLOP/s  (B=%d)\n", d.PeakTFLOPS, d.PeakBatch)
		fmt.Fprintf(&b, "  empirical ridge  %.0f FLOP/byte\n", d.RidgeFLOPsPerByte)
		knee := "not reached"
		if d.KneeBatch > 0 {
			knee = fmt.Sprintf("batch %d", d.KneeBatch)
		}
		fmt.Fprintf(&b, "  %.0f%% of peak at   %s\n", 100*r.KneeFraction, knee)
		if d.PeakFP8TFLOPS > 0 {
			fmt.Fprintf(&b, "  FP8 peak         %.1f TFLOP/s  (B=%d, E4M3 through cuBLASLt), ridge %.0f FLOP/byte, %.0f%% at batch %d\n",
				d.PeakFP8TFLOPS, d.PeakFP8Batch, d.RidgeFP8FLOPsPerByte, 100*r.KneeFraction, d.KneeFP8Batch)
		}
		if floors := r.deviceFloors(d); len(floors) > 0 {
			fmt.Fprintf(&b, "  %s decode step, weight GEMMs only (attention not included):\n", r.Model)
			for _, fl := range floors {
				fmt.Fprintf(&b, "    B=%-4d %-8s %8.3f ms  (%.2f GB of weights: %.0f GB/s)\n", fl.Batch, fl.DType, fl.GEMMSeconds*1e3, fl.WeightBytes/1e9, fl.WeightBytes/fl.GEMMSeconds/1e9)
			}
		}
	}
	for _, warn := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", warn)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// deviceFloors is one device's measured decode-step floors (solo runs only).
func (r *Result) deviceFloors(d DeviceResult) []rundir.StepFloor {
	if d.Mode != ModeSolo {
		return nil
	}
	var out []rundir.StepFloor
	for _, f := range rundir.StepFloors(r.ModelGEMMRows()) {
		if f.Device == int32(d.GPU.Ordinal) {
			out = append(out, f)
		}
	}
	return out
}
