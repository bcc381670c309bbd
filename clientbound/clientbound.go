// Package clientbound decides, from the load generator's own samples
// (the run directory's client_samples table), whether the client rather
// than the server limited a level: its CPU demand (CPU time plus waiting
// for a core) near all of its cores, or its sends persistently behind
// their schedule. The sweep warns with it while
// recording and the analyzer judges with it, with one set of defaults.
package clientbound

import "github.com/headroom-llm/headroom/rundir"

// Defaults of the rule; the analyzer's settings may override them.
const (
	// DefaultCPUFraction: the client's CPU time at or above this share of
	// GOMAXPROCS cores over a level means it had no CPU to spare.
	DefaultCPUFraction = 0.9
	// DefaultSendLagS: a send later than its schedule by more than this
	// (open loop; a closed loop scales it, see LagLimitS) falls behind.
	DefaultSendLagS = 0.010
	// MinLagSamples: a level lags only when at least this many of its
	// samples, and at least half of them, saw a send over the limit. One
	// late send (a GC pause, a page fault) is not a saturated client: on
	// this project's 2-core box a single 10.6 ms lag once turned a KV-cache
	// wall with 41 preemptions into "client-bound".
	MinLagSamples = 2
	// MinCPUWindowS: CPU over a shorter stretch of samples is not judged.
	MinCPUWindowS = 0.5
)

// Thresholds are the rule's limits.
type Thresholds struct {
	CPUFraction float64 // DefaultCPUFraction
	SendLagS    float64 // DefaultSendLagS
}

// Defaults returns the default thresholds.
func Defaults() Thresholds {
	return Thresholds{CPUFraction: DefaultCPUFraction, SendLagS: DefaultSendLagS}
}

// Level is what the rule needs to know of a level.
type Level struct {
	// FromNS and ToNS bound the measured window (warm-up excluded):
	// samples in [FromNS, ToNS] count.
	FromNS, ToNS int64
	OpenLoop     bool // arrivals on a schedule (--rate), not a closed loop
	Concurrency  int  // streams of a closed loop
	Requests     int64
}

// LagLimitS is the send lag above which the client fell behind. In an open
// loop the schedule is absolute: th.SendLagS. In a closed loop a lag only
// idles one stream between requests, so it counts next to the mean time a
// request takes on a stream: the limit is the larger of th.SendLagS and 1%
// of (window × concurrency ÷ requests).
func LagLimitS(th Thresholds, l Level) float64 {
	limit := th.SendLagS
	if !l.OpenLoop && l.Requests > 0 && l.ToNS > l.FromNS {
		perRequestS := float64(l.ToNS-l.FromNS) / 1e9 * float64(l.Concurrency) / float64(l.Requests)
		limit = max(limit, perRequestS/100)
	}
	return limit
}

// Lagging is the persistence rule: at least MinLagSamples of a level's
// samples, and at least half of them, saw a send over the limit.
func Lagging(lagSamples, samples int) bool {
	return lagSamples >= MinLagSamples && 2*lagSamples >= samples
}

// Check is the rule's verdict on one level, with what it was decided from.
type Check struct {
	Samples int // client samples in the window

	// CPUFraction is the client's CPU time over wall time over GOMAXPROCS
	// between the window's first and last sample; CPUKnown is false when
	// they span less than MinCPUWindowS.
	CPUFraction float64
	CPUKnown    bool
	CPUs        int
	// CPUDemand adds the time the client's threads waited for a core
	// (cpu_wait_s) to its CPU time: what it wanted, which a busy host does
	// not hide. DemandKnown is false for samples without the column; the
	// demand is then CPUFraction.
	CPUDemand   float64
	DemandKnown bool
	CPUBound    bool // CPUDemand >= th.CPUFraction

	LagMaxS    float64 // largest send lag in the window
	LagLimitS  float64
	LagSamples int  // samples whose send lag exceeded LagLimitS
	Lagging    bool // Lagging(LagSamples, Samples)
}

// Bound reports whether the client limited the level.
func (c Check) Bound() bool { return c.CPUBound || c.Lagging }

// Judge applies the rule to a level's samples (in time order).
func Judge(th Thresholds, l Level, samples []rundir.ClientSampleRow) Check {
	c := Check{LagLimitS: LagLimitS(th, l)}
	var first, last *rundir.ClientSampleRow
	for i := range samples {
		s := &samples[i]
		if s.TimeNS < l.FromNS || s.TimeNS > l.ToNS {
			continue
		}
		if first == nil {
			first = s
		}
		last = s
		c.Samples++
		c.LagMaxS = max(c.LagMaxS, s.SendLagMaxS)
		if s.SendLagMaxS > c.LagLimitS {
			c.LagSamples++
		}
	}
	c.Lagging = Lagging(c.LagSamples, c.Samples)
	if first == nil {
		return c
	}
	c.CPUs = int(last.CPUs)
	if dt := float64(last.TimeNS-first.TimeNS) / 1e9; dt >= MinCPUWindowS && last.CPUs > 0 {
		cpu := (last.CPUUserS + last.CPUSystemS) - (first.CPUUserS + first.CPUSystemS)
		c.CPUFraction, c.CPUKnown = cpu/dt/float64(last.CPUs), true
		c.CPUDemand = c.CPUFraction
		if first.CPUWaitS != nil && last.CPUWaitS != nil {
			c.CPUDemand += max(*last.CPUWaitS-*first.CPUWaitS, 0) / dt / float64(last.CPUs)
			c.DemandKnown = true
		}
		c.CPUBound = c.CPUDemand >= th.CPUFraction
	}
	return c
}
