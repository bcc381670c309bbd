package roofline

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/headroom-llm/headroom/internal/runtest"
	"github.com/headroom-llm/headroom/internal/seedtest"
	"github.com/headroom-llm/headroom/rundir"
)

func near(got, want, rel float64) bool { return math.Abs(got-want) <= rel*math.Abs(want) }

// TestRealProbeRuns recomputes the roofline of real H200 probe runs
// (testdata/probe-h200: three solo runs and one of two GPUs, solo and
// concurrent) from their tables and gets the headline numbers the probe
// wrote into their manifests.
func TestRealProbeRuns(t *testing.T) {
	for _, name := range []string{"headroom-1", "headroom-2", "headroom-3", "headroom-all"} {
		dir := filepath.Join("..", "testdata", "probe-h200", name)
		m, err := rundir.ReadManifest(dir)
		if err != nil {
			t.Fatal(err)
		}
		gemm, bw := runtest.Table[rundir.ProbeGEMMRow](t, dir, rundir.TableProbeGEMM), runtest.Table[rundir.ProbeBandwidthRow](t, dir, rundir.TableProbeBandwidth)
		p := m.Probe
		rl := Compute(gemm, bw, Select{Device: gemm[0].Device})
		if !near(rl.PeakFLOPPerS, p.PeakFLOPPerS, 1e-12) || rl.PeakBatch != int64(p.PeakBatch) ||
			!near(rl.BandwidthBytesPerS, p.BandwidthBytesPerS, 1e-12) || rl.BandwidthMethod != p.BandwidthMethod ||
			!near(rl.RidgeFLOPPerByte, p.RidgeFLOPPerByte, 1e-9) || rl.KneeBatch != int64(p.KneeBatch) ||
			rl.DType != p.DType || rl.K != int64(p.K) || rl.N != int64(p.N) {
			t.Errorf("%s: computed %+v\nmanifest %+v", name, rl, p)
		}
		if rl.ReadBandwidthBytesPerS <= 0 || rl.ReadBandwidthBytesPerS == rl.BandwidthBytesPerS {
			t.Errorf("%s: read-only bandwidth %v", name, rl.ReadBandwidthBytesPerS)
		}
		for i := 1; i < len(rl.GEMM); i++ {
			if rl.GEMM[i].Batch < rl.GEMM[i-1].Batch || rl.GEMM[i].Mode == "concurrent" {
				t.Fatalf("%s: GEMM rows not the solo ones by batch", name)
			}
		}
		if name == "headroom-all" {
			// The concurrent run of the same GPU is a roofline of its own.
			c := Compute(gemm, bw, Select{Device: gemm[0].Device, Mode: "concurrent"})
			if len(c.GEMM) != len(rl.GEMM) || c.PeakFLOPPerS == rl.PeakFLOPPerS || c.PeakFLOPPerS == 0 {
				t.Errorf("concurrent roofline %+v", c)
			}
		}
	}
}

// TestSeedScript01 checks the rule against the seed's own H200 result: its
// sweep gives its peak (B=2048), its ridge (186.876 FLOP/byte with its
// bandwidth) and its knee (B=512); B=384 at 88.6% of the peak is just below.
func TestSeedScript01(t *testing.T) {
	s := seedtest.ReadRoofline(t, filepath.Join("..", "testdata", "seed", "roofline_NVIDIA_H200.json"))
	var gemm []rundir.ProbeGEMMRow
	for i := len(s.Sweep) - 1; i >= 0; i-- { // unsorted on purpose
		gemm = append(gemm, rundir.ProbeGEMMRow{Batch: int64(s.Sweep[i].Batch), FLOPPerS: s.Sweep[i].TFLOPS * 1e12, DType: "bf16", K: 8192, N: 8192})
	}
	bw := []rundir.ProbeBandwidthRow{{BufferBytes: 512 << 20, BytesPerCall: 2 * (512 << 20), BytesPerS: s.BandwidthTBs * 1e12}}
	rl := Compute(gemm, bw, Select{})
	if !near(rl.PeakFLOPPerS, s.PeakTFLOPS*1e12, 1e-12) || rl.PeakBatch != 2048 {
		t.Errorf("peak %v at B=%d", rl.PeakFLOPPerS, rl.PeakBatch)
	}
	if !near(rl.RidgeFLOPPerByte, s.Ridge, 1e-9) || math.Round(rl.RidgeFLOPPerByte*1000)/1000 != 186.876 {
		t.Errorf("ridge %v, script %v", rl.RidgeFLOPPerByte, s.Ridge)
	}
	if rl.KneeBatch != int64(s.KneeBatch) || rl.KneeBatch != 512 {
		t.Errorf("knee B=%d, script B=%d", rl.KneeBatch, s.KneeBatch)
	}
	if k := Compute(gemm, bw, Select{KneeFraction: 0.88}).KneeBatch; k != 384 {
		t.Errorf("knee at 88%% = %d, want 384", k)
	}
	// The seed's worked example: 170 TFLOP/s over 1500 GB/s, a ridge of about 113.
	ex := Compute([]rundir.ProbeGEMMRow{{FLOPPerS: 170e12}}, []rundir.ProbeBandwidthRow{{BufferBytes: 1, BytesPerCall: 2, BytesPerS: 1500e9}}, Select{})
	if math.Round(ex.RidgeFLOPPerByte) != 113 || ex.Attainable(10) != 10*1500e9 || ex.Attainable(1000) != 170e12 {
		t.Errorf("worked example: ridge %v", ex.RidgeFLOPPerByte)
	}
}

func TestSelectAndEdges(t *testing.T) {
	gemm := []rundir.ProbeGEMMRow{
		{Device: 0, Mode: "solo", DType: "bf16", K: 8, N: 8, Batch: 64, FLOPPerS: 95},
		{Device: 0, Mode: "", DType: "bf16", K: 8, N: 8, Batch: 8, FLOPPerS: 40}, // an old run: no mode
		{Device: 0, Mode: "solo", DType: "bf16", K: 8, N: 8, Batch: 32, FLOPPerS: 91},
		{Device: 0, Mode: "solo", DType: "bf16", K: 8, N: 8, Batch: 128, FLOPPerS: 100},
		{Device: 0, Mode: "solo", DType: "fp8", K: 8, N: 8, Batch: 128, FLOPPerS: 180},
		{Device: 0, Mode: "solo", DType: "bf16", K: 4, N: 16, Batch: 128, FLOPPerS: 70},
		{Device: 1, Mode: "solo", DType: "bf16", K: 8, N: 8, Batch: 128, FLOPPerS: 300},
		{Device: 0, Mode: "concurrent", DType: "bf16", K: 8, N: 8, Batch: 128, FLOPPerS: 99},
	}
	rl := Compute(gemm, nil, Select{DType: "bf16", K: 8, N: 8})
	if rl.PeakFLOPPerS != 100 || rl.PeakBatch != 128 || rl.KneeBatch != 32 || len(rl.GEMM) != 4 || rl.RidgeFLOPPerByte != 0 || rl.DType != "bf16" {
		t.Errorf("bf16 square: %+v", rl)
	}
	if fp8 := Compute(gemm, nil, Select{DType: "fp8"}); fp8.PeakFLOPPerS != 180 || len(fp8.GEMM) != 1 {
		t.Errorf("fp8: %+v", fp8)
	}
	if all := Compute(gemm, nil, Select{}); all.DType != "" || all.K != 0 || all.PeakFLOPPerS != 180 {
		t.Errorf("mixed rows: %+v", all)
	}
	if none := Compute(nil, nil, Select{}); none.PeakFLOPPerS != 0 || none.KneeBatch != 0 || none.RidgeFLOPPerByte != 0 {
		t.Errorf("no rows: %+v", none)
	}
	bw := []rundir.ProbeBandwidthRow{
		{Method: "copy", BufferBytes: 100, BytesPerCall: 200, BytesPerS: 5},
		{Method: "read", BufferBytes: 100, BytesPerCall: 100, BytesPerS: 9},
		{Method: "memcpy", BufferBytes: 400, BytesPerCall: 800, BytesPerS: 6},
		{Device: 1, Method: "copy", BufferBytes: 100, BytesPerCall: 200, BytesPerS: 50},
	}
	b := Compute(gemm, bw, Select{DType: "bf16", K: 8, N: 8})
	if b.BandwidthBytesPerS != 6 || b.BandwidthMethod != "memcpy" || b.BandwidthBufferBytes != 400 || b.ReadBandwidthBytesPerS != 9 || len(b.Bandwidth) != 3 || b.RidgeFLOPPerByte != 100.0/6 {
		t.Errorf("bandwidth: %+v", b)
	}
}
