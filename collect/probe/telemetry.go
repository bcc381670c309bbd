package probe

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
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
	self := uint32(os.Getpid())
	take := func() {
		r, err := dev.Sample()
		procs, perr := dev.ComputeProcesses()
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil {
			if s.err == nil {
				s.err = err
			}
			return
		}
		ts := TelemetrySample{
			Time: now(), Ordinal: ordinal, SMClockMHz: r.SMClockMHz, MemClockMHz: r.MemClockMHz,
			PowerW: r.PowerW, TemperatureC: r.TemperatureC, UtilGPUPct: r.UtilGPUPct, UtilMemPct: r.UtilMemPct,
			MemUsedBytes:      r.MemUsedBytes,
			ClockEventReasons: r.ClockEventReasons,
			Processes:         -1,
		}
		if r.EnergyKnown {
			mj := int64(r.EnergyMJ)
			ts.EnergyMJ = &mj
		}
		if perr == nil {
			ts.Processes = len(procs)
			ts.OtherPIDs = otherProcesses(procs, self)
		}
		s.samples = append(s.samples, ts)
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

// timedPoint is a measured point (*GEMMPoint, *BandwidthPoint,
// *ModelGEMMPoint): its telemetry and the span it ran over.
type timedPoint[P any] interface {
	*P
	span() (telemetry *PointTelemetry, started, finished time.Time)
}

func (p *GEMMPoint) span() (*PointTelemetry, time.Time, time.Time) {
	return &p.Telemetry, p.Started, p.Finished
}
func (p *BandwidthPoint) span() (*PointTelemetry, time.Time, time.Time) {
	return &p.Telemetry, p.Started, p.Finished
}
func (p *ModelGEMMPoint) span() (*PointTelemetry, time.Time, time.Time) {
	return &p.Telemetry, p.Started, p.Finished
}

// summarizePoints gives each point the summary of the samples taken while
// it ran.
func summarizePoints[P any, T timedPoint[P]](samples []TelemetrySample, points []P) {
	for i := range points {
		t, started, finished := T(&points[i]).span()
		*t = summarizeTelemetry(samples, started, finished)
	}
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

// otherProcesses returns the PIDs of the compute processes that are not
// this one. The sampler runs while the probe holds a CUDA context, so one
// of the processes is headroom itself; in a container NVML reports host
// PIDs, so when self is not among them one entry is taken as headroom's
// (the lowest PID, a stable choice) and the rest count as others.
func otherProcesses(procs []nvml.Process, self uint32) []uint32 {
	var pids []uint32
	found := false
	for _, p := range procs {
		if p.PID == self {
			found = true
			continue
		}
		pids = append(pids, p.PID)
	}
	slices.Sort(pids)
	if !found && len(pids) > 0 {
		pids = pids[1:]
	}
	return pids
}

// baseClockTolerance: a point's median SM clock this far below the base
// clock counts as below it (clocks move in steps of about 15 MHz).
const baseClockTolerance = 0.97

// flagThrottling fills the device's throttle, busy and clock fields from
// its samples and the points' summaries.
func flagThrottling(d *DeviceResult) {
	var reasons uint64
	for _, s := range d.Telemetry {
		reasons |= s.ClockEventReasons
		for _, pid := range s.OtherPIDs {
			if !slices.Contains(d.OtherPIDs, pid) {
				d.OtherPIDs = append(d.OtherPIDs, pid)
			}
		}
	}
	slices.Sort(d.OtherPIDs)
	d.Busy = len(d.OtherPIDs) > 0
	d.Throttled = reasons&nvml.ThrottleReasons != 0
	d.PowerCapped = reasons&nvml.ReasonSWPowerCap != 0
	d.ThrottleReasons = nvml.ReasonNames(reasons & (nvml.ThrottleReasons | nvml.ReasonSWPowerCap))
	sort.Strings(d.ThrottleReasons)
	// GEMMs below the base clock for a reason other than the power cap
	// (which heavy GEMMs reach by design) or the thermal and hardware
	// slowdowns flagged above: clocks locked low, a low power state.
	d.LowestSMClockMHz = 0
	if base := d.GPU.BaseSMClockMHz; base > 0 {
		for _, p := range d.GEMM {
			t := p.Telemetry
			if t.Samples == 0 || t.ClockEventReasons&(nvml.ReasonSWPowerCap|nvml.ThrottleReasons) != 0 {
				continue
			}
			if t.SMClockMHzMedian < baseClockTolerance*float64(base) && (d.LowestSMClockMHz == 0 || t.SMClockMHzMedian < d.LowestSMClockMHz) {
				d.LowestSMClockMHz = t.SMClockMHzMedian
			}
		}
	}
	d.ClocksBelowBase = d.LowestSMClockMHz > 0
}

// stateWarnings says what made a device's numbers suspect besides
// throttling: other processes on it, or clocks below base.
func stateWarnings(d DeviceResult) []string {
	var out []string
	if d.Busy {
		pids := make([]string, len(d.OtherPIDs))
		for i, p := range d.OtherPIDs {
			pids[i] = fmt.Sprint(p)
		}
		out = append(out, fmt.Sprintf("GPU %d (%s) was busy while probed: NVML listed %d other compute process(es) on it (PID %s); "+
			"its numbers may be below what it can do: probe an idle GPU (nvidia-smi shows what runs)", d.GPU.Ordinal, d.Mode, len(pids), strings.Join(pids, ", ")))
	}
	if d.ClocksBelowBase {
		out = append(out, fmt.Sprintf("GPU %d (%s) ran GEMMs with the SM clock at %.0f MHz, below its base clock of %d MHz, without a power-cap or thermal reason "+
			"(clocks locked low? nvidia-smi -q -d CLOCK,PERFORMANCE): its numbers are below what it can do", d.GPU.Ordinal, d.Mode, d.LowestSMClockMHz, d.GPU.BaseSMClockMHz))
	}
	return out
}
