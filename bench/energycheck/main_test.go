package main

import (
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/internal/texttest"
	"github.com/headroom-llm/headroom/rundir"
)

// A GPU whose counter advances exactly as its power samples say (a ramp
// from 100 W to 500 W, sampled every 50 ms for 10 s), and one without the
// counter.
func TestReport(t *testing.T) {
	var rows []rundir.GPUTelemetryRow
	mj := int64(7_000_000)
	for i := range 201 {
		p := 100 + 400*float64(i)/200
		if i > 0 {
			prev := 100 + 400*float64(i-1)/200
			mj += int64((p + prev) / 2 * 0.05 * 1e3)
		}
		e := mj
		rows = append(rows, rundir.GPUTelemetryRow{TimeNS: int64(i) * 50e6, Device: 0, PowerW: p, EnergyMJ: &e},
			rundir.GPUTelemetryRow{TimeNS: int64(i) * 50e6, Device: 1, PowerW: 300})
	}
	var b strings.Builder
	report(&b, rows, 2e9, 20)
	out := b.String()
	texttest.Contains(t, "the output", out,
		"GPU 0: 201 samples over 10.0 s; 201 carry energy_mj",
		"whole run: counter 3000.0 J, integrated power 3000.0 J, integrated/counter 1.0000, mean power 300.0 W",
		"every 20th sample: counter 3000.0 J, integrated 3000.0 J, integrated/counter 1.0000",
		"slice ratios integrated/counter: min 1.0000 median 1.0000 max 1.0000 over 5 slices",
		"GPU 1: 201 samples over 10.0 s; 0 carry energy_mj",
		"the energy counter is missing",
	)
}
