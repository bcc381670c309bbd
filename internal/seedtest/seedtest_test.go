package seedtest

import (
	"path/filepath"
	"testing"
)

// The seed's H200 result reads with its GPU, knee and both ends of its
// sweep as the JSON has them.
func TestReadRoofline(t *testing.T) {
	r := ReadRoofline(t, filepath.Join("..", "..", "testdata", "seed", "roofline_NVIDIA_H200.json"))
	first, last := r.Sweep[0], r.Sweep[Points-1]
	if r.GPU != "NVIDIA H200" || r.KneeBatch != 512 || r.PeakTFLOPS != 782.3326967078766 || r.BandwidthTBs != 4.186376138221532 {
		t.Errorf("result %s knee %d peak %v bandwidth %v", r.GPU, r.KneeBatch, r.PeakTFLOPS, r.BandwidthTBs)
	}
	if first.Batch != 1 || first.LatencyMS != 0.03915840089321137 || last.Batch != 2048 || last.TFLOPS != r.PeakTFLOPS || last.Intensity != 1365.3333333333333 {
		t.Errorf("sweep from %+v to %+v", first, last)
	}
}
