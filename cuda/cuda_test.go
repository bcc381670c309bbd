package cuda_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/headroom-llm/headroom/cuda"
	"github.com/headroom-llm/headroom/internal/fakecuda"
	"github.com/headroom-llm/headroom/internal/texttest"
)

func openFake(t *testing.T) (*fakecuda.Fake, *cuda.Driver) {
	t.Helper()
	f := fakecuda.Build(t)
	d, err := cuda.OpenDriver(cuda.LibraryPaths{Driver: f.DriverPath})
	if err != nil {
		t.Fatalf("OpenDriver: %v", err)
	}
	return f, d
}

// openContext opens the fake driver and a context on device 0, which the
// caller closes (from its own goroutine: the context holds its thread).
func openContext(t *testing.T) (*fakecuda.Fake, *cuda.Context) {
	t.Helper()
	f, d := openFake(t)
	ctx, err := d.OpenContext(0)
	if err != nil {
		t.Fatal(err)
	}
	return f, ctx
}

// inContext opens the fake driver and a context on device 0 as a program
// would, runs fn in it and closes it: an error of any step is returned.
func inContext(f *fakecuda.Fake, fn func(*cuda.Context) error) error {
	d, err := cuda.OpenDriver(cuda.LibraryPaths{Driver: f.DriverPath})
	if err != nil {
		return err
	}
	ctx, err := d.OpenContext(0)
	if err != nil {
		return err
	}
	defer ctx.Close()
	return fn(ctx)
}

// checkProduct fails the test for each element of the row-major bf16
// (batch,n) result out that is not the sum over p < k of term(b, p, j).
func checkProduct(t *testing.T, out []byte, batch, k, n int, term func(b, p, j int) float32) {
	t.Helper()
	for b := 0; b < batch; b++ {
		for j := 0; j < n; j++ {
			var want float32
			for p := 0; p < k; p++ {
				want += term(b, p, j)
			}
			if got := cuda.BF16ToFloat32(binary.LittleEndian.Uint16(out[2*(b*n+j):])); got != want {
				t.Errorf("Y[%d][%d] = %v, want %v", b, j, got, want)
			}
		}
	}
}

// callNames keeps the first word of each logged call.
func callNames(log []string) []string {
	var names []string
	for _, l := range log {
		names = append(names, strings.Fields(l)[0])
	}
	return names
}

func bf16Bytes(vals []float32) []byte {
	b := make([]byte, 2*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint16(b[2*i:], cuda.BF16FromFloat32(v))
	}
	return b
}

// TestGemmCallSequenceAndArguments drives the bindings against the fake
// libraries and checks what reached them: the order of the calls that set
// up a context and a cuBLAS handle, cublasGemmEx's arguments for a
// row-major (B,K)@(K,N) product, and that the product is right.
func TestGemmCallSequenceAndArguments(t *testing.T) {
	f, d := openFake(t)
	const batch, k, n = 3, 5, 7
	ctx, err := d.OpenContext(0)
	if err != nil {
		t.Fatal(err)
	}
	blas, err := ctx.OpenBLAS(cuda.LibraryPaths{CUBLAS: f.CUBLASPath}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := blas.VersionString(); got != "13.1.0" {
		t.Errorf("cuBLAS version %q, want 13.1.0", got)
	}
	// Distinct small integers: every product is exact in bf16 and fp32,
	// and any mix-up of rows, columns or leading dimensions shows.
	x := make([]float32, batch*k)
	w := make([]float32, k*n)
	for i := range x {
		x[i] = float32(i%7 - 3)
	}
	for i := range w {
		w[i] = float32(i%5 - 2)
	}
	xPtr, _ := ctx.Alloc(uint64(2 * len(x)))
	wPtr, _ := ctx.Alloc(uint64(2 * len(w)))
	yPtr, _ := ctx.Alloc(2 * batch * n)
	if err := ctx.CopyToDevice(xPtr, bf16Bytes(x)); err != nil {
		t.Fatal(err)
	}
	if err := ctx.CopyToDevice(wPtr, bf16Bytes(w)); err != nil {
		t.Fatal(err)
	}
	if err := blas.GemmBF16(xPtr, wPtr, yPtr, batch, k, n); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 2*batch*n)
	if err := ctx.CopyToHost(out, yPtr); err != nil {
		t.Fatal(err)
	}
	checkProduct(t, out, batch, k, n, func(b, p, j int) float32 { return x[b*k+p] * w[p*n+j] })
	if err := blas.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ctx.Close(); err != nil {
		t.Fatal(err)
	}

	log := f.Log()
	wantOrder := []string{"cuInit", "cuDevicePrimaryCtxRetain", "cuCtxSetCurrent", "cublasCreate_v2",
		"cublasSetStream_v2", "cuMemAlloc_v2", "cublasSetWorkspace_v2", "cuMemAlloc_v2", "cuMemAlloc_v2",
		"cuMemAlloc_v2", "cublasGemmEx", "cublasDestroy_v2", "cuMemFree_v2", "cuCtxSetCurrent",
		"cuDevicePrimaryCtxRelease_v2"}
	if got := callNames(log); strings.Join(got, " ") != strings.Join(wantOrder, " ") {
		t.Errorf("call sequence:\n got %v\nwant %v", got, wantOrder)
	}
	wantLines := []string{
		"cuInit flags=0",
		"cuDevicePrimaryCtxRetain dev=0",
		fmt.Sprintf("cuMemAlloc_v2 bytes=%d", cuda.DefaultWorkspaceBytes),
		fmt.Sprintf("cublasSetWorkspace_v2 bytes=%d", cuda.DefaultWorkspaceBytes),
		"cublasSetStream_v2 stream=(nil)",
		// m=N, n=B, k=K; A=W (lda=N), B=X (ldb=K), C=Y (ldc=N); bf16 (14) in
		// and out, fp32 compute (68), default algorithm.
		"cublasGemmEx transa=0 transb=0 m=7 n=3 k=5 alpha=1 lda=7 atype=14 ldb=5 btype=14 beta=0 ldc=7 ctype=14 compute=68 algo=-1",
		"cuCtxSetCurrent ctx=(nil)",
	}
	joined := strings.Join(log, "\n")
	for _, l := range wantLines {
		if !strings.Contains(joined, l) {
			t.Errorf("log lacks %q; log:\n%s", l, joined)
		}
	}
}

func TestMissingDriverIsOneLineError(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libcuda.so.1")
	_, err := cuda.OpenDriver(cuda.LibraryPaths{Driver: missing})
	if err == nil {
		t.Fatal("OpenDriver of a missing library succeeded")
	}
	if !errors.Is(err, cuda.ErrLibraryNotFound) {
		t.Errorf("error %v is not ErrLibraryNotFound", err)
	}
	msg := err.Error()
	texttest.Contains(t, "the error", msg, "libcuda.so.1", missing+" does not exist", "install the NVIDIA driver")
	if strings.Contains(msg, "\n") {
		t.Errorf("error is not one line: %q", msg)
	}

	t.Setenv(cuda.EnvLibCUDA, missing)
	_, err = cuda.OpenDriver(cuda.LibraryPaths{})
	if err == nil || !strings.Contains(err.Error(), "from "+cuda.EnvLibCUDA) {
		t.Errorf("with %s set to a missing file: %v", cuda.EnvLibCUDA, err)
	}
}

func TestMissingCUBLAS(t *testing.T) {
	f, ctx := openContext(t)
	defer ctx.Close()
	missing := filepath.Join(t.TempDir(), "libcublas.so.13")
	t.Setenv(cuda.EnvCUBLAS, missing)
	_, err := ctx.OpenBLAS(cuda.LibraryPaths{}, 0)
	if err == nil {
		t.Fatal("OpenBLAS with HEADROOM_CUBLAS pointing nowhere succeeded")
	}
	msg := err.Error()
	texttest.Contains(t, "the error", msg, "libcublas.so.13", missing+" does not exist, from HEADROOM_CUBLAS", "pip install nvidia-cublas")
	if strings.Contains(msg, "\n") {
		t.Errorf("error is not one line: %q", msg)
	}
	// The override variable alone finds the library.
	t.Setenv(cuda.EnvCUBLAS, f.CUBLASPath)
	blas, err := ctx.OpenBLAS(cuda.LibraryPaths{}, 1<<20)
	if err != nil {
		t.Fatalf("OpenBLAS via %s: %v", cuda.EnvCUBLAS, err)
	}
	if blas.Path() != f.CUBLASPath {
		t.Errorf("loaded %s, want %s", blas.Path(), f.CUBLASPath)
	}
	if err := blas.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestDriverErrorsAreNamed(t *testing.T) {
	tests := []struct {
		failCall string
		code     int
		run      func(f *fakecuda.Fake) error
		want     string
	}{
		{"cuInit", 100, func(f *fakecuda.Fake) error {
			_, err := cuda.OpenDriver(cuda.LibraryPaths{Driver: f.DriverPath})
			return err
		}, "cuda: cuInit: CUDA_ERROR_NO_DEVICE (100): no CUDA GPU is visible: check nvidia-smi and CUDA_VISIBLE_DEVICES"},
		{"cuInit", 34, func(f *fakecuda.Fake) error {
			_, err := cuda.OpenDriver(cuda.LibraryPaths{Driver: f.DriverPath})
			return err
		}, "cuda: cuInit: CUDA_ERROR_STUB_LIBRARY (34)"},
		{"cublasGemmEx", 13, func(f *fakecuda.Fake) error {
			return inContext(f, func(ctx *cuda.Context) error {
				blas, err := ctx.OpenBLAS(cuda.LibraryPaths{CUBLAS: f.CUBLASPath}, 1<<20)
				if err != nil {
					return err
				}
				defer blas.Close()
				buf, _ := ctx.Alloc(1 << 10)
				return blas.GemmBF16(buf, buf, buf, 2, 4, 4)
			})
		}, "cuda: cublasGemmEx: CUBLAS_STATUS_EXECUTION_FAILED (13) (shape (2,4)@(4,4) bf16)"},
		{"cuMemAlloc_v2", 2, func(f *fakecuda.Fake) error {
			return inContext(f, func(ctx *cuda.Context) error {
				_, err := ctx.Alloc(1 << 30)
				return err
			})
		}, "cuda: cuMemAlloc_v2(1073741824 bytes): CUDA_ERROR_OUT_OF_MEMORY (2)"},
		{"cuDevicePrimaryCtxRetain", 46, func(f *fakecuda.Fake) error {
			return inContext(f, func(*cuda.Context) error { return nil })
		}, "cuda: cuDevicePrimaryCtxRetain: CUDA_ERROR_DEVICE_UNAVAILABLE (46)"},
	}
	f := fakecuda.Build(t)
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s=%d", tt.failCall, tt.code), func(t *testing.T) {
			f.Reset()
			f.Fail(tt.failCall, tt.code)
			err := tt.run(f)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %q, want prefix %q", err, tt.want)
			}
		})
	}
	if got := cuda.Result(12345).String(); got != "CUDA_ERROR_12345" {
		t.Errorf("unknown result named %q", got)
	}
	if got := cuda.Status(99).String(); got != "CUBLAS_STATUS_99" {
		t.Errorf("unknown status named %q", got)
	}
}

func TestDeviceInfo(t *testing.T) {
	f, d := openFake(t)
	f.SetDevices(2)
	n, err := d.DeviceCount()
	if err != nil || n != 2 {
		t.Fatalf("DeviceCount = %d, %v", n, err)
	}
	info, err := d.Device(1)
	if err != nil {
		t.Fatal(err)
	}
	want := cuda.DeviceInfo{Ordinal: 1, Name: "Fake GPU", PCIBusID: "0000:19:00.0", TotalMemoryBytes: 1 << 32,
		Multiprocessors: 4, ComputeCapability: "9.0", L2CacheBytes: 1 << 20, MemoryBusWidthBit: 5120,
		MaxSMClockMHz: 1980, MaxMemoryClockMHz: 3201}
	if info != want {
		t.Errorf("Device(1) = %+v, want %+v", info, want)
	}
	if _, err := d.Device(2); err == nil || !strings.Contains(err.Error(), "CUDA_ERROR_INVALID_DEVICE") {
		t.Errorf("Device(2) error %v", err)
	}
	if v, err := d.Version(); err != nil || v != 13000 {
		t.Errorf("Version = %d, %v", v, err)
	}
}

func TestKernelsCopyAndSum(t *testing.T) {
	f, ctx := openContext(t)
	defer ctx.Close()
	k, err := ctx.LoadKernels()
	if err != nil {
		t.Fatal(err)
	}
	const size = 4096
	src := make([]byte, size)
	var want uint64
	for i := range src {
		src[i] = byte(i*7 + 3)
	}
	for i := 0; i < size; i += 4 {
		want += uint64(binary.LittleEndian.Uint32(src[i:]))
	}
	sPtr, _ := ctx.Alloc(size)
	dPtr, _ := ctx.Alloc(size)
	sumPtr, _ := ctx.Alloc(8)
	if err := ctx.CopyToDevice(sPtr, src); err != nil {
		t.Fatal(err)
	}
	if err := k.Copy(dPtr, sPtr, size, 8, 256); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, size)
	if err := ctx.CopyToHost(got, dPtr); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, src) {
		t.Error("copy kernel did not copy")
	}
	if err := ctx.Memset8(sumPtr, 0, 8); err != nil {
		t.Fatal(err)
	}
	if err := k.Sum(sumPtr, dPtr, size, 8, 256); err != nil {
		t.Fatal(err)
	}
	sum := make([]byte, 8)
	if err := ctx.CopyToHost(sum, sumPtr); err != nil {
		t.Fatal(err)
	}
	if s := binary.LittleEndian.Uint64(sum); s != want {
		t.Errorf("sum = %d, want %d", s, want)
	}
	if err := k.Copy(dPtr, sPtr, size-4, 8, 256); err == nil {
		t.Error("copy of a size that is not a multiple of 16 was accepted")
	}
	if err := k.Sum(sumPtr, dPtr, size, 8, 100); err == nil {
		t.Error("sum with a block size that is not a multiple of 32 was accepted")
	}
	if err := k.Close(); err != nil {
		t.Fatal(err)
	}
	log := strings.Join(f.Log(), "\n")
	texttest.Contains(t, "the log", log,
		fmt.Sprintf("cuModuleLoadData bytes=%d", len(cuda.KernelsPTX())),
		"cuModuleGetFunction name=copy16",
		"cuModuleGetFunction name=sum16",
		"cuLaunchKernel fn=copy16 grid=8 block=256 n=256",
		"cuLaunchKernel fn=sum16 grid=8 block=256 n=256",
		"cuModuleUnload",
	)
}

// TestContextStaysOnItsThread opens contexts in several goroutines that
// yield constantly. The fake driver, like the real one, refuses a call on a
// thread without a current context, so any call that lands on another
// thread fails.
func TestContextStaysOnItsThread(t *testing.T) {
	f, d := openFake(t)
	f.SetDevices(4)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for dev := 0; dev < 4; dev++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, err := d.OpenContext(dev)
			if err != nil {
				errs <- err
				return
			}
			defer ctx.Close()
			for i := 0; i < 200; i++ {
				runtime.Gosched()
				p, err := ctx.Alloc(64)
				if err == nil {
					err = ctx.Free(p)
				}
				if err != nil {
					errs <- fmt.Errorf("device %d, round %d: %w", dev, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestEmbeddedPTX(t *testing.T) {
	ptx := string(cuda.KernelsPTX())
	texttest.Contains(t, "the embedded PTX", ptx,
		"// clang-14 -x cuda --cuda-device-only --cuda-gpu-arch=sm_80",
		".visible .entry copy16(",
		".visible .entry sum16(",
		"ld.global.nc.v4.u32", // 16-byte loads
		"st.global.v4.u32",    // 16-byte stores
		"atom.global.add.u64",
	)
	// Each kernel takes three 64-bit parameters, as Function.Launch passes them.
	for _, name := range []string{"copy16", "sum16"} {
		re := regexp.MustCompile(`\.param \.u64 ` + name + `_param_\d`)
		if n := len(re.FindAllString(ptx, -1)); n != 3 {
			t.Errorf("%s has %d u64 parameters, want 3", name, n)
		}
	}
	// The copy kernel keeps four 16-byte loads in flight before its stores.
	body := ptx[strings.Index(ptx, ".entry copy16("):strings.Index(ptx, ".entry sum16(")]
	loads := regexp.MustCompile(`(?s)(ld\.global\.nc\.v4\.u32[^\n]*\n\s*(add\.s64[^\n]*\n\s*)?){4}st\.global\.v4\.u32`)
	if !loads.MatchString(body) {
		t.Error("copy16 does not issue four vector loads before its first store")
	}
}

func TestSearchDirs(t *testing.T) {
	venv := t.TempDir()
	sp := filepath.Join(venv, "lib", "python3.12", "site-packages")
	if err := os.MkdirAll(sp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("VIRTUAL_ENV", venv)
	t.Setenv("CUDA_HOME", "/opt/cuda-test")
	dirs := cuda.SearchDirs()
	want := []string{
		"/opt/cuda-test/lib64",
		"/usr/local/cuda/lib64",
		filepath.Join(sp, "nvidia", "cu13", "lib"),
		filepath.Join(sp, "nvidia", "cublas", "lib"),
	}
	if runtime.GOARCH == "amd64" {
		want = append(want, "/usr/local/cuda/targets/x86_64-linux/lib")
	}
	for _, w := range want {
		found := false
		for _, d := range dirs {
			found = found || d == w
		}
		if !found {
			t.Errorf("search dirs lack %s: %v", w, dirs)
		}
	}
}
