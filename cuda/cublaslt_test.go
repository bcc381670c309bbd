package cuda_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/cuda"
)

func TestE4M3RoundTrip(t *testing.T) {
	for c := 0; c < 256; c++ {
		b := uint8(c)
		f := cuda.E4M3ToFloat32(b)
		if b&0x7f == 0x7f {
			if !math.IsNaN(float64(f)) {
				t.Errorf("%#02x decodes to %v, want NaN", b, f)
			}
			continue
		}
		if got := cuda.E4M3FromFloat32(f); got != b && !(f == 0 && got&0x7f == 0) {
			t.Errorf("%#02x → %v → %#02x", b, f, got)
		}
	}
	for _, tc := range []struct {
		in   float32
		want float32
	}{
		{448, 448}, {1e6, 448}, {-500, -448}, {1, 1}, {1.0625, 1}, {1.1875, 1.25}, {0.001953125, 0.001953125}, {0.0009, 0},
	} {
		if got := cuda.E4M3ToFloat32(cuda.E4M3FromFloat32(tc.in)); got != tc.want {
			t.Errorf("%v rounds to %v, want %v", tc.in, got, tc.want)
		}
	}
	if cuda.E4M3ToFloat32(0x7e) != cuda.E4M3Max {
		t.Errorf("0x7e is %v, want the largest finite value 448", cuda.E4M3ToFloat32(0x7e))
	}
}

// TestGemmFP8 checks the FP8 GEMM against the fake cuBLASLt: the TN layout
// that a row-major X·W with W stored output-major needs, the scales, one
// heuristic query per shape, and the product itself.
func TestGemmFP8(t *testing.T) {
	f, ctx := openContext(t)
	defer ctx.Close()
	const batch, k, n = 3, 32, 16
	lt, err := ctx.OpenLt(cuda.LibraryPaths{CUBLASLt: f.CUBLASLtPath}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if lt.VersionString() != "13.1.0" || lt.Path() != f.CUBLASLtPath {
		t.Errorf("version %s from %s", lt.VersionString(), lt.Path())
	}
	// Small integers and halves: exact in E4M3, in the products and in bf16.
	x := make([]uint8, batch*k)
	wt := make([]uint8, n*k) // W transposed: row j holds column j of W
	for i := range x {
		x[i] = cuda.E4M3FromFloat32(float32(i%5-2) / 2)
	}
	for i := range wt {
		wt[i] = cuda.E4M3FromFloat32(float32(i%3 - 1))
	}
	xPtr, _ := ctx.Alloc(uint64(len(x)))
	wPtr, _ := ctx.Alloc(uint64(len(wt)))
	yPtr, _ := ctx.Alloc(2 * batch * n)
	if err := ctx.CopyToDevice(xPtr, x); err != nil {
		t.Fatal(err)
	}
	if err := ctx.CopyToDevice(wPtr, wt); err != nil {
		t.Fatal(err)
	}
	if err := lt.SetScales(2, 0.5); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := lt.GemmFP8(xPtr, wPtr, yPtr, batch, k, n); err != nil {
			t.Fatal(err)
		}
	}
	out := make([]byte, 2*batch*n)
	if err := ctx.CopyToHost(out, yPtr); err != nil {
		t.Fatal(err)
	}
	checkProduct(t, out, batch, k, n, func(b, p, j int) float32 {
		return 2 * 0.5 * cuda.E4M3ToFloat32(x[b*k+p]) * cuda.E4M3ToFloat32(wt[j*k+p])
	})
	log := strings.Join(f.Log(), "\n")
	if got := strings.Count(log, "cublasLtMatmulAlgoGetHeuristic"); got != 1 {
		t.Errorf("%d heuristic queries for one shape, want 1 (the plan is cached)", got)
	}
	if !strings.Contains(log, "cublasLtMatmulAlgoGetHeuristic m=16 n=3 k=32 transa=1 transb=0 fast=1") {
		t.Errorf("heuristic query lacks the TN layout m=N n=B k=K with fast accumulation:\n%s", log)
	}

	f.SetFP8Alignment(16)
	err = lt.GemmFP8(xPtr, wPtr, yPtr, batch, k, n)
	if err != nil {
		t.Fatalf("a cached plan must keep working: %v", err)
	}
	err = lt.GemmFP8(xPtr, wPtr, yPtr, 1, k, n)
	if !errors.Is(err, cuda.ErrNoFP8Algorithm) || !strings.Contains(err.Error(), "(1,32)@(32,16)") {
		t.Errorf("batch 1 with a 16-aligned library: %v, want ErrNoFP8Algorithm naming the shape", err)
	}
	f.SetFP8Alignment(1)
	if err := lt.Close(); err != nil {
		t.Fatal(err)
	}
	if err := lt.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestMissingCUBLASLt(t *testing.T) {
	f, ctx := openContext(t)
	defer ctx.Close()
	_, err := ctx.OpenLt(cuda.LibraryPaths{CUBLASLt: f.Dir + "/nope.so"}, 0)
	if !errors.Is(err, cuda.ErrLibraryNotFound) || !strings.Contains(err.Error(), "cuBLASLt") || strings.Contains(err.Error(), "\n") {
		t.Errorf("OpenLt with a missing library: %v, want a one-line library error", err)
	}
	f.Fail("cublasLtCreate", 3)
	_, err = ctx.OpenLt(cuda.LibraryPaths{CUBLASLt: f.CUBLASLtPath}, 0)
	var be *cuda.BLASError
	if !errors.As(err, &be) || be.Call != "cublasLtCreate" {
		t.Errorf("failed create: %v", err)
	}
}

// TestGemmFP8FallsBack: when cublasLtMatmul refuses the heuristic's first
// algorithms, or fast accumulation, the bindings find the one that runs.
func TestGemmFP8FallsBack(t *testing.T) {
	f, ctx := openContext(t)
	defer ctx.Close()
	lt, err := ctx.OpenLt(cuda.LibraryPaths{CUBLASLt: f.CUBLASLtPath}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer lt.Close()
	x, _ := ctx.Alloc(32 * 16)
	w, _ := ctx.Alloc(32 * 16)
	y, _ := ctx.Alloc(2 * 16 * 16)
	f.RefuseFP8(2, false)
	if err := lt.GemmFP8(x, w, y, 16, 32, 16); err != nil || !lt.FastAccumulation(16, 32, 16) {
		t.Fatalf("with the first two algorithms refused: %v (fast %v)", err, lt.FastAccumulation(16, 32, 16))
	}
	f.RefuseFP8(0, true)
	if err := lt.GemmFP8(x, w, y, 8, 32, 16); err != nil || lt.FastAccumulation(8, 32, 16) {
		t.Fatalf("with fast accumulation refused: %v (fast %v)", err, lt.FastAccumulation(8, 32, 16))
	}
	f.RefuseFP8(3, false)
	err = lt.GemmFP8(x, w, y, 4, 32, 16)
	if !errors.Is(err, cuda.ErrNoFP8Algorithm) || !strings.Contains(err.Error(), "refused every algorithm") {
		t.Errorf("with every algorithm refused: %v", err)
	}
	f.RefuseFP8(0, false)
	log := strings.Join(f.Log(), "\n")
	if !strings.Contains(log, "refused algo=0xf9 fast=1") || !strings.Contains(log, "refused algo=0xf8 fast=1") {
		t.Errorf("log lacks the refusals:\n%s", log)
	}
}
