package telemetry

import (
	"context"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// DefaultGPUInterval is how often GPUs are sampled during a sweep.
const DefaultGPUInterval = 500 * time.Millisecond

// GPUSource reads the state of this host's GPUs: NVMLSource (OpenGPU), or
// NoGPU on a host without a GPU or driver.
type GPUSource interface {
	// Devices describes the GPUs for the manifest.
	Devices() []rundir.GPU
	// Sample reads every GPU once, stamped with timeNS.
	Sample(timeNS int64) ([]rundir.GPUTelemetryRow, error)
	Close() error
}

// NoGPU is the GPUSource of a host without GPUs: no devices, no samples.
type NoGPU struct{}

func (NoGPU) Devices() []rundir.GPU                          { return nil }
func (NoGPU) Sample(int64) ([]rundir.GPUTelemetryRow, error) { return nil, nil }
func (NoGPU) Close() error                                   { return nil }

// SampleGPUs samples src every interval until ctx ends, handing rows to
// sink. It returns the first sampling error (sampling goes on after it).
func SampleGPUs(ctx context.Context, src GPUSource, interval time.Duration, now func() int64, sink func([]rundir.GPUTelemetryRow)) error {
	if interval <= 0 {
		interval = DefaultGPUInterval
	}
	var first error
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		rows, err := src.Sample(now())
		if err != nil && first == nil {
			first = err
		}
		if len(rows) > 0 {
			sink(rows)
		}
		select {
		case <-ctx.Done():
			return first
		case <-tick.C:
		}
	}
}
