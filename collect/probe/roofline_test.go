package probe

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// scriptResult is the JSON that the seed's script 01 wrote on an H200.
type scriptResult struct {
	GPU          string  `json:"gpu"`
	BandwidthTBs float64 `json:"bandwidth_tbs"`
	PeakTFLOPS   float64 `json:"peak_tflops"`
	Ridge        float64 `json:"ridge_flops_per_byte"`
	KneeBatch    int     `json:"knee_batch"`
	Sweep        []struct {
		Batch     int     `json:"batch"`
		Intensity float64 `json:"intensity"`
		TFLOPS    float64 `json:"tflops"`
		LatencyMS float64 `json:"latency_ms"`
	} `json:"sweep"`
}

// loadScriptResult reads the script's H200 output, which lives in the
// shared folder beside the checkout and in testdata/.
func loadScriptResult(t *testing.T) scriptResult {
	t.Helper()
	path := filepath.Join("testdata", "roofline_NVIDIA_H200.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r scriptResult
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(r.Sweep) != 17 {
		t.Fatalf("%s: %d sweep points, want the script's 17", path, len(r.Sweep))
	}
	return r
}

func near(got, want, relTol float64) bool {
	return math.Abs(got-want) <= relTol*math.Abs(want)
}

// TestArithmeticMatchesScript01 recomputes every number of the script's
// H200 run from its own inputs: intensity from B, TFLOP/s from the time per
// call, and peak, ridge and knee from the sweep.
func TestArithmeticMatchesScript01(t *testing.T) {
	r := loadScriptResult(t)
	var points []GEMMPoint
	for _, s := range r.Sweep {
		if got := Intensity(s.Batch, 8192, 8192); !near(got, s.Intensity, 1e-12) {
			t.Errorf("B=%d: intensity %v, script %v", s.Batch, got, s.Intensity)
		}
		// The seed's approximation: intensity = B / (1 + B/4096) for K = N = 8192.
		if got, approx := Intensity(s.Batch, 8192, 8192), float64(s.Batch)/(1+float64(s.Batch)/4096); !near(got, approx, 1e-12) {
			t.Errorf("B=%d: intensity %v, B/(1+B/4096) = %v", s.Batch, got, approx)
		}
		tf := TFLOPS(GEMMFLOPs(s.Batch, 8192, 8192), s.LatencyMS)
		if !near(tf, s.TFLOPS, 1e-9) {
			t.Errorf("B=%d: %v TFLOP/s from %v ms, script %v", s.Batch, tf, s.LatencyMS, s.TFLOPS)
		}
		points = append(points, GEMMPoint{Batch: s.Batch, TFLOPS: tf})
	}
	peak, batch := Peak(points)
	if !near(peak, r.PeakTFLOPS, 1e-9) || batch != 2048 {
		t.Errorf("peak %v at B=%d, script %v at B=2048", peak, batch, r.PeakTFLOPS)
	}
	ridge := Ridge(peak, r.BandwidthTBs*1000)
	if !near(ridge, r.Ridge, 1e-9) || math.Round(ridge*1000)/1000 != 186.876 {
		t.Errorf("ridge %v, script %v (186.876)", ridge, r.Ridge)
	}
	if knee := Knee(points, DefaultKneeFraction); knee != r.KneeBatch || knee != 512 {
		t.Errorf("knee B=%d, script B=%d (512)", knee, r.KneeBatch)
	}
	// B=384 reaches 692.9 TFLOP/s, 88.6% of the peak: just under the knee.
	if Knee(points, 0.88) != 384 {
		t.Errorf("knee at 88%% = %d, want 384", Knee(points, 0.88))
	}
}

func TestGEMMBytesAndFLOPs(t *testing.T) {
	tests := []struct {
		b, k, n    int
		flops, byt float64
	}{
		{1, 8192, 8192, 134217728, 2 * (8192 + 67108864 + 8192)},
		{4096, 8192, 8192, 549755813888, 2 * (33554432 + 67108864 + 33554432)},
		{3, 5, 7, 210, 2 * (15 + 35 + 21)},
	}
	for _, tt := range tests {
		if got := GEMMFLOPs(tt.b, tt.k, tt.n); got != tt.flops {
			t.Errorf("GEMMFLOPs(%d,%d,%d) = %v, want %v", tt.b, tt.k, tt.n, got, tt.flops)
		}
		if got := GEMMBytes(tt.b, tt.k, tt.n); got != tt.byt {
			t.Errorf("GEMMBytes(%d,%d,%d) = %v, want %v", tt.b, tt.k, tt.n, got, tt.byt)
		}
	}
	// B = 4096 with K = N = 8192: intensity 4096 / (1 + 1) = 2048.
	if got := Intensity(4096, 8192, 8192); got != 2048 {
		t.Errorf("Intensity(4096) = %v, want 2048", got)
	}
	// The seed's own worked example: 1500 GB/s and 170 TFLOP/s give a ridge of about 113.
	if got := Ridge(170, 1500); math.Round(got) != 113 {
		t.Errorf("Ridge(170, 1500) = %v, want ≈113", got)
	}
	if !math.IsNaN(Ridge(1, 0)) {
		t.Error("Ridge with no bandwidth is not NaN")
	}
	// The script's bandwidth: a 512 MiB copy counted twice (read and write).
	if got := GBps(2*512<<20, 0.25647); !near(got, 4186.4, 1e-4) {
		t.Errorf("GBps = %v", got)
	}
}

func TestKneeAndPeakEdges(t *testing.T) {
	if p, b := Peak(nil); p != 0 || b != 0 {
		t.Errorf("Peak(nil) = %v, %d", p, b)
	}
	if Knee(nil, 0.9) != 0 {
		t.Error("Knee(nil) != 0")
	}
	// Unsorted input: the knee is the smallest qualifying B, not the first.
	pts := []GEMMPoint{{Batch: 64, TFLOPS: 95}, {Batch: 8, TFLOPS: 40}, {Batch: 32, TFLOPS: 91}, {Batch: 128, TFLOPS: 100}}
	if k := Knee(pts, 0.9); k != 32 {
		t.Errorf("knee %d, want 32", k)
	}
	if p, b := Peak(pts); p != 100 || b != 128 {
		t.Errorf("peak %v at %d", p, b)
	}
}

func TestSummarize(t *testing.T) {
	tests := []struct {
		in   []float64
		want Summary
	}{
		{[]float64{3}, Summary{3, 3, 3, 0}},
		{[]float64{4, 1, 3}, Summary{3, 1, 4, 100}},
		{[]float64{1, 2, 4, 3}, Summary{2.5, 1, 4, 120}},
	}
	for _, tt := range tests {
		if got := Summarize(tt.in); got != tt.want {
			t.Errorf("Summarize(%v) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
	if s := Summarize(nil); !math.IsNaN(s.Median) {
		t.Errorf("Summarize(nil) = %+v", s)
	}
}
