package sweep

import (
	"fmt"
	"time"

	"github.com/headroom-llm/headroom/clientbound"
	"github.com/headroom-llm/headroom/rundir"
)

// ClientBottleneck applies the client-bound rule (package clientbound,
// the analyzer's too) to a level's client samples: was the client's CPU
// near GOMAXPROCS × 100 %, or did its sends persistently lag their
// schedule? It returns a warning for the manifest, or "".
func ClientBottleneck(l rundir.LevelRow, samples []rundir.ClientSampleRow, cpuFraction float64, lagWarn time.Duration) string {
	c := clientbound.Judge(clientbound.Thresholds{CPUFraction: cpuFraction, SendLagS: lagWarn.Seconds()}, clientbound.Level{
		FromNS: l.WarmupEndNS, ToNS: l.EndNS, OpenLoop: l.RateRPS > 0, Concurrency: int(l.Concurrency), Requests: l.Requests,
	}, samples)
	what := fmt.Sprintf("concurrency %d", l.Concurrency)
	if l.RateRPS > 0 {
		what = fmt.Sprintf("rate %g/s", l.RateRPS)
	}
	switch {
	case c.CPUBound:
		return fmt.Sprintf("the client may have been the bottleneck at %s (level %d): it used %.0f%% of its %d CPUs; client-side latencies are inflated, rerun with more cores or on another machine",
			what, l.LevelIndex, c.CPUFraction*100, c.CPUs)
	case c.Lagging:
		return fmt.Sprintf("the client fell behind its send schedule at %s (level %d): sends lagged more than %.1f ms in %d of %d samples (at most %.1f ms); rerun with more cores or a lower load",
			what, l.LevelIndex, c.LagLimitS*1e3, c.LagSamples, c.Samples, c.LagMaxS*1e3)
	}
	return ""
}
