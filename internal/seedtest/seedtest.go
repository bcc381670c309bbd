// Package seedtest reads the seed's script 01 result on an H200
// (testdata/seed/roofline_NVIDIA_H200.json) for the tests of the packages
// that must agree with it: its own reading of the JSON, not the
// importer's, so that a test of the importer checks against it.
package seedtest

import (
	"encoding/json"
	"os"
	"testing"
)

// Points is how many batch sizes the script swept.
const Points = 17

// Roofline is the JSON that the seed's script 01 wrote on an H200.
type Roofline struct {
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

// ReadRoofline reads the script's result at path, and stops the test
// unless it reads with the script's Points sweep points.
func ReadRoofline(tb testing.TB, path string) Roofline {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	var r Roofline
	if err := json.Unmarshal(b, &r); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	if len(r.Sweep) != Points {
		tb.Fatalf("%s: %d sweep points, want the script's %d", path, len(r.Sweep), Points)
	}
	return r
}
