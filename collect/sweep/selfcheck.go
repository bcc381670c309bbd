package sweep

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/headroom-llm/headroom/clientbound"
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
