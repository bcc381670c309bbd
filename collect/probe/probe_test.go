package probe

import (
	"context"
	"errors"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/cuda"
	"github.com/headroom-llm/headroom/cuda/nvml"
	"github.com/headroom-llm/headroom/internal/fakecuda"
	"github.com/headroom-llm/headroom/internal/runtest"
	"github.com/headroom-llm/headroom/rundir"
)

// The fake GPU's roofline: 0.01 TFLOP/s and 1 GB/s for the GEMM, so that
// with K = N = 128 (intensity B/(1 + B/64)) the ridge sits at intensity 10
// and the 90% knee at the first B with intensity ≥ 9, B ≥ 10.47: B = 16.
const (
	fakePeakTFLOPS   = 0.01
	fakeGEMMBWGBps   = 1
	fakeMemcpyGBps   = 2
	fakeCopyKernGBps = 2.5
	fakeSumKernGBps  = 3
	fakeK, fakeN     = 128, 128
)

var fakeBatches = []int{1, 2, 4, 8, 16, 32, 64, 256}

func fakeProber(t *testing.T, f *fakecuda.Fake, opts ...Option) *Prober {
	t.Helper()
	f.SetRoofline(fakePeakTFLOPS, fakeGEMMBWGBps)
	f.SetBandwidth(fakeMemcpyGBps, fakeCopyKernGBps, fakeSumKernGBps)
	base := []Option{
		WithLibraryPaths(cuda.LibraryPaths{Driver: f.DriverPath, CUBLAS: f.CUBLASPath}),
		WithNVMLPath(f.NVMLPath),
		WithShape(fakeK, fakeN),
		WithBatches(fakeBatches...),
		WithBufferSizes(256<<10, 1<<20),
		WithWindow(2 * time.Millisecond), // of the fake's virtual device time
		WithSampleInterval(time.Millisecond),
		WithValidationSamples(64),
	}
	p, err := New(append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestProbeOnFakeGPU runs the whole probe against the fake libraries,
// whose virtual clock follows a known roofline, and checks every derived
// number against that roofline.
func TestProbeOnFakeGPU(t *testing.T) {
	f := fakecuda.Build(t)
	var progress []Progress
	p := fakeProber(t, f, WithProgress(func(pr Progress) { progress = append(progress, pr) }))
	res, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !res.Complete || len(res.Devices) != 1 || len(res.Concurrent) != 0 {
		t.Fatalf("complete %v, %d solo and %d concurrent results", res.Complete, len(res.Devices), len(res.Concurrent))
	}
	if res.CUDADriverVersion != 13000 || res.CUBLASVersion != "13.1.0" || res.CUBLASPath != f.CUBLASPath || res.DriverVersion != "580.0.fake" {
		t.Errorf("versions: CUDA %d, cuBLAS %q at %q, driver %q", res.CUDADriverVersion, res.CUBLASVersion, res.CUBLASPath, res.DriverVersion)
	}
	d := res.Devices[0]
	if d.GPU.Name != "Fake GPU" || d.GPU.PCIBusID != "0000:18:00.0" || d.GPU.PowerLimitW != 700 || d.Mode != ModeSolo {
		t.Errorf("GPU %+v, mode %s", d.GPU, d.Mode)
	}
	if len(d.GEMM) != len(fakeBatches) {
		t.Fatalf("%d GEMM points, want %d", len(d.GEMM), len(fakeBatches))
	}
	for i, pt := range d.GEMM {
		b := fakeBatches[i]
		intensity := float64(b) / (1 + float64(b)/64)
		want := math.Min(fakePeakTFLOPS, intensity*fakeGEMMBWGBps/1000)
		if pt.Batch != b || !near(pt.Intensity, intensity, 1e-12) || !near(pt.TFLOPS, want, 1e-5) {
			t.Errorf("B=%d: intensity %v (want %v), %v TFLOP/s (want %v)", pt.Batch, pt.Intensity, intensity, pt.TFLOPS, want)
		}
		if !pt.Validation.Passed || pt.Validation.Samples != 64 || pt.Validation.UnwrittenCount != 0 {
			t.Errorf("B=%d: validation %+v", b, pt.Validation)
		}
		if len(pt.RepeatTimesMS) != DefaultRepeats || pt.CallsPerRepeat < 1 || pt.TimeMS.SpreadPct > 1e-3 {
			t.Errorf("B=%d: %d repeats of %d calls, spread %v%%", b, len(pt.RepeatTimesMS), pt.CallsPerRepeat, pt.TimeMS.SpreadPct)
		}
		// Enough back-to-back calls to fill the 2 ms window.
		if got := float64(pt.CallsPerRepeat) * pt.TimeMS.Median; got < 2-1e-6 || got > 2+pt.TimeMS.Median+1e-6 {
			t.Errorf("B=%d: %d calls of %v ms do not fill a 2 ms window", b, pt.CallsPerRepeat, pt.TimeMS.Median)
		}
	}
	if !near(d.PeakTFLOPS, fakePeakTFLOPS, 1e-5) {
		t.Errorf("peak %v, want %v", d.PeakTFLOPS, fakePeakTFLOPS)
	}
	if d.KneeBatch != 16 {
		t.Errorf("knee B=%d, want 16", d.KneeBatch)
	}
	if !near(d.BandwidthGBps, fakeCopyKernGBps, 1e-5) || d.BandwidthMethod != MethodCopyKernel || d.BandwidthBufferBytes == 0 {
		t.Errorf("bandwidth %v GB/s by %s at %d bytes, want %v by %s", d.BandwidthGBps, d.BandwidthMethod, d.BandwidthBufferBytes, fakeCopyKernGBps, MethodCopyKernel)
	}
	if !near(d.ReadBandwidthGBps, fakeSumKernGBps, 1e-5) {
		t.Errorf("read bandwidth %v, want %v", d.ReadBandwidthGBps, fakeSumKernGBps)
	}
	if want := fakePeakTFLOPS * 1e12 / (fakeCopyKernGBps * 1e9); !near(d.RidgeFLOPsPerByte, want, 1e-5) {
		t.Errorf("ridge %v, want %v", d.RidgeFLOPsPerByte, want)
	}
	if len(d.Bandwidth) != 6 {
		t.Fatalf("%d bandwidth points, want 2 sizes × 3 methods", len(d.Bandwidth))
	}
	for _, bp := range d.Bandwidth {
		want := map[string]float64{MethodCopyKernel: fakeCopyKernGBps, MethodMemcpy: fakeMemcpyGBps, MethodSumKernel: fakeSumKernGBps}[bp.Method]
		if !bp.Verified || !near(bp.GBps, want, 1e-5) || bp.ReadOnly != (bp.Method == MethodSumKernel) {
			t.Errorf("%s %d bytes: %v GB/s (want %v), verified %v", bp.Method, bp.BufferBytes, bp.GBps, want, bp.Verified)
		}
		wantBytes := 2 * bp.BufferBytes
		if bp.ReadOnly {
			wantBytes = bp.BufferBytes
		}
		if bp.BytesPerCall != wantBytes {
			t.Errorf("%s: %d bytes per call, want %d", bp.Method, bp.BytesPerCall, wantBytes)
		}
	}
	if len(d.Telemetry) < 2 || d.Throttled {
		t.Errorf("%d telemetry samples, throttled %v", len(d.Telemetry), d.Throttled)
	}
	if s := d.Telemetry[0]; s.SMClockMHz != 1980 || s.PowerW != 500 || s.MemUsedBytes != 1<<30 || d.GPU.UUID != "GPU-fake-0118" {
		t.Errorf("sample %+v", d.Telemetry[0])
	}
	// Progress: one call per point, bandwidth first, with the current B.
	if len(progress) != 6+len(fakeBatches) || progress[0].Phase != "bandwidth" || progress[6].Batch != 1 || progress[len(progress)-1].Step != len(progress) {
		t.Errorf("progress %+v", progress)
	}
	// The GEMM reached cuBLAS as Yᵀ = Wᵀ·Xᵀ: m=N, n=B, k=K.
	if !strings.Contains(strings.Join(f.Log(), "\n"), "cublasGemmEx transa=0 transb=0 m=128 n=16 k=128 alpha=1 lda=128 atype=14 ldb=128 btype=14 beta=0 ldc=128 ctype=14 compute=68") {
		t.Error("no cublasGemmEx call with m=N, n=B, k=K for B=16")
	}
}

func TestProbeWrongAnswerFails(t *testing.T) {
	f := fakecuda.Build(t)
	f.CorruptGEMM(true)
	res, err := fakeProber(t, f).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "GEMM: batch 1: wrong answer") {
		t.Fatalf("error %v, want a wrong answer at B=1", err)
	}
	if res.Complete {
		t.Error("a failed probe is marked complete")
	}
	g := res.Devices[0].GEMM
	if len(g) != 1 || g[0].Validation.Passed || g[0].Validation.MaxAbsError < 900 {
		t.Errorf("GEMM points %+v", g)
	}
}

func TestProbeFlagsThrottling(t *testing.T) {
	f := fakecuda.Build(t)
	f.SetNVML(1200, 3201, 690000, 91, nvml.ReasonHWThermalSlowdown|nvml.ReasonSWPowerCap)
	res, err := fakeProber(t, f, WithBatches(1, 2)).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d := res.Devices[0]
	if !d.Throttled || !d.PowerCapped || strings.Join(d.ThrottleReasons, ",") != "hw_thermal_slowdown,sw_power_cap" {
		t.Errorf("throttled %v, power capped %v, reasons %v", d.Throttled, d.PowerCapped, d.ThrottleReasons)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "GPU 0 (solo) was throttled") {
		t.Errorf("warnings %q", res.Warnings)
	}
	if d.Telemetry[0].TemperatureC != 91 {
		t.Errorf("sample %+v", d.Telemetry[0])
	}
	// Clocks far below base, but explained by the power cap and the heat:
	// throttling, not "clocks below base".
	if d.ClocksBelowBase || d.Busy {
		t.Errorf("clocks below base %v, busy %v", d.ClocksBelowBase, d.Busy)
	}
}

// A busy GPU (another compute process) and one whose clocks sit below base
// for no power or thermal reason are flagged in the result, the manifest
// and the telemetry table; headroom's own process is not "another".
func TestProbeFlagsBusyAndLowClocks(t *testing.T) {
	self := uint32(os.Getpid())
	for _, tt := range []struct {
		name          string
		pids          []uint32
		smMHz         uint32
		reasons       uint64
		busy, lowClks bool
		warn          string
	}{
		{name: "idle, only headroom", pids: []uint32{self}, smMHz: 1980},
		{name: "another process", pids: []uint32{self, 31337}, smMHz: 1980, busy: true, warn: "NVML listed 1 other compute process(es) on it (PID 31337)"},
		{name: "host PIDs: headroom and another", pids: []uint32{900001, 900002}, smMHz: 1980, busy: true, warn: "(PID 900002)"},
		{name: "host PIDs: headroom alone", pids: []uint32{900001}, smMHz: 1980},
		{name: "clocks locked below base", pids: []uint32{self}, smMHz: 1200, lowClks: true, warn: "SM clock at 1200 MHz, below its base clock of 1755 MHz"},
		{name: "below base at the power cap", pids: []uint32{self}, smMHz: 1200, reasons: nvml.ReasonSWPowerCap},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := fakecuda.Build(t)
			f.SetNVML(tt.smMHz, 3201, 500000, 50, tt.reasons)
			f.SetNVMLProcesses(tt.pids...)
			res, err := fakeProber(t, f, WithBatches(1, 8)).Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			d := res.Devices[0]
			if d.Busy != tt.busy || d.ClocksBelowBase != tt.lowClks || d.GPU.BaseSMClockMHz != 1755 {
				t.Errorf("busy %v (others %v), clocks below base %v (base %d); want %v, %v", d.Busy, d.OtherPIDs, d.ClocksBelowBase, d.GPU.BaseSMClockMHz, tt.busy, tt.lowClks)
			}
			warnings := strings.Join(res.Warnings, "\n")
			if tt.warn != "" && !strings.Contains(warnings, tt.warn) || tt.warn == "" && warnings != "" {
				t.Errorf("warnings %q, want %q", warnings, tt.warn)
			}
			mp := res.ManifestProbe()
			if mp.Busy != tt.busy || mp.ClocksBelowBase != tt.lowClks {
				t.Errorf("manifest probe: busy %v, clocks below base %v", mp.Busy, mp.ClocksBelowBase)
			}
			if rows := res.TelemetryRows(); len(rows) == 0 || rows[0].Processes != int32(len(tt.pids)) {
				t.Errorf("telemetry processes %d, want %d", rows[0].Processes, len(tt.pids))
			}
		})
	}
}

func TestProbeWithoutNVML(t *testing.T) {
	f := fakecuda.Build(t)
	f.FailNVMLInit(9)
	res, err := fakeProber(t, f, WithBatches(1)).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Devices[0].Telemetry) != 0 || !strings.Contains(strings.Join(res.Warnings, "\n"), "no GPU telemetry") ||
		!strings.Contains(strings.Join(res.Warnings, "\n"), "NVML_ERROR_DRIVER_NOT_LOADED") {
		t.Errorf("warnings %q", res.Warnings)
	}
}

func TestProbeAllDevices(t *testing.T) {
	f := fakecuda.Build(t)
	f.SetDevices(3)
	var mu = make(chan struct{}, 1)
	seen := map[Mode]map[int]bool{ModeSolo: {}, ModeConcurrent: {}}
	p := fakeProber(t, f, WithBatches(1, 16), WithBufferSizes(64<<10), WithProgress(func(pr Progress) {
		mu <- struct{}{}
		seen[pr.Mode][pr.Ordinal] = true
		<-mu
	}))
	res, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Devices) != 3 || len(res.Concurrent) != 3 || len(seen[ModeSolo]) != 3 || len(seen[ModeConcurrent]) != 3 {
		t.Fatalf("%d solo, %d concurrent results; progress seen %v", len(res.Devices), len(res.Concurrent), seen)
	}
	for i, d := range append(res.Devices, res.Concurrent...) {
		if d.GPU.Ordinal != i%3 || !near(d.PeakTFLOPS, fakePeakTFLOPS, 1e-5) {
			t.Errorf("result %d: GPU %d (%s), peak %v", i, d.GPU.Ordinal, d.Mode, d.PeakTFLOPS)
		}
	}
	// Identical fakes, each with its own clock: nothing to flag.
	if len(res.Disagreements) != 0 {
		t.Errorf("disagreements %+v", res.Disagreements)
	}
	_, err = fakeProber(t, f, WithDevices(3), WithBatches(1)).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "GPU 3 does not exist: the CUDA driver sees 3 GPU(s), 0 to 2") {
		t.Errorf("probing a missing GPU: %v", err)
	}
}

func TestFindDisagreements(t *testing.T) {
	dev := func(ord int, mode Mode, peak, bw float64) DeviceResult {
		return DeviceResult{GPU: GPU{Ordinal: ord, Name: "NVIDIA H200"}, Mode: mode, PeakTFLOPS: peak, BandwidthGBps: bw}
	}
	solo := []DeviceResult{dev(0, ModeSolo, 782, 4186), dev(1, ModeSolo, 779, 4190), dev(2, ModeSolo, 740, 4180), dev(3, ModeSolo, 785, 4175)}
	conc := []DeviceResult{dev(0, ModeConcurrent, 781, 4180), dev(1, ModeConcurrent, 770, 4185), dev(2, ModeConcurrent, 738, 4170), dev(3, ModeConcurrent, 784, 4176)}
	got := findDisagreements(solo, conc, 0.03)
	type key struct {
		ord     int
		mode    Mode
		metric  string
		against string
	}
	want := map[key]bool{
		{2, ModeSolo, "peak_tflops", "median of the other 3 NVIDIA H200"}:       true, // 740 vs 782: −5.4%
		{2, ModeConcurrent, "peak_tflops", "median of the other 3 NVIDIA H200"}: true, // 738 vs 781: −5.5%
	}
	// GPU 1 lost 1.2% against its solo run: under 3%, not flagged.
	for _, d := range got {
		k := key{d.Ordinal, d.Mode, d.Metric, d.Against}
		if !want[k] {
			t.Errorf("unexpected disagreement %+v", d)
		}
		delete(want, k)
		if !strings.Contains(d.Message, "power limit or a thermal problem") {
			t.Errorf("message %q", d.Message)
		}
	}
	for k := range want {
		t.Errorf("missing disagreement %+v", k)
	}
	// Two cards 5% apart: each disagrees with the other.
	two := findDisagreements([]DeviceResult{dev(0, ModeSolo, 780, 4200), dev(1, ModeSolo, 780, 4000)}, nil, 0.03)
	if len(two) != 2 || two[0].Metric != "bandwidth_gbps" || two[0].Against != "other NVIDIA H200" || !near(two[0].DiffPct, 5, 1e-12) {
		t.Errorf("two cards: %+v", two)
	}
	// A card that drops 4% when all run at once is flagged against its solo run.
	drop := findDisagreements([]DeviceResult{dev(0, ModeSolo, 780, 4200)}, []DeviceResult{dev(0, ModeConcurrent, 748, 4200)}, 0.03)
	if len(drop) != 1 || drop[0].Against != "same GPU's solo run" || drop[0].Mode != ModeConcurrent {
		t.Errorf("drop: %+v", drop)
	}
	// Different models are not compared with each other.
	mixed := []DeviceResult{dev(0, ModeSolo, 780, 4200), {GPU: GPU{Ordinal: 1, Name: "NVIDIA H100"}, Mode: ModeSolo, PeakTFLOPS: 700, BandwidthGBps: 3000}}
	if d := findDisagreements(mixed, nil, 0.03); len(d) != 0 {
		t.Errorf("mixed models: %+v", d)
	}
}

func TestProbeCancelled(t *testing.T) {
	f := fakecuda.Build(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p := fakeProber(t, f, WithProgress(func(pr Progress) {
		if pr.Phase == "gemm" && pr.Batch == 4 {
			cancel()
		}
	}))
	res, err := p.Run(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if res.Complete || len(res.Devices) != 1 || len(res.Devices[0].GEMM) != 2 || len(res.Devices[0].Bandwidth) != 6 {
		t.Errorf("partial result: complete %v, %d devices", res.Complete, len(res.Devices))
	}
	// The partial result still has its derived numbers.
	if res.Devices[0].BandwidthGBps == 0 || res.Devices[0].PeakTFLOPS == 0 {
		t.Errorf("partial result lacks summaries: %+v", res.Devices[0])
	}
}

func TestProbeWithoutDriver(t *testing.T) {
	p, err := New(WithLibraryPaths(cuda.LibraryPaths{Driver: t.TempDir() + "/libcuda.so.1"}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Run(context.Background())
	if !errors.Is(err, cuda.ErrLibraryNotFound) {
		t.Errorf("error %v, want ErrLibraryNotFound", err)
	}
}

func TestOptionsValidate(t *testing.T) {
	bad := []Option{
		WithBatches(), WithBatches(0), WithShape(0, 8), WithRepeats(0), WithWindow(0),
		WithBufferSizes(100), WithCopyLaunch(100, 4), WithCopyLaunch(256, 0), WithKneeFraction(1.5),
		WithDisagreementFraction(0), WithValidationSamples(0), WithDevices(0, 0), WithDevices(-1),
		WithSampleInterval(0), WithWarmupCalls(-1), WithMaxCallsPerRepeat(0),
	}
	for i, o := range bad {
		if _, err := New(o); err == nil {
			t.Errorf("bad option %d accepted", i)
		}
	}
	if _, err := New(); err != nil {
		t.Errorf("defaults rejected: %v", err)
	}
}

func TestSummarizeTelemetry(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	samples := []TelemetrySample{
		{Time: at(0), SMClockMHz: 1980, MemClockMHz: 3201, PowerW: 120, TemperatureC: 40},
		{Time: at(10), SMClockMHz: 1755, MemClockMHz: 3201, PowerW: 690, TemperatureC: 60, ClockEventReasons: nvml.ReasonSWPowerCap},
		{Time: at(20), SMClockMHz: 1650, MemClockMHz: 3201, PowerW: 700, TemperatureC: 62, ClockEventReasons: nvml.ReasonSWPowerCap},
		{Time: at(30), SMClockMHz: 1200, MemClockMHz: 3201, PowerW: 500, TemperatureC: 88, ClockEventReasons: nvml.ReasonSWThermalSlowdown},
	}
	got := summarizeTelemetry(samples, at(10), at(20))
	want := PointTelemetry{Samples: 2, SMClockMHzMedian: 1702.5, MemClockMHzMedian: 3201, PowerWMax: 700, TemperatureCMax: 62, ClockEventReasons: nvml.ReasonSWPowerCap}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := summarizeTelemetry(samples, at(25), at(40)); !got.Throttled || got.Samples != 1 {
		t.Errorf("thermal slowdown not flagged: %+v", got)
	}
	d := DeviceResult{Telemetry: samples[:3]}
	flagThrottling(&d)
	if d.Throttled || !d.PowerCapped || strings.Join(d.ThrottleReasons, ",") != "sw_power_cap" {
		t.Errorf("power cap alone: %+v", d)
	}
}

func TestResultToRunDir(t *testing.T) {
	f := fakecuda.Build(t)
	f.SetDevices(2)
	f.SetNVMLEnergy(4200000)
	res, err := fakeProber(t, f, WithBatches(1, 16, 64)).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	run, err := rundir.Create(t.TempDir()+"/run", &rundir.Manifest{})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.WriteTo(run); err != nil {
		t.Fatal(err)
	}
	if err := run.Finish(nil); err != nil {
		t.Fatal(err)
	}
	back, err := rundir.Open(run.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Check(); err != nil {
		t.Fatal(err)
	}
	gemm := runtest.Table[rundir.ProbeGEMMRow](t, run.Dir, rundir.TableProbeGEMM)
	if len(gemm) != 2*2*3 { // 2 GPUs × (solo, concurrent) × 3 batch sizes
		t.Fatalf("%d GEMM rows", len(gemm))
	}
	g := gemm[1] // GPU 0, solo, B=16
	if g.Device != 0 || g.Mode != "solo" || g.Batch != 16 || g.DType != "bf16" || g.K != 128 ||
		!near(g.FLOPPerS, fakePeakTFLOPS*1e12, 1e-5) || !near(g.FLOP/g.TimeMedianS, g.FLOPPerS, 1e-9) || g.MaxRelErr > 1.0/128 {
		t.Errorf("row %+v", g)
	}
	if gemm[len(gemm)-1].Mode != "concurrent" || gemm[len(gemm)-1].Device != 1 {
		t.Errorf("last row %+v", gemm[len(gemm)-1])
	}
	bw, err := rundir.ReadTable[rundir.ProbeBandwidthRow](run.Dir, rundir.TableProbeBandwidth)
	if err != nil || len(bw) != 2*2*6 {
		t.Fatalf("%d bandwidth rows, %v", len(bw), err)
	}
	if b := bw[0]; b.Method != MethodCopyKernel || b.BufferBytes != 256<<10 || b.BytesPerCall != 512<<10 || !near(b.BytesPerS, fakeCopyKernGBps*1e9, 1e-5) {
		t.Errorf("bandwidth row %+v", b)
	}
	tel, err := rundir.ReadTable[rundir.GPUTelemetryRow](run.Dir, rundir.TableGPUTelemetry)
	if err != nil || len(tel) < 8 || tel[0].PowerW != 500 || tel[0].Processes != 0 || // the fake lists no process by default
		tel[0].EnergyMJ == nil || *tel[0].EnergyMJ != 4200000 {
		t.Fatalf("%d telemetry rows (%v), the first %+v", len(tel), err, tel[0])
	}
	m := back.Manifest
	if !m.Complete || !m.HasKind(rundir.KindProbe) || len(m.GPUs) != 2 || m.GPUs[1].BusID != "0000:19:00.0" || m.GPUs[0].CUDAVersion != "13.0" || m.GPUs[0].Driver != "580.0.fake" {
		t.Errorf("manifest %+v, GPUs %+v", m, m.GPUs)
	}
	p := m.Probe
	if p == nil || p.KneeBatch != 16 || p.BandwidthMethod != MethodCopyKernel || !p.Validated || p.Throttled ||
		!near(p.RidgeFLOPPerByte, 4, 1e-5) || !near(p.BandwidthBytesPerS, 2.5e9, 1e-5) || len(p.Devices) != 2 || p.DType != "bf16" {
		t.Errorf("manifest probe %+v", p)
	}
}
