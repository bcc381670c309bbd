package sweep

import (
	"fmt"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

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
