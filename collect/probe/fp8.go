package probe

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/headroom-llm/headroom/cuda"
)

// DTypeFP8 is the dtype of FP8 measurements: E4M3 inputs, fp32 accumulation
// (fast accumulation), bf16 output, per-tensor scales.
const DTypeFP8 = "fp8_e4m3"

// FP8Alignment is the multiple that cuBLASLt's FP8 kernels may want of every
// dimension; a batch without a kernel of its own is run padded to it.
const FP8Alignment = 16

// Tolerances of the FP8 check. Hopper's fast FP8 accumulation keeps about 14
// bits of the running sum (DeepSeek-V3's report measured relative errors near
// 2% at K = 4096), so the absolute term is far looser than bf16's; a wrong
// index or a lost term is still off by about the scale s itself.
var fp8Tolerance = tolerance{rel: 1.0 / 64, abs: 1.0 / 8, frobenius: 0.1}

// supportsFP8 says whether a compute capability ("9.0") has FP8 tensor cores
// (Ada 8.9 and later).
func supportsFP8(cc string) bool {
	major, minor, ok := strings.Cut(cc, ".")
	if !ok {
		return false
	}
	ma, err1 := strconv.Atoi(major)
	mi, err2 := strconv.Atoi(minor)
	return err1 == nil && err2 == nil && (ma > 8 || (ma == 8 && mi >= 9))
}

// e4m3Pattern converts bf16 pattern bytes to E4M3, on all cores.
func e4m3Pattern(bf16 []byte) []byte {
	out := make([]byte, len(bf16)/2)
	parts := runtime.GOMAXPROCS(0)
	step := (len(out) + parts - 1) / parts
	var wg sync.WaitGroup
	for lo := 0; lo < len(out); lo += step {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				out[i] = cuda.E4M3FromFloat32(cuda.BF16ToFloat32(binary.LittleEndian.Uint16(bf16[2*i:])))
			}
		}(lo, min(lo+step, len(out)))
	}
	wg.Wait()
	return out
}

// operands are the device buffers of one dtype's GEMMs, filled with a
// repeated random pattern whose host copy the validation reads.
type operands struct {
	dtype   string
	elem    int // bytes per input element
	w, x, y cuda.DevicePtr
	xOff    int    // the pattern element at which X starts
	pat     []byte // one period of the pattern
}

// value is the pattern's element i.
func (o *operands) value(i int) float64 {
	i %= len(o.pat) / o.elem
	if o.elem == 1 {
		return float64(cuda.E4M3ToFloat32(o.pat[i]))
	}
	return float64(cuda.BF16ToFloat32(binary.LittleEndian.Uint16(o.pat[2*i:])))
}

// newOperands allocates W (wElems), X (xElems, at an offset in the pattern)
// and Y (yElems bf16) and fills W and X.
func (r *deviceRun) newOperands(dtype string, wElems, xElems, yElems int) (o *operands, err error) {
	o = &operands{dtype: dtype, elem: 2, pat: r.in.fill.chunk}
	if dtype == DTypeFP8 {
		o.elem, o.pat = 1, r.in.fp8Chunk()
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, o.free(r.c))
		}
	}()
	wBytes := uint64(roundUp(wElems*o.elem, 16))
	if o.w, err = r.c.Alloc(wBytes); err != nil {
		return o, err
	}
	if o.x, err = r.c.Alloc(uint64(roundUp(xElems*o.elem, 16))); err != nil {
		return o, err
	}
	if o.y, err = r.c.Alloc(uint64(2 * yElems)); err != nil {
		return o, err
	}
	if err := r.fillWith(o.w, wBytes, o.pat); err != nil {
		return o, err
	}
	// X is the pattern from an odd offset, so that X and W do not line up.
	o.xOff = len(o.pat)/o.elem/3 | 1
	rotated := make([]byte, 0, len(o.pat))
	rotated = append(append(rotated, o.pat[o.xOff*o.elem:]...), o.pat[:o.xOff*o.elem]...)
	if err := r.fillWith(o.x, uint64(xElems*o.elem), rotated); err != nil {
		return o, err
	}
	return o, nil
}

func (o *operands) free(c *cuda.Context) error {
	var errs []error
	for _, p := range []*cuda.DevicePtr{&o.w, &o.x, &o.y} {
		errs = append(errs, c.Free(*p))
		*p = 0
	}
	return errors.Join(errs...)
}

func roundUp(n, m int) int { return (n + m - 1) / m * m }

// layoutFor returns the accessors of X (row-major tokens×k) and W for a
// product of this dtype: W row-major k×n for bf16 (GemmBF16), stored
// transposed n×k for FP8 (GemmFP8).
func (o *operands) layoutFor(k, n int) (xAt, wAt func(row, col int) float64) {
	xAt = func(row, p int) float64 { return o.value(o.xOff + row*k + p) }
	if o.dtype == DTypeFP8 {
		return xAt, func(p, col int) float64 { return o.value(col*k + p) }
	}
	return xAt, func(p, col int) float64 { return o.value(p*n + col) }
}

// product is one GEMM to check and time.
type product struct {
	tokens, k, n int
	call         func(rows int) error
}

// measured is what timing a product gave.
type measured struct {
	runTokens  int
	t          timing
	validation Validation
}

// measureProduct checks one product against the CPU (poisoned output,
// one call, sampled elements) and times it. For FP8 a batch without a
// cuBLASLt kernel is retried padded to FP8Alignment rows.
func (r *deviceRun) measureProduct(ctx context.Context, o *operands, p product, out []byte) (measured, error) {
	m := measured{runTokens: p.tokens}
	run := func() error { return p.call(m.runTokens) }
	if err := r.c.Memset8(o.y, poisonByte, uint64(2*m.runTokens*p.n)); err != nil {
		return m, err
	}
	err := run()
	if errors.Is(err, cuda.ErrNoFP8Algorithm) && m.runTokens%FP8Alignment != 0 {
		m.runTokens = roundUp(p.tokens, FP8Alignment)
		if err := r.c.Memset8(o.y, poisonByte, uint64(2*m.runTokens*p.n)); err != nil {
			return m, err
		}
		err = run()
	}
	if err != nil {
		return m, err
	}
	y := out[:2*m.runTokens*p.n]
	if err := r.c.CopyToHost(y, o.y); err != nil {
		return m, err
	}
	xAt, wAt := o.layoutFor(p.k, p.n)
	tol := bf16Tolerance
	if o.dtype == DTypeFP8 {
		tol = fp8Tolerance
	}
	m.validation = validateProduct(y, xAt, wAt, m.runTokens, p.k, p.n, r.cfg.validSamples, r.cfg.seed, tol)
	if !m.validation.Passed {
		return m, fmt.Errorf("%s (%d,%d)@(%d,%d): wrong answer: %s; the GPU, driver or cuBLAS is broken, so no result is reported",
			o.dtype, m.runTokens, p.k, p.k, p.n, m.validation.failure())
	}
	m.t, err = timeCalls(ctx, r.c, r.timer, r.cfg, run)
	return m, err
}

// gemmFP8 is the standard-shape sweep in FP8.
func (r *deviceRun) gemmFP8(ctx context.Context, lt *cuda.Lt) (err error) {
	cfg := r.cfg
	k, n := cfg.k, cfg.n
	maxB := roundUp(r.in.maxBatch, FP8Alignment)
	o, err := r.newOperands(DTypeFP8, k*n, maxB*k, maxB*n)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, o.free(r.c)) }()
	out := make([]byte, 2*maxB*n)
	for _, b := range cfg.batches {
		if err := ctx.Err(); err != nil {
			return err
		}
		r.progress(Progress{Phase: "gemm_fp8", Batch: b, DType: DTypeFP8})
		started := cfg.now()
		m, err := r.measureProduct(ctx, o, product{tokens: b, k: k, n: n, call: func(rows int) error {
			return lt.GemmFP8(o.x, o.w, o.y, rows, k, n)
		}}, out)
		if err != nil {
			return fmt.Errorf("batch %d: %w", b, err)
		}
		if !lt.FastAccumulation(m.runTokens, k, n) {
			r.warn("FP8 (%d,%d)@(%d,%d) ran without fast accumulation: cuBLASLt refused it", m.runTokens, k, k, n)
		}
		p := GEMMPoint{Batch: b, RunBatch: m.runTokens, K: k, N: n, DType: DTypeFP8,
			FLOPs: GEMMFLOPs(m.runTokens, k, n), Bytes: gemmBytes(m.runTokens, k, n, 1), Started: started, Finished: cfg.now(),
			Validation: m.validation}
		p.Intensity = p.FLOPs / p.Bytes
		fillRepeats(&p.CallsPerRepeat, &p.RepeatTimesMS, &p.TimeMS, m.t)
		p.TFLOPS, p.TFLOPSMin, p.TFLOPSMax = TFLOPS(p.FLOPs, p.TimeMS.Median), TFLOPS(p.FLOPs, p.TimeMS.Max), TFLOPS(p.FLOPs, p.TimeMS.Min)
		r.res.GEMMFP8 = append(r.res.GEMMFP8, p)
	}
	return nil
}

// gemmBytes is the least traffic of a (b,k)@(k,n) product with inputs of
// elem bytes and a bf16 output.
func gemmBytes(b, k, n, elem int) float64 {
	bb, kk, nn := float64(b), float64(k), float64(n)
	return float64(elem)*(bb*kk+kk*nn) + BytesPerElement*bb*nn
}
