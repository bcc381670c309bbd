package probe

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/cuda"
	"github.com/headroom-llm/headroom/internal/fakecuda"
	"github.com/headroom-llm/headroom/internal/runtest"
	"github.com/headroom-llm/headroom/modelspec"
	"github.com/headroom-llm/headroom/rundir"
)

// The fake cuBLASLt's FP8 roofline: twice the bf16 peak, the same bandwidth.
const fakeFP8PeakTFLOPS = 2 * fakePeakTFLOPS

// tinyModel is a dense Llama-shaped config small enough for the fake GEMM's
// host arithmetic: hidden 64, 2 layers, 4 heads (2 KV heads of 16), FFN
// 128, vocabulary 256.
func tinyModel(t *testing.T) *modelspec.Spec {
	t.Helper()
	m, err := modelspec.Parse([]byte(`{"model_type":"llama","num_hidden_layers":2,"hidden_size":64,
		"num_attention_heads":4,"num_key_value_heads":2,"intermediate_size":128,"vocab_size":256,"torch_dtype":"bfloat16"}`))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func fp8Prober(t *testing.T, f *fakecuda.Fake, opts ...Option) *Prober {
	t.Helper()
	f.SetFP8Roofline(fakeFP8PeakTFLOPS, fakeGEMMBWGBps)
	return fakeProber(t, f, append([]Option{
		WithLibraryPaths(cuda.LibraryPaths{Driver: f.DriverPath, CUBLAS: f.CUBLASPath, CUBLASLt: f.CUBLASLtPath}),
		WithFP8(),
	}, opts...)...)
}

// TestFP8Sweep checks the FP8 roofline against the fake's: the peak is the
// FP8 one, the bytes count one-byte inputs, and the ridge uses the same
// copy bandwidth as bf16's.
func TestFP8Sweep(t *testing.T) {
	f := fakecuda.Build(t)
	res, err := fp8Prober(t, f).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d := res.Devices[0]
	if len(d.GEMMFP8) != len(fakeBatches) || res.CUBLASLtVersion != "13.1.0" {
		t.Fatalf("%d FP8 points, cuBLASLt %q", len(d.GEMMFP8), res.CUBLASLtVersion)
	}
	for i, pt := range d.GEMMFP8 {
		b := fakeBatches[i]
		bytes := float64(b*fakeK+fakeK*fakeN) + 2*float64(b*fakeN)
		want := math.Min(fakeFP8PeakTFLOPS, GEMMFLOPs(b, fakeK, fakeN)/bytes*fakeGEMMBWGBps/1000)
		if pt.DType != DTypeFP8 || pt.RunBatch != b || pt.Bytes != bytes || !near(pt.TFLOPS, want, 1e-5) || !pt.Validation.Passed {
			t.Errorf("B=%d: %s run at %d, %v bytes (want %v), %v TFLOP/s (want %v), validation %+v", b, pt.DType, pt.RunBatch, pt.Bytes, bytes, pt.TFLOPS, want, pt.Validation)
		}
	}
	if !near(d.PeakFP8TFLOPS, fakeFP8PeakTFLOPS, 1e-5) || !near(d.PeakTFLOPS, fakePeakTFLOPS, 1e-5) {
		t.Errorf("peaks: FP8 %v, bf16 %v", d.PeakFP8TFLOPS, d.PeakTFLOPS)
	}
	if want := d.PeakFP8TFLOPS * 1e3 / d.BandwidthGBps; !near(d.RidgeFP8FLOPsPerByte, want, 1e-12) || d.KneeFP8Batch == 0 {
		t.Errorf("FP8 ridge %v (want %v), knee %d", d.RidgeFP8FLOPsPerByte, want, d.KneeFP8Batch)
	}
	rows := res.GEMMRows()
	var fp8Rows int
	for _, r := range rows {
		if r.DType == DTypeFP8 {
			fp8Rows++
		}
	}
	if fp8Rows != len(fakeBatches) || len(rows) != 2*len(fakeBatches) {
		t.Errorf("%d rows, %d of them FP8", len(rows), fp8Rows)
	}
	mp := res.ManifestProbe()
	if mp.FP8 == nil || !near(mp.FP8.PeakFLOPPerS, fakeFP8PeakTFLOPS*1e12, 1e-5) || !mp.Validated || mp.DType != DType {
		t.Errorf("manifest probe %+v, fp8 %+v", mp, mp.FP8)
	}
}

// TestFP8PaddedBatch: where cuBLASLt has no kernel for a batch, the batch is
// run padded to 16 rows and the point says so.
func TestFP8PaddedBatch(t *testing.T) {
	for _, where := range []string{"heuristic", "matmul"} {
		t.Run(where, func(t *testing.T) { testFP8PaddedBatch(t, where) })
	}
}

func testFP8PaddedBatch(t *testing.T, where string) {
	f := fakecuda.Build(t)
	if where == "heuristic" {
		f.SetFP8Alignment(16)
	} else {
		f.SetFP8MatmulAlignment(16)
	}
	res, err := fp8Prober(t, f, WithBatches(1, 16, 20)).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[int]int{}
	for _, p := range res.Devices[0].GEMMFP8 {
		got[p.Batch] = p.RunBatch
		if p.FLOPs != GEMMFLOPs(p.RunBatch, fakeK, fakeN) {
			t.Errorf("B=%d: FLOPs of %v, want those of the %d rows run", p.Batch, p.FLOPs, p.RunBatch)
		}
	}
	if got[1] != 16 || got[16] != 16 || got[20] != 32 {
		t.Errorf("run batches %v, want 1→16, 16→16, 20→32", got)
	}
}

// TestModelGEMMs times a tiny model's decode GEMMs on the fake and checks
// each point and the step floor against the fake's roofline.
func TestModelGEMMs(t *testing.T) {
	f := fakecuda.Build(t)
	model := tinyModel(t)
	batches := []int{1, 4, 32}
	var phases []string
	res, err := fp8Prober(t, f, WithBatches(16), WithModelGEMMs(model, "tiny", batches...),
		WithProgress(func(p Progress) {
			if p.Phase == "model_gemm" {
				phases = append(phases, p.Op+"/"+p.DType)
			}
		})).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d := res.Devices[0]
	perBatch := len(model.DecodeGEMMs(1)) // qkv, o, gate_up, down, lm_head
	if len(d.ModelGEMM) != 2*perBatch*len(batches) || len(phases) != len(d.ModelGEMM) {
		t.Fatalf("%d model GEMM points (%d progress calls), want %d", len(d.ModelGEMM), len(phases), 2*perBatch*len(batches))
	}
	for _, p := range d.ModelGEMM {
		elem, peak := 2.0, fakePeakTFLOPS
		if p.DType == DTypeFP8 {
			elem, peak = 1, fakeFP8PeakTFLOPS
		}
		bytes := elem*float64(p.RunTokens*p.K+p.K*p.N) + 2*float64(p.RunTokens*p.N)
		wantMS := math.Max(p.FLOPs/(peak*1e12), bytes/(fakeGEMMBWGBps*1e9)) * 1e3
		if !p.Validation.Passed || p.Bytes != bytes || !near(p.TimeMS.Median, wantMS, 1e-5) {
			t.Errorf("%s %s B=%d: %v ms (want %v), bytes %v (want %v), validation %+v", p.Op, p.DType, p.Batch, p.TimeMS.Median, wantMS, p.Bytes, bytes, p.Validation)
		}
	}
	floors := rundir.StepFloors(res.ModelGEMMRows())
	if len(floors) != 2*len(batches) {
		t.Fatalf("%d floors, want %d", len(floors), 2*len(batches))
	}
	for _, fl := range floors {
		var want float64
		for _, g := range model.DecodeGEMMs(fl.Batch) {
			elem, peak := 2.0, fakePeakTFLOPS
			if fl.DType == DTypeFP8 {
				elem, peak = 1, fakeFP8PeakTFLOPS
			}
			bytes := elem*float64(g.Tokens*g.K+g.K*g.N) + 2*float64(g.Tokens*g.N)
			want += g.Count * math.Max(GEMMFLOPs(g.Tokens, g.K, g.N)/(peak*1e12), bytes/(fakeGEMMBWGBps*1e9))
		}
		if !near(fl.GEMMSeconds, want, 1e-5) {
			t.Errorf("B=%d %s: floor %v s, want %v", fl.Batch, fl.DType, fl.GEMMSeconds, want)
		}
		elem := 2.0
		if fl.DType == DTypeFP8 {
			elem = 1
		}
		if want := modelspec.GEMMWeightParams(model.DecodeGEMMs(fl.Batch)) * elem; fl.WeightBytes != want {
			t.Errorf("B=%d %s: %v weight bytes, want %v", fl.Batch, fl.DType, fl.WeightBytes, want)
		}
	}
	// A batch with a GEMM missing has no floor.
	if got := rundir.StepFloors(res.ModelGEMMRows()[1:]); len(got) != len(floors)-1 {
		t.Errorf("with one point dropped: %d floors, want %d", len(got), len(floors)-1)
	}

	run, err := rundir.Create(t.TempDir()+"/run", &rundir.Manifest{})
	if err != nil {
		t.Fatal(err)
	}
	if err := res.WriteTo(run); err != nil {
		t.Fatal(err)
	}
	rows := runtest.Table[rundir.ProbeModelGEMMRow](t, run.Dir, rundir.TableProbeModelGEMM)
	if len(rows) != len(d.ModelGEMM) || rows[0].Model != "tiny" || rows[0].Op != modelspec.OpQKV || rows[0].CallsPerStep != 2 {
		t.Errorf("%d rows, first %+v", len(rows), rows[0])
	}
	if !strings.Contains(strings.Join(run.Manifest.Notes, "\n"), "cuBLASLt 13.1.0") || run.Manifest.Probe.Model != "tiny" {
		t.Errorf("manifest notes %q, model %q", run.Manifest.Notes, run.Manifest.Probe.Model)
	}
}

// TestFP8ToleranceCatchesIndexErrors: the loose FP8 tolerance still fails
// a product whose element came from the wrong column.
func TestFP8ToleranceCatchesIndexErrors(t *testing.T) {
	const batch, k, n = 4, 256, 8
	val := func(i int) float64 {
		return float64(cuda.E4M3ToFloat32(cuda.E4M3FromFloat32(float32(math.Sin(float64(i)*1.7) * 2))))
	}
	xAt := func(r, p int) float64 { return val(r*k + p) }
	wAt := func(p, c int) float64 { return val(100000 + c*k + p) }
	y := make([]byte, 2*batch*n)
	put := func(r, c int, v float64) {
		h := cuda.BF16FromFloat32(float32(v))
		y[2*(r*n+c)], y[2*(r*n+c)+1] = byte(h), byte(h>>8)
	}
	dot := func(r, c int) float64 {
		var s float64
		for p := 0; p < k; p++ {
			s += xAt(r, p) * wAt(p, c)
		}
		return s
	}
	for r := 0; r < batch; r++ {
		for c := 0; c < n; c++ {
			put(r, c, dot(r, c)*(1+0.01*math.Sin(float64(r+c)))) // 1% off: within FP8's fast accumulation
		}
	}
	if v := validateProduct(y, xAt, wAt, batch, k, n, 32, 1, fp8Tolerance); !v.Passed {
		t.Fatalf("a 1%% error failed the FP8 check: %+v", v)
	}
	put(batch-1, n-1, dot(batch-1, 0)) // the last corner holds column 0's product
	if v := validateProduct(y, xAt, wAt, batch, k, n, 32, 1, fp8Tolerance); v.Passed {
		t.Errorf("a product from the wrong column passed: %+v", v)
	}
}

func TestSupportsFP8(t *testing.T) {
	for cc, want := range map[string]bool{"9.0": true, "8.9": true, "10.0": true, "8.6": false, "8.0": false, "7.5": false, "": false, "x.y": false} {
		if got := supportsFP8(cc); got != want {
			t.Errorf("supportsFP8(%q) = %v, want %v", cc, got, want)
		}
	}
}
