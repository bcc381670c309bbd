package sweep

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/headroom-llm/headroom/internal/cputime"
	"github.com/headroom-llm/headroom/rundir"
)

// sampleClient records the client's own CPU time, open streams and send
// lag every sample interval until ctx ends, so a report can tell when the
// client, not the server, was the bottleneck.
func (s *Sweep) sampleClient(ctx context.Context, rec Recorder) {
	tick := time.NewTicker(s.cfg.sampleInterval)
	defer tick.Stop()
	take := func() {
		user, sys := cputime.Process()
		row := rundir.ClientSampleRow{
			TimeNS: s.clock.nowNS(), CPUUserS: user.Seconds(), CPUSystemS: sys.Seconds(), CPUs: int32(runtime.GOMAXPROCS(0)),
			OpenStreams: s.openStreams.Load(), SendLagMaxS: float64(s.sendLagMaxNS.Swap(0)) / 1e9,
		}
		s.mu.Lock()
		s.samples = append(s.samples, row)
		s.mu.Unlock()
		rec.ClientSample(row)
	}
	take()
	for {
		select {
		case <-ctx.Done():
			take()
			return
		case <-tick.C:
			take()
		}
	}
}

// ClientBottleneck checks a level's client samples: was the client's CPU
// near GOMAXPROCS × 100 %, or did sends lag their schedule? It returns a
// warning for the manifest, or "".
func ClientBottleneck(l rundir.LevelRow, samples []rundir.ClientSampleRow, cpuFraction float64, lagWarn time.Duration) string {
	var first, last *rundir.ClientSampleRow
	var lagMax float64
	for i := range samples {
		sm := &samples[i]
		if sm.TimeNS < l.WarmupEndNS || sm.TimeNS > l.EndNS {
			continue
		}
		if first == nil {
			first = sm
		}
		last = sm
		lagMax = max(lagMax, sm.SendLagMaxS)
	}
	what := fmt.Sprintf("concurrency %d", l.Concurrency)
	if l.RateRPS > 0 {
		what = fmt.Sprintf("rate %g/s", l.RateRPS)
	}
	if first != nil && last != first && last.CPUs > 0 {
		dt := float64(last.TimeNS-first.TimeNS) / 1e9
		cpu := (last.CPUUserS + last.CPUSystemS) - (first.CPUUserS + first.CPUSystemS)
		if frac := cpu / dt / float64(last.CPUs); dt >= 0.5 && frac >= cpuFraction {
			return fmt.Sprintf("the client may have been the bottleneck at %s (level %d): it used %.0f%% of its %d CPUs; client-side latencies are inflated, rerun with more cores or on another machine",
				what, l.LevelIndex, frac*100, last.CPUs)
		}
	}
	// In a closed loop a send lag only idles one stream between requests,
	// so it matters relative to how long a request takes there: the limit
	// is the larger of lagWarn and 1% of the mean time per request per
	// stream. (analyze's client check uses the same rule.)
	limit := lagWarn.Seconds()
	if l.RateRPS == 0 && l.Requests > 0 && l.EndNS > l.WarmupEndNS {
		perRequestS := float64(l.EndNS-l.WarmupEndNS) / 1e9 * float64(l.Concurrency) / float64(l.Requests)
		limit = max(limit, perRequestS/100)
	}
	if lagMax > limit {
		return fmt.Sprintf("the client fell behind its send schedule at %s (level %d): a send lagged %.1f ms; rerun with more cores or a lower load",
			what, l.LevelIndex, lagMax*1e3)
	}
	return ""
}
