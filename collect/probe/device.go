package probe

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/headroom-llm/headroom/cuda"
	"github.com/headroom-llm/headroom/cuda/nvml"
	"github.com/headroom-llm/headroom/roofline"
)

// memoryReserveBytes is left free when sizing the bandwidth buffers: the
// GEMM's buffers and cuBLAS's workspace come after them, and the driver
// needs some memory of its own.
const memoryReserveBytes = 1 << 30

// deviceRun probes one GPU. It must run on a goroutine of its own: the CUDA
// context it opens locks that goroutine to its OS thread.
type deviceRun struct {
	cfg     *config
	drv     *cuda.Driver
	in      *inputs
	ordinal int
	mode    Mode
	nvmlDev *nvml.Device // nil without NVML

	c      *cuda.Context
	timer  *cuda.Timer
	res    DeviceResult
	step   int
	steps  int
	blasV  string
	blasP  string
	ltV    string
	ltP    string
	warned []string
}

func (r *deviceRun) progress(p Progress) {
	r.step++
	if r.cfg.progress == nil {
		return
	}
	p.Ordinal, p.Mode, p.Step, p.Steps = r.ordinal, r.mode, r.step, r.steps
	r.cfg.progress(p)
}

func (r *deviceRun) warn(format string, args ...any) {
	r.warned = append(r.warned, fmt.Sprintf("GPU %d (%s): ", r.ordinal, r.mode)+fmt.Sprintf(format, args...))
}

// run measures bandwidth, then the GEMM sweep (the seed's order). On error
// it returns what it measured so far.
func (r *deviceRun) run(ctx context.Context) (res DeviceResult, err error) {
	r.res = DeviceResult{Mode: r.mode, Started: r.cfg.now()}
	r.steps = 3*len(r.cfg.bufferSizes) + len(r.cfg.batches) + r.cfg.modelPoints()
	if r.cfg.fp8 {
		r.steps += len(r.cfg.batches)
	}
	r.c, err = r.drv.OpenContext(r.ordinal)
	if err != nil {
		return r.res, err
	}
	defer func() { err = errors.Join(err, r.c.Close()) }()
	info := r.c.Info()
	r.res.GPU = GPU{
		Ordinal: r.ordinal, Name: info.Name, PCIBusID: info.PCIBusID, TotalMemoryBytes: info.TotalMemoryBytes,
		Multiprocessors: info.Multiprocessors, ComputeCapability: info.ComputeCapability,
		MaxSMClockMHz: info.MaxSMClockMHz, MaxMemClockMHz: info.MaxMemoryClockMHz,
	}
	var samp *sampler
	if r.nvmlDev != nil {
		r.res.GPU.PowerLimitW = r.nvmlDev.PowerLimitW
		r.res.GPU.UUID = r.nvmlDev.UUID
		if r.nvmlDev.MaxSMClockMHz > 0 {
			r.res.GPU.MaxSMClockMHz = r.nvmlDev.MaxSMClockMHz
			r.res.GPU.MaxMemClockMHz = r.nvmlDev.MaxMemClockMHz
		}
		r.res.GPU.BaseSMClockMHz = r.nvmlDev.BaseSMClockMHz
		samp = startSampler(r.nvmlDev, r.ordinal, r.cfg.sampleInterval, r.cfg.now)
	}
	defer func() {
		r.res.Finished = r.cfg.now()
		if samp != nil {
			samples, serr := samp.Stop()
			if serr != nil {
				r.warn("some NVML samples failed: %v", serr)
			}
			r.res.Telemetry = samples
			summarizePoints(samples, r.res.GEMM)
			summarizePoints(samples, r.res.Bandwidth)
			summarizePoints(samples, r.res.GEMMFP8)
			summarizePoints(samples, r.res.ModelGEMM)
			flagThrottling(&r.res)
		}
		summarizeDevice(&r.res, r.cfg.kneeFraction)
		res = r.res
	}()
	if r.timer, err = r.c.NewTimer(); err != nil {
		return r.res, err
	}
	defer func() { err = errors.Join(err, r.timer.Destroy()) }()
	if err := r.bandwidth(ctx); err != nil {
		return r.res, fmt.Errorf("probe: GPU %d: bandwidth: %w", r.ordinal, err)
	}
	if err := r.gemm(ctx); err != nil {
		return r.res, fmt.Errorf("probe: GPU %d: GEMM: %w", r.ordinal, err)
	}
	if err := r.fp8AndModel(ctx); err != nil {
		return r.res, fmt.Errorf("probe: GPU %d: %w", r.ordinal, err)
	}
	return r.res, nil
}

// fp8AndModel runs what WithFP8 and WithModelGEMMs add after the standard
// sweep: the model's GEMMs in bf16, the FP8 sweep, the model's GEMMs in FP8
// (bf16 first, so that an FP8 failure cannot cost the bf16 floor). A GPU
// without FP8 tensor cores is measured in bf16 only, with a warning.
func (r *deviceRun) fp8AndModel(ctx context.Context) (err error) {
	var lt *cuda.Lt
	if r.cfg.fp8 {
		if cc := r.c.Info().ComputeCapability; !supportsFP8(cc) {
			r.warn("no FP8 measurement: compute capability %s has no FP8 tensor cores (8.9 or later)", cc)
			r.step += len(r.cfg.batches) + r.cfg.modelPoints()/2
		} else {
			if lt, err = r.c.OpenLt(r.cfg.libs, 0); err != nil {
				return fmt.Errorf("FP8: %w", err)
			}
			defer func() { err = errors.Join(err, lt.Close()) }()
			r.ltV, r.ltP = lt.VersionString(), lt.Path()
		}
	}
	if r.cfg.model != nil {
		if err := r.modelGEMMs(ctx, DType, nil); err != nil {
			return fmt.Errorf("model GEMMs: %w", err)
		}
	}
	if lt == nil {
		return nil
	}
	if err := r.gemmFP8(ctx, lt); err != nil {
		return fmt.Errorf("FP8 GEMM: %w", err)
	}
	if r.cfg.model != nil {
		if err := r.modelGEMMs(ctx, DTypeFP8, lt); err != nil {
			return fmt.Errorf("model GEMMs in FP8: %w", err)
		}
	}
	return nil
}

// summarizeDevice derives the roofline numbers from the points (see
// DeviceResult.roofline).
func summarizeDevice(d *DeviceResult, kneeFraction float64) {
	rl := d.roofline(kneeFraction)
	d.PeakTFLOPS, d.PeakBatch, d.KneeBatch = rl.PeakFLOPPerS/1e12, int(rl.PeakBatch), int(rl.KneeBatch)
	d.BandwidthGBps, d.BandwidthMethod, d.BandwidthBufferBytes = rl.BandwidthBytesPerS/1e9, rl.BandwidthMethod, uint64(rl.BandwidthBufferBytes)
	d.ReadBandwidthGBps, d.RidgeFLOPsPerByte = rl.ReadBandwidthBytesPerS/1e9, rl.RidgeFLOPPerByte
	// The FP8 roofline by the same rule, against the same copy bandwidth.
	d.PeakFP8TFLOPS, d.PeakFP8Batch, d.KneeFP8Batch, d.RidgeFP8FLOPsPerByte = 0, 0, 0, 0
	if rows := d.fp8Rows(); len(rows) > 0 {
		f := roofline.Compute(rows, d.bandwidthRows(), roofline.Select{
			Device: int32(d.GPU.Ordinal), Mode: string(d.Mode), DType: DTypeFP8, KneeFraction: kneeFraction,
		})
		d.PeakFP8TFLOPS, d.PeakFP8Batch, d.KneeFP8Batch = f.PeakFLOPPerS/1e12, int(f.PeakBatch), int(f.KneeBatch)
		d.RidgeFP8FLOPsPerByte = f.RidgeFLOPPerByte
	}
}

// roofline applies the rule package roofline holds (the seed's script 01)
// to the rows this device's points become: peak is the highest throughput,
// bandwidth the best copy, ridge = peak / bandwidth, knee the smallest B
// at kneeFraction of the peak.
func (d *DeviceResult) roofline(kneeFraction float64) *roofline.Roofline {
	return roofline.Compute(d.gemmRows(), d.bandwidthRows(), roofline.Select{
		Device: int32(d.GPU.Ordinal), Mode: string(d.Mode), KneeFraction: kneeFraction,
	})
}

func (r *deviceRun) bandwidth(ctx context.Context) (err error) {
	sizes := r.cfg.bufferSizes
	if len(sizes) == 0 {
		return nil
	}
	free, _, err := r.c.MemInfo()
	if err != nil {
		return err
	}
	var fit []uint64
	for _, s := range sizes {
		if 2*s+memoryReserveBytes <= free || s <= 16<<20 {
			fit = append(fit, s)
		} else {
			r.warn("bandwidth buffer of %d MiB skipped: two of them do not fit in %d MiB of free memory", s>>20, free>>20)
			r.step += 3
		}
	}
	if len(fit) == 0 {
		return nil
	}
	maxSize := fit[0]
	for _, s := range fit {
		maxSize = max(maxSize, s)
	}
	src, err := r.c.Alloc(maxSize)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, r.c.Free(src)) }()
	dst, err := r.c.Alloc(maxSize)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, r.c.Free(dst)) }()
	sumOut, err := r.c.Alloc(cuda.VectorBytes)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, r.c.Free(sumOut)) }()
	if err := r.fillSource(src, maxSize); err != nil {
		return err
	}
	k, err := r.c.LoadKernels()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, k.Close()) }()
	grid := uint32(r.c.Info().Multiprocessors * r.cfg.copyBlocksPerSM)
	block := uint32(r.cfg.copyThreads)

	for _, size := range fit {
		want := r.in.fill.prefixSum(size)
		methods := []struct {
			name     string
			readOnly bool
			call     func() error
		}{
			{MethodCopyKernel, false, func() error { return k.Copy(dst, src, size, grid, block) }},
			{MethodMemcpy, false, func() error { return r.c.CopyDeviceToDevice(dst, src, size) }},
			{MethodSumKernel, true, func() error { return k.Sum(sumOut, src, size, grid, block) }},
		}
		for _, m := range methods {
			if err := ctx.Err(); err != nil {
				return err
			}
			r.progress(Progress{Phase: "bandwidth", BufferBytes: size, Method: m.name})
			p := BandwidthPoint{Method: m.name, BufferBytes: size, ReadOnly: m.readOnly, BytesPerCall: 2 * size, Started: r.cfg.now()}
			if m.readOnly {
				p.BytesPerCall = size
			}
			// Clear what the method writes, so the check below sees only this method's work.
			zero, zeroBytes := dst, size
			if m.readOnly {
				zero, zeroBytes = sumOut, cuda.VectorBytes
			}
			if err := r.c.Memset8(zero, 0, zeroBytes); err != nil {
				return err
			}
			t, err := timeCalls(ctx, r.c, r.timer, r.cfg, m.call)
			if err != nil {
				return fmt.Errorf("%s, %d MiB: %w", m.name, size>>20, err)
			}
			p.Finished = r.cfg.now()
			fillRepeats(&p.CallsPerRepeat, &p.RepeatTimesMS, &p.TimeMS, t)
			bytes := float64(p.BytesPerCall)
			p.GBps, p.GBpsMin, p.GBpsMax = GBps(bytes, p.TimeMS.Median), GBps(bytes, p.TimeMS.Max), GBps(bytes, p.TimeMS.Min)
			// Verify: a copy's destination must sum like the source; the sum
			// kernel must have added the source's sum once per call.
			target, expect := dst, want
			if m.readOnly {
				target, expect = 0, want*uint64(t.totalCalls)
			}
			got, err := r.deviceSum(k, sumOut, target, size, grid, block)
			if err != nil {
				return err
			}
			if got != expect {
				return fmt.Errorf("%s of %d MiB: checksum %#x, want %#x: the copy or the kernel is wrong", m.name, size>>20, got, expect)
			}
			p.Verified = true
			r.res.Bandwidth = append(r.res.Bandwidth, p)
		}
	}
	return nil
}

// deviceSum returns the sum kernel's result over size bytes at src; with
// src 0 it only reads back what out already holds.
func (r *deviceRun) deviceSum(k *cuda.Kernels, out, src cuda.DevicePtr, size uint64, grid, block uint32) (uint64, error) {
	if src != 0 {
		if err := r.c.Memset8(out, 0, cuda.VectorBytes); err != nil {
			return 0, err
		}
		if err := k.Sum(out, src, size, grid, block); err != nil {
			return 0, err
		}
	}
	buf := make([]byte, 8)
	if err := r.c.CopyToHost(buf, out); err != nil { // synchronous: waits for the kernel
		return 0, err
	}
	return binary.LittleEndian.Uint64(buf), nil
}

// fillSource uploads the random chunk once and doubles it on the device
// until size bytes are filled.
func (r *deviceRun) fillSource(src cuda.DevicePtr, size uint64) error {
	return r.fillWith(src, size, r.in.fill.chunk)
}

// fillWith fills size bytes at src with chunk repeated: one upload, then
// device copies that double the filled part.
func (r *deviceRun) fillWith(src cuda.DevicePtr, size uint64, chunk []byte) error {
	n := min(uint64(len(chunk)), size)
	if err := r.c.CopyToDevice(src, chunk[:n]); err != nil {
		return err
	}
	for n < size {
		m := min(n, size-n)
		if err := r.c.CopyDeviceToDevice(src.Add(n), src, m); err != nil {
			return err
		}
		n += m
	}
	return r.c.Synchronize()
}

func fillRepeats(calls *int, times *[]float64, sum *Summary, t timing) {
	*calls = t.callsPerRepeat
	*times = t.perCallMS
	*sum = Summarize(t.perCallMS)
}

func (r *deviceRun) gemm(ctx context.Context) (err error) {
	cfg := r.cfg
	blas, err := r.c.OpenBLAS(cfg.libs, 0)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, blas.Close()) }()
	r.blasV, r.blasP = blas.VersionString(), blas.Path()
	k, n, maxB := cfg.k, cfg.n, r.in.maxBatch
	w, err := r.c.Alloc(uint64(2 * k * n))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, r.c.Free(w)) }()
	x, err := r.c.Alloc(uint64(2 * maxB * k))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, r.c.Free(x)) }()
	y, err := r.c.Alloc(uint64(2 * maxB * n))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, r.c.Free(y)) }()
	if err := r.c.CopyToDevice(w, r.in.w); err != nil {
		return err
	}
	if err := r.c.CopyToDevice(x, r.in.x); err != nil {
		return err
	}
	out := make([]byte, 2*maxB*n)
	for _, b := range cfg.batches {
		if err := ctx.Err(); err != nil {
			return err
		}
		r.progress(Progress{Phase: "gemm", Batch: b})
		p := GEMMPoint{Batch: b, RunBatch: b, DType: DType, K: k, N: n, FLOPs: GEMMFLOPs(b, k, n), Bytes: GEMMBytes(b, k, n),
			Intensity: Intensity(b, k, n), Started: cfg.now()}
		call := func() error { return blas.GemmBF16(x, w, y, b, k, n) }
		// Check the answer first: poison the output, multiply once, compare.
		if err := r.c.Memset8(y, poisonByte, uint64(2*b*n)); err != nil {
			return err
		}
		if err := call(); err != nil {
			return err
		}
		if err := r.c.CopyToHost(out[:2*b*n], y); err != nil {
			return err
		}
		p.Validation = validateGEMM(out[:2*b*n], r.in.x, r.in.w, b, k, n, cfg.validSamples, cfg.seed)
		if !p.Validation.Passed {
			r.res.GEMM = append(r.res.GEMM, p)
			return fmt.Errorf("batch %d: wrong answer: %s; the GPU, driver or cuBLAS is broken, so no result is reported", b, p.Validation.failure())
		}
		t, err := timeCalls(ctx, r.c, r.timer, cfg, call)
		if err != nil {
			return fmt.Errorf("batch %d: %w", b, err)
		}
		p.Finished = cfg.now()
		fillRepeats(&p.CallsPerRepeat, &p.RepeatTimesMS, &p.TimeMS, t)
		p.TFLOPS, p.TFLOPSMin, p.TFLOPSMax = TFLOPS(p.FLOPs, p.TimeMS.Median), TFLOPS(p.FLOPs, p.TimeMS.Max), TFLOPS(p.FLOPs, p.TimeMS.Min)
		r.res.GEMM = append(r.res.GEMM, p)
	}
	return nil
}
