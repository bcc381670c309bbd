package probe

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/headroom-llm/headroom/internal/runtest"
	"github.com/headroom-llm/headroom/internal/seedtest"
	"github.com/headroom-llm/headroom/rundir"
)

// TestH200ValidationRuns re-reads the runs recorded on an H200 for
// docs/probe-validation.md: each headroom run directory must be readable,
// its rows consistent with this package's arithmetic (that its manifest's
// headline numbers follow from them is package roofline's test), and
// against the script 01 run of the same pair the
// copy bandwidth and peak must be at least the script's and the B=1 time at
// most the script's.
func TestH200ValidationRuns(t *testing.T) {
	base := filepath.Join("..", "..", "testdata", "probe-h200")
	for i := 1; i <= 3; i++ {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			dir := filepath.Join(base, fmt.Sprintf("headroom-%d", i))
			run, err := rundir.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := run.Check(); err != nil {
				t.Fatal(err)
			}
			gemm := runtest.Table[rundir.ProbeGEMMRow](t, dir, rundir.TableProbeGEMM)
			bw := runtest.Table[rundir.ProbeBandwidthRow](t, dir, rundir.TableProbeBandwidth)
			if len(gemm) != len(DefaultBatches) || len(bw) != 3*len(DefaultBufferSizes) {
				t.Fatalf("%d GEMM and %d bandwidth rows", len(gemm), len(bw))
			}
			var b1MS float64
			for _, r := range gemm {
				if !near(r.Intensity, Intensity(int(r.Batch), int(r.K), int(r.N)), 1e-12) || !near(r.FLOPPerS, r.FLOP/r.TimeMedianS, 1e-9) {
					t.Errorf("B=%d: row inconsistent: %+v", r.Batch, r)
				}
				if r.MaxRelErr <= 0 || r.MaxRelErr > 1.0/64 {
					t.Errorf("B=%d: max relative error %v is not bf16 rounding", r.Batch, r.MaxRelErr)
				}
				if r.Batch == 1 {
					b1MS = r.TimeMedianS * 1e3
				}
			}
			p := run.Manifest.Probe
			if !p.Validated || p.Throttled {
				t.Errorf("manifest %+v: not validated, or throttled", p)
			}

			script := seedtest.ReadRoofline(t, filepath.Join(base, fmt.Sprintf("roofline_NVIDIA_H200-%d.json", i)))
			if r := p.BandwidthBytesPerS / (script.BandwidthTBs * 1e12); r < 1 {
				t.Errorf("copy bandwidth %.3f× the script's", r)
			}
			if r := p.PeakFLOPPerS / (script.PeakTFLOPS * 1e12); r < 1 {
				t.Errorf("peak %.3f× the script's", r)
			}
			if b1MS > script.Sweep[0].LatencyMS || script.Sweep[0].Batch != 1 {
				t.Errorf("B=1: %.4f ms, script %.4f ms", b1MS, script.Sweep[0].LatencyMS)
			}
		})
	}
}
