package probe

import (
	"sort"
	"sync"
	"time"

	"github.com/headroom-llm/headroom/cuda/nvml"
)

// sampler reads one GPU's NVML state every interval in its own goroutine
// (NVML needs no CUDA context) until stopped.
type sampler struct {
	stop    chan struct{}
	done    chan struct{}
	mu      sync.Mutex
	samples []TelemetrySample
	err     error // the first failed sample; sampling goes on
}

func startSampler(dev *nvml.Device, ordinal int, interval time.Duration, now func() time.Time) *sampler {
	s := &sampler{stop: make(chan struct{}), done: make(chan struct{})}
	take := func() {
		r, err := dev.Sample()
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil {
			if s.err == nil {
				s.err = err
			}
			return
		}
		s.samples = append(s.samples, TelemetrySample{
			Time: now(), Ordinal: ordinal, SMClockMHz: r.SMClockMHz, MemClockMHz: r.MemClockMHz,
			PowerW: r.PowerW, TemperatureC: r.TemperatureC, UtilGPUPct: r.UtilGPUPct, UtilMemPct: r.UtilMemPct,
			MemUsedBytes:      r.MemUsedBytes,
			ClockEventReasons: r.ClockEventReasons,
		})
	}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		take()
		for {
			select {
			case <-s.stop:
				take()
				return
			case <-tick.C:
				take()
			}
		}
	}()
	return s
}

// Stop ends sampling and returns the samples and the first sampling error.
func (s *sampler) Stop() ([]TelemetrySample, error) {
	close(s.stop)
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples, s.err
}

// summarizeTelemetry condenses the samples taken from start to end.
func summarizeTelemetry(samples []TelemetrySample, start, end time.Time) PointTelemetry {
	var pt PointTelemetry
	var sm, mem []float64
	for _, s := range samples {
		if s.Time.Before(start) || s.Time.After(end) {
			continue
		}
		pt.Samples++
		sm = append(sm, float64(s.SMClockMHz))
		mem = append(mem, float64(s.MemClockMHz))
		pt.PowerWMax = max(pt.PowerWMax, s.PowerW)
		pt.TemperatureCMax = max(pt.TemperatureCMax, s.TemperatureC)
		pt.ClockEventReasons |= s.ClockEventReasons
	}
	if pt.Samples > 0 {
		pt.SMClockMHzMedian = Summarize(sm).Median
		pt.MemClockMHzMedian = Summarize(mem).Median
	}
	pt.Throttled = pt.ClockEventReasons&nvml.ThrottleReasons != 0
	return pt
}

// flagThrottling fills the device's throttle fields from all its samples.
func flagThrottling(d *DeviceResult) {
	var reasons uint64
	for _, s := range d.Telemetry {
		reasons |= s.ClockEventReasons
	}
	d.Throttled = reasons&nvml.ThrottleReasons != 0
	d.PowerCapped = reasons&nvml.ReasonSWPowerCap != 0
	d.ThrottleReasons = nvml.ReasonNames(reasons & (nvml.ThrottleReasons | nvml.ReasonSWPowerCap))
	sort.Strings(d.ThrottleReasons)
}
