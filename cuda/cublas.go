package cuda

import (
	"errors"
	"fmt"
	"unsafe"
)

// cuBLAS constants used by GemmBF16 (cublas_api.h, library_types.h).
const (
	cublasOpN         = 0  // CUBLAS_OP_N
	DataTypeBF16      = 14 // CUDA_R_16BF
	ComputeType32F    = 68 // CUBLAS_COMPUTE_32F
	cublasGemmDefault = -1 // CUBLAS_GEMM_DEFAULT: let cuBLAS pick (tensor cores for bf16)
)

// DefaultWorkspaceBytes is the cuBLAS workspace OpenBLAS gives each handle
// (what PyTorch gives cuBLAS on Hopper).
const DefaultWorkspaceBytes = 32 << 20

type cublasAPI struct {
	cublasCreate       func(handle *uintptr) int32
	cublasDestroy      func(handle uintptr) int32
	cublasGetVersion   func(handle uintptr, version *int32) int32
	cublasSetStream    func(handle, stream uintptr) int32
	cublasSetWorkspace func(handle uintptr, workspace uint64, bytes uint64) int32
	cublasGemmEx       func(handle uintptr, transA, transB int32, m, n, k int32,
		alpha unsafe.Pointer, a uint64, aType int32, lda int32,
		b uint64, bType int32, ldb int32,
		beta unsafe.Pointer, c uint64, cType int32, ldc int32,
		computeType int32, algo int32) int32
}

// BLAS is a cuBLAS handle on a Context, with its own workspace.
type BLAS struct {
	c         *Context
	api       cublasAPI
	handle    uintptr
	workspace DevicePtr
	path      string
	version   int
	// scalars is heap memory that cuBLAS reads alpha and beta from (host
	// pointer mode); it lives as long as the handle.
	scalars *[2]float32
}

// OpenBLAS loads cuBLAS (see LibraryPaths), creates a handle on the
// context's thread, binds it to the default stream and gives it a workspace
// of workspaceBytes (0 means DefaultWorkspaceBytes).
func (c *Context) OpenBLAS(paths LibraryPaths, workspaceBytes uint64) (*BLAS, error) {
	lib, path, err := openLibrary("libcublas.so.13 (or .12, .11)", cublasNames, paths.CUBLAS, EnvCUBLAS, searchDirs(), cublasHint)
	if err != nil {
		return nil, err
	}
	b := &BLAS{c: c, path: path, scalars: &[2]float32{1, 0}}
	a := &b.api
	for _, s := range []struct {
		fptr any
		name string
	}{
		{&a.cublasCreate, "cublasCreate_v2"},
		{&a.cublasDestroy, "cublasDestroy_v2"},
		{&a.cublasGetVersion, "cublasGetVersion_v2"},
		{&a.cublasSetStream, "cublasSetStream_v2"},
		{&a.cublasSetWorkspace, "cublasSetWorkspace_v2"},
		{&a.cublasGemmEx, "cublasGemmEx"},
	} {
		if err := symbol(lib, path, s.fptr, s.name); err != nil {
			return nil, err
		}
	}
	if err := checkBLAS("cublasCreate_v2", a.cublasCreate(&b.handle)); err != nil {
		return nil, err
	}
	var v int32
	if err := checkBLAS("cublasGetVersion_v2", a.cublasGetVersion(b.handle, &v)); err != nil {
		return nil, errors.Join(err, b.Close())
	}
	b.version = int(v)
	if err := checkBLAS("cublasSetStream_v2", a.cublasSetStream(b.handle, 0)); err != nil {
		return nil, errors.Join(err, b.Close())
	}
	if workspaceBytes == 0 {
		workspaceBytes = DefaultWorkspaceBytes
	}
	if b.workspace, err = c.Alloc(workspaceBytes); err != nil {
		return nil, errors.Join(fmt.Errorf("cuda: cuBLAS workspace: %w", err), b.Close())
	}
	if err := checkBLAS("cublasSetWorkspace_v2", a.cublasSetWorkspace(b.handle, uint64(b.workspace), workspaceBytes)); err != nil {
		return nil, errors.Join(err, b.Close())
	}
	return b, nil
}

// Path is the file cuBLAS was loaded from.
func (b *BLAS) Path() string { return b.path }

// Version is cuBLAS's version number, major*10000 + minor*100 + patch.
func (b *BLAS) Version() int { return b.version }

// VersionString formats Version as "major.minor.patch".
func (b *BLAS) VersionString() string {
	v := b.version
	return fmt.Sprintf("%d.%d.%d", v/10000, v/100%100, v%100)
}

// GemmBF16 queues Y = X·W for row-major bf16 matrices X (batch×k), W (k×n)
// and Y (batch×n), accumulating in fp32.
//
// cuBLAS is column-major, and a row-major matrix read as column-major is
// its transpose. So the call computes Yᵀ = Wᵀ·Xᵀ with no transposition:
// m = n, n = batch, k = k; A = W with lda = n, B = X with ldb = k,
// C = Y with ldc = n.
func (b *BLAS) GemmBF16(x, w, y DevicePtr, batch, k, n int) error {
	if batch <= 0 || k <= 0 || n <= 0 {
		return fmt.Errorf("cuda: GEMM shape (%d,%d)@(%d,%d) must be positive", batch, k, k, n)
	}
	status := b.api.cublasGemmEx(b.handle, cublasOpN, cublasOpN,
		int32(n), int32(batch), int32(k),
		unsafe.Pointer(&b.scalars[0]), uint64(w), DataTypeBF16, int32(n),
		uint64(x), DataTypeBF16, int32(k),
		unsafe.Pointer(&b.scalars[1]), uint64(y), DataTypeBF16, int32(n),
		ComputeType32F, cublasGemmDefault)
	if err := checkBLAS("cublasGemmEx", status); err != nil {
		return fmt.Errorf("%w (shape (%d,%d)@(%d,%d) bf16)", err, batch, k, k, n)
	}
	return nil
}

// Close destroys the handle and frees the workspace; it is idempotent.
func (b *BLAS) Close() error {
	var errs []error
	if b.handle != 0 {
		errs = append(errs, checkBLAS("cublasDestroy_v2", b.api.cublasDestroy(b.handle)))
		b.handle = 0
	}
	if b.workspace != 0 {
		errs = append(errs, b.c.Free(b.workspace))
		b.workspace = 0
	}
	return errors.Join(errs...)
}
