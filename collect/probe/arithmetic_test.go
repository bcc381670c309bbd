package probe

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/headroom-llm/headroom/internal/seedtest"
)

// loadScriptResult reads the script's H200 output, which lives in the
// shared folder beside the checkout and in testdata/.
func loadScriptResult(t *testing.T) seedtest.Roofline {
	t.Helper()
	return seedtest.ReadRoofline(t, filepath.Join("testdata", "roofline_NVIDIA_H200.json"))
}

func near(got, want, relTol float64) bool {
	return math.Abs(got-want) <= relTol*math.Abs(want)
}

// TestArithmeticMatchesScript01 recomputes the script's H200 numbers from
// its own inputs: intensity from B, TFLOP/s from the time per call.
func TestArithmeticMatchesScript01(t *testing.T) {
	r := loadScriptResult(t)
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
	}
	// Peak, ridge and knee from these points: package roofline's tests.
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
	// The script's bandwidth: a 512 MiB copy counted twice (read and write).
	if got := GBps(2*512<<20, 0.25647); !near(got, 4186.4, 1e-4) {
		t.Errorf("GBps = %v", got)
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
