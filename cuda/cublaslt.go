package cuda

import (
	"errors"
	"fmt"
	"unsafe"
)

// cuBLASLt constants used by GemmFP8 (cublasLt.h, library_types.h).
const (
	DataTypeE4M3 = 28 // CUDA_R_8F_E4M3
	dataType32F  = 0  // CUDA_R_32F
	cublasOpT    = 1  // CUBLAS_OP_T

	ltDescTransA        = 3  // CUBLASLT_MATMUL_DESC_TRANSA (int32)
	ltDescTransB        = 4  // CUBLASLT_MATMUL_DESC_TRANSB (int32)
	ltDescAScalePointer = 17 // CUBLASLT_MATMUL_DESC_A_SCALE_POINTER (device float*)
	ltDescBScalePointer = 18 // CUBLASLT_MATMUL_DESC_B_SCALE_POINTER (device float*)
	ltDescFastAccum     = 25 // CUBLASLT_MATMUL_DESC_FAST_ACCUM (int8)
	ltPrefMaxWorkspace  = 1  // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES (uint64)

	// cublasLtMatmulHeuristicResult_t: algo (64 bytes), workspaceSize
	// (size_t), state (cublasStatus_t), wavesCount (float), reserved[4].
	ltHeuristicResultBytes = 96
	ltHeuristicStateOffset = 72
)

type cublasLtAPI struct {
	cublasLtCreate                       func(handle *uintptr) int32
	cublasLtDestroy                      func(handle uintptr) int32
	cublasLtGetVersion                   func() uint64
	cublasLtMatmulDescCreate             func(desc *uintptr, computeType, scaleType int32) int32
	cublasLtMatmulDescDestroy            func(desc uintptr) int32
	cublasLtMatmulDescSetAttribute       func(desc uintptr, attr int32, buf unsafe.Pointer, size uint64) int32
	cublasLtMatrixLayoutCreate           func(layout *uintptr, dataType int32, rows, cols uint64, ld int64) int32
	cublasLtMatrixLayoutDestroy          func(layout uintptr) int32
	cublasLtMatmulPreferenceCreate       func(pref *uintptr) int32
	cublasLtMatmulPreferenceDestroy      func(pref uintptr) int32
	cublasLtMatmulPreferenceSetAttribute func(pref uintptr, attr int32, buf unsafe.Pointer, size uint64) int32
	cublasLtMatmulAlgoGetHeuristic       func(handle, desc, a, b, c, d, pref uintptr, requested int32, results unsafe.Pointer, returned *int32) int32
	cublasLtMatmul                       func(handle, desc uintptr, alpha unsafe.Pointer, a uint64, aDesc uintptr, b uint64, bDesc uintptr,
		beta unsafe.Pointer, c uint64, cDesc uintptr, d uint64, dDesc uintptr, algo unsafe.Pointer, workspace uint64, workspaceBytes uint64, stream uintptr) int32
}

// Lt is a cuBLASLt handle on a Context, with its own workspace, for the FP8
// GEMMs that plain cuBLAS does not offer.
type Lt struct {
	c         *Context
	api       cublasLtAPI
	handle    uintptr
	workspace DevicePtr
	wsBytes   uint64
	scales    DevicePtr // device memory: the A scale at 0, the B scale at scaleStride
	path      string
	version   int
	plans     map[ltShape]*ltPlan
	scalars   *[2]float32 // alpha, beta (host pointer mode)
}

type ltShape struct{ batch, k, n int }

// scaleStride separates the two scales in device memory, each at an
// alignment as generous as a separate allocation's.
const scaleStride = 256

// ltCandidates is how many heuristic algorithms a plan asks for: cuBLASLt
// can offer an algorithm that cublasLtMatmul then refuses (seen on an H200),
// so the plan keeps the first one that runs.
const ltCandidates = 8

// ltPlan is the descriptor, layouts and candidate algorithms of one FP8
// GEMM shape.
type ltPlan struct {
	desc, a, b, c uintptr
	algos         []byte // n heuristic results in a usable state, best first
	n             int
	chosen        int  // the algorithm in use; -1 before the first call
	exact         bool // fast accumulation was refused and is off
}

// OpenLt loads cuBLASLt (see LibraryPaths), creates a handle, a workspace of
// workspaceBytes (0: DefaultWorkspaceBytes) and the device scales, both 1.
func (c *Context) OpenLt(paths LibraryPaths, workspaceBytes uint64) (*Lt, error) {
	lib, path, err := openLibrary("libcublasLt.so.13 (or .12)", cublasLtNames, paths.CUBLASLt, EnvCUBLASLt, searchDirs(), cublasLtHint)
	if err != nil {
		return nil, err
	}
	l := &Lt{c: c, path: path, plans: map[ltShape]*ltPlan{}, scalars: &[2]float32{1, 0}}
	a := &l.api
	for _, s := range []struct {
		fptr any
		name string
	}{
		{&a.cublasLtCreate, "cublasLtCreate"},
		{&a.cublasLtDestroy, "cublasLtDestroy"},
		{&a.cublasLtGetVersion, "cublasLtGetVersion"},
		{&a.cublasLtMatmulDescCreate, "cublasLtMatmulDescCreate"},
		{&a.cublasLtMatmulDescDestroy, "cublasLtMatmulDescDestroy"},
		{&a.cublasLtMatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute"},
		{&a.cublasLtMatrixLayoutCreate, "cublasLtMatrixLayoutCreate"},
		{&a.cublasLtMatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy"},
		{&a.cublasLtMatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate"},
		{&a.cublasLtMatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy"},
		{&a.cublasLtMatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute"},
		{&a.cublasLtMatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic"},
		{&a.cublasLtMatmul, "cublasLtMatmul"},
	} {
		if err := symbol(lib, path, s.fptr, s.name); err != nil {
			return nil, err
		}
	}
	l.version = int(a.cublasLtGetVersion())
	if err := checkBLAS("cublasLtCreate", a.cublasLtCreate(&l.handle)); err != nil {
		return nil, err
	}
	if workspaceBytes == 0 {
		workspaceBytes = DefaultWorkspaceBytes
	}
	l.wsBytes = workspaceBytes
	if l.workspace, err = c.Alloc(workspaceBytes); err != nil {
		return nil, errors.Join(fmt.Errorf("cuda: cuBLASLt workspace: %w", err), l.Close())
	}
	if l.scales, err = c.Alloc(2 * scaleStride); err != nil {
		return nil, errors.Join(fmt.Errorf("cuda: cuBLASLt scales: %w", err), l.Close())
	}
	if err := l.SetScales(1, 1); err != nil {
		return nil, errors.Join(err, l.Close())
	}
	return l, nil
}

// Path is the file cuBLASLt was loaded from.
func (l *Lt) Path() string { return l.path }

// VersionString formats cuBLASLt's version, major*10000 + minor*100 + patch.
func (l *Lt) VersionString() string {
	v := l.version
	return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
}

// SetScales sets the per-tensor dequantization scales of the activations
// and the weights (Y = sx·sw·X·W), kept in device memory where cuBLASLt
// reads them at every call, as engines serving FP8 weights pass theirs.
func (l *Lt) SetScales(sx, sw float32) error {
	var b [2 * scaleStride]byte
	*(*float32)(unsafe.Pointer(&b[0])) = sw // A is the weight, see GemmFP8
	*(*float32)(unsafe.Pointer(&b[scaleStride])) = sx
	return l.c.CopyToDevice(l.scales, b[:])
}

// ErrNoFP8Algorithm says that cuBLASLt has no FP8 kernel for a shape (it
// wants dimensions that are multiples of 16; older GPUs have none at all).
var ErrNoFP8Algorithm = errors.New("cuda: cuBLASLt has no FP8 algorithm for this shape")

// GemmFP8 queues Y = sx·sw·X·W for row-major E4M3 matrices X (batch×k) and
// W (k×n) given transposed as WT (n×k: the weight stored output-major, as
// nn.Linear and the engines store it), into a row-major bf16 Y (batch×n),
// accumulating in fp32 with Hopper's fast FP8 accumulation (what inference
// engines use).
//
// cuBLASLt's FP8 kernels take A transposed and B not ("TN"). Column-major,
// the call computes Yᵀ (n×batch, ld n) = op(A)·B with A = WT read as a k×n
// column-major matrix (ld k) and transposed, and B = X read as k×batch
// column-major (ld k). The first call for a shape picks cuBLASLt's best
// heuristic algorithm; later calls reuse it.
func (l *Lt) GemmFP8(x, wt, y DevicePtr, batch, k, n int) error {
	if batch <= 0 || k <= 0 || n <= 0 {
		return fmt.Errorf("cuda: GEMM shape (%d,%d)@(%d,%d) must be positive", batch, k, k, n)
	}
	s := ltShape{batch, k, n}
	p, err := l.plan(s, false)
	if err != nil {
		return err
	}
	call := func(p *ltPlan, i int) int32 {
		return l.api.cublasLtMatmul(l.handle, p.desc, unsafe.Pointer(&l.scalars[0]),
			uint64(wt), p.a, uint64(x), p.b, unsafe.Pointer(&l.scalars[1]),
			uint64(y), p.c, uint64(y), p.c, unsafe.Pointer(&p.algos[i*ltHeuristicResultBytes]), uint64(l.workspace), l.wsBytes, 0)
	}
	if p.chosen >= 0 {
		return matmulStatus(s, call(p, p.chosen))
	}
	// The first call of a shape: the first candidate that runs, with fast
	// accumulation, else the first without it.
	status := int32(statusNotSupported)
	for _, exact := range []bool{false, true} {
		if exact && !p.exact {
			err := l.destroyPlan(p)
			delete(l.plans, s)
			if err != nil {
				return err
			}
			if p, err = l.plan(s, true); err != nil {
				return err
			}
		}
		for i := 0; i < p.n; i++ {
			if status = call(p, i); Status(status) != statusNotSupported {
				p.chosen = i
				return matmulStatus(s, status)
			}
		}
	}
	return matmulStatus(s, status)
}

// FastAccumulation reports whether GEMMs of this shape run with fast FP8
// accumulation (false once every algorithm refused it, or before the first call).
func (l *Lt) FastAccumulation(batch, k, n int) bool {
	p, ok := l.plans[ltShape{batch, k, n}]
	return ok && p.chosen >= 0 && !p.exact
}

func matmulStatus(s ltShape, status int32) error {
	if Status(status) == statusNotSupported {
		return fmt.Errorf("%w: (%d,%d)@(%d,%d): cublasLtMatmul refused every algorithm: %s", ErrNoFP8Algorithm, s.batch, s.k, s.k, s.n, Status(status))
	}
	if err := checkBLAS("cublasLtMatmul", status); err != nil {
		return fmt.Errorf("%w (shape (%d,%d)@(%d,%d) fp8)", err, s.batch, s.k, s.k, s.n)
	}
	return nil
}

func (l *Lt) plan(s ltShape, exact bool) (*ltPlan, error) {
	if p, ok := l.plans[s]; ok {
		return p, nil
	}
	a := &l.api
	p := &ltPlan{algos: make([]byte, ltCandidates*ltHeuristicResultBytes), chosen: -1, exact: exact}
	fail := func(err error) (*ltPlan, error) { return nil, errors.Join(err, l.destroyPlan(p)) }
	if err := checkBLAS("cublasLtMatmulDescCreate", a.cublasLtMatmulDescCreate(&p.desc, ComputeType32F, dataType32F)); err != nil {
		return fail(err)
	}
	opT, opN := int32(cublasOpT), int32(cublasOpN)
	fast := int8(1)
	if exact {
		fast = 0
	}
	sa, sb := uint64(l.scales), uint64(l.scales)+scaleStride
	for _, attr := range []struct {
		id   int32
		ptr  unsafe.Pointer
		size uint64
	}{
		{ltDescTransA, unsafe.Pointer(&opT), 4},
		{ltDescTransB, unsafe.Pointer(&opN), 4},
		{ltDescAScalePointer, unsafe.Pointer(&sa), 8},
		{ltDescBScalePointer, unsafe.Pointer(&sb), 8},
		{ltDescFastAccum, unsafe.Pointer(&fast), 1},
	} {
		if err := checkBLAS("cublasLtMatmulDescSetAttribute", a.cublasLtMatmulDescSetAttribute(p.desc, attr.id, attr.ptr, attr.size)); err != nil {
			return fail(fmt.Errorf("%w (attribute %d)", err, attr.id))
		}
	}
	for _, m := range []struct {
		out              *uintptr
		typ              int32
		rows, cols, lead int
	}{
		{&p.a, DataTypeE4M3, s.k, s.n, s.k},
		{&p.b, DataTypeE4M3, s.k, s.batch, s.k},
		{&p.c, DataTypeBF16, s.n, s.batch, s.n},
	} {
		if err := checkBLAS("cublasLtMatrixLayoutCreate", a.cublasLtMatrixLayoutCreate(m.out, m.typ, uint64(m.rows), uint64(m.cols), int64(m.lead))); err != nil {
			return fail(err)
		}
	}
	var pref uintptr
	if err := checkBLAS("cublasLtMatmulPreferenceCreate", a.cublasLtMatmulPreferenceCreate(&pref)); err != nil {
		return fail(err)
	}
	defer a.cublasLtMatmulPreferenceDestroy(pref)
	ws := l.wsBytes
	if err := checkBLAS("cublasLtMatmulPreferenceSetAttribute", a.cublasLtMatmulPreferenceSetAttribute(pref, ltPrefMaxWorkspace, unsafe.Pointer(&ws), 8)); err != nil {
		return fail(err)
	}
	var returned int32
	status := a.cublasLtMatmulAlgoGetHeuristic(l.handle, p.desc, p.a, p.b, p.c, p.c, pref, ltCandidates, unsafe.Pointer(&p.algos[0]), &returned)
	if status == int32(statusNotSupported) || (status == 0 && returned == 0) {
		return fail(fmt.Errorf("%w: (%d,%d)@(%d,%d)", ErrNoFP8Algorithm, s.batch, s.k, s.k, s.n))
	}
	if err := checkBLAS("cublasLtMatmulAlgoGetHeuristic", status); err != nil {
		return fail(err)
	}
	// Keep the candidates in a usable state, in the heuristic's order.
	for i := 0; i < int(min(returned, ltCandidates)); i++ {
		r := p.algos[i*ltHeuristicResultBytes : (i+1)*ltHeuristicResultBytes]
		if *(*int32)(unsafe.Pointer(&r[ltHeuristicStateOffset])) == 0 {
			copy(p.algos[p.n*ltHeuristicResultBytes:], r)
			p.n++
		}
	}
	if p.n == 0 {
		return fail(fmt.Errorf("%w: (%d,%d)@(%d,%d): no candidate in a usable state", ErrNoFP8Algorithm, s.batch, s.k, s.k, s.n))
	}
	l.plans[s] = p
	return p, nil
}

const statusNotSupported Status = 15 // CUBLAS_STATUS_NOT_SUPPORTED

func (l *Lt) destroyPlan(p *ltPlan) error {
	var errs []error
	for _, layout := range []*uintptr{&p.a, &p.b, &p.c} {
		if *layout != 0 {
			errs = append(errs, checkBLAS("cublasLtMatrixLayoutDestroy", l.api.cublasLtMatrixLayoutDestroy(*layout)))
			*layout = 0
		}
	}
	if p.desc != 0 {
		errs = append(errs, checkBLAS("cublasLtMatmulDescDestroy", l.api.cublasLtMatmulDescDestroy(p.desc)))
		p.desc = 0
	}
	return errors.Join(errs...)
}

// Close destroys the plans and the handle and frees the device memory; it
// is idempotent.
func (l *Lt) Close() error {
	var errs []error
	for s, p := range l.plans {
		errs = append(errs, l.destroyPlan(p))
		delete(l.plans, s)
	}
	if l.handle != 0 {
		errs = append(errs, checkBLAS("cublasLtDestroy", l.api.cublasLtDestroy(l.handle)))
		l.handle = 0
	}
	for _, p := range []*DevicePtr{&l.workspace, &l.scales} {
		if *p != 0 {
			errs = append(errs, l.c.Free(*p))
			*p = 0
		}
	}
	return errors.Join(errs...)
}
