package analyze

import (
	"testing"

	"github.com/headroom-llm/headroom/rundir"
)

// The roofline's slope is the copy bandwidth of the GPU probed alone, as
// the seed defines it: a faster read-only kernel and rows measured with
// every GPU busy at once (probe --devices all) are listed or ignored, not
// used for the ridge.
func TestRooflineUsesSoloCopyBandwidth(t *testing.T) {
	const gib = 1 << 30
	run := &Run{
		Dir:      "probe.run",
		Manifest: &rundir.Manifest{GPUs: []rundir.GPU{{Index: 0, Name: "NVIDIA H200"}}},
		GEMM: []rundir.ProbeGEMMRow{
			{Batch: 1, K: 8192, N: 8192, Intensity: 1, FLOPPerS: 4e12, Mode: "solo"},
			{Batch: 4096, K: 8192, N: 8192, Intensity: 2048, FLOPPerS: 800e12, Mode: "solo"},
			{Batch: 4096, K: 8192, N: 8192, Intensity: 2048, FLOPPerS: 900e12, Mode: "concurrent"},
			{Batch: 4096, K: 8192, N: 8192, Intensity: 2048, FLOPPerS: 950e12, Device: 1, Mode: "solo"},
		},
		Bandwidth: []rundir.ProbeBandwidthRow{
			{Method: "memcpy_dtod", BufferBytes: 4 * gib, BytesPerCall: 8 * gib, BytesPerS: 4.0e12, Mode: "solo"},
			{Method: "read_kernel", BufferBytes: 4 * gib, BytesPerCall: 4 * gib, BytesPerS: 4.4e12, Mode: "solo"},
			{Method: "memcpy_dtod", BufferBytes: 4 * gib, BytesPerCall: 8 * gib, BytesPerS: 4.2e12, Mode: "concurrent"},
		},
	}
	rl, err := probeRoofline(run, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rl.PeakFLOPPerS != 800e12 || rl.BandwidthBytesPerS != 4.0e12 || rl.BandwidthMethod != "memcpy_dtod" || rl.RidgeFLOPPerByte != 200 {
		t.Errorf("peak %g, bandwidth %g (%s), ridge %g; want 8e14, 4e12 (memcpy_dtod), 200",
			rl.PeakFLOPPerS, rl.BandwidthBytesPerS, rl.BandwidthMethod, rl.RidgeFLOPPerByte)
	}
	if len(rl.Bandwidths) != 2 || len(rl.Points) != 2 {
		t.Errorf("listed %d bandwidths and %d points, want the 2 solo ones of each", len(rl.Bandwidths), len(rl.Points))
	}
}

// The headline numbers are the manifest's, written by the probe; a run
// whose manifest lacks them (an older or hand-made run) gets them from its
// tables by the same rule.
func TestRooflineTakesTheManifestsNumbers(t *testing.T) {
	run := &Run{
		Dir: "probe.run",
		GEMM: []rundir.ProbeGEMMRow{
			{Batch: 1, Intensity: 1, FLOPPerS: 4e12, Mode: "solo"},
			{Batch: 512, Intensity: 500, FLOPPerS: 760e12, Mode: "solo"},
			{Batch: 4096, Intensity: 2048, FLOPPerS: 800e12, Mode: "solo"},
		},
		Bandwidth: []rundir.ProbeBandwidthRow{{Method: "copy_kernel", BufferBytes: 1, BytesPerCall: 2, BytesPerS: 4e12, Mode: "solo"}},
	}
	fromTables, err := probeRoofline(run, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fromTables.PeakFLOPPerS != 800e12 || fromTables.RidgeFLOPPerByte != 200 || fromTables.KneeBatch != 512 {
		t.Errorf("from the tables: %+v", fromTables)
	}
	run.Manifest = &rundir.Manifest{Probe: &rundir.Probe{Devices: []int{0}, ProbeRoofline: rundir.ProbeRoofline{PeakFLOPPerS: 810e12, PeakBatch: 4096,
		BandwidthBytesPerS: 4.05e12, BandwidthMethod: "memcpy_dtod", RidgeFLOPPerByte: 200.0}}}
	rl, err := probeRoofline(run, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rl.PeakFLOPPerS != 810e12 || rl.BandwidthBytesPerS != 4.05e12 || rl.BandwidthMethod != "memcpy_dtod" || rl.KneeBatch != 512 {
		t.Errorf("with the manifest's numbers: %+v (knee from the tables, the manifest has none)", rl)
	}
	if p := rl.Points[2]; p.FractionPeak != 800.0/810 || p.AttainableFLOPPerS != 810e12 {
		t.Errorf("point against the manifest's peak: %+v", p)
	}
	// The manifest's numbers are the first probed GPU's: not device 1's.
	run.Manifest.Probe.Devices = []int{1}
	if rl, _ := probeRoofline(run, 0); rl.PeakFLOPPerS != 800e12 {
		t.Errorf("another device's manifest numbers used: %+v", rl)
	}
}
