package loadgen

import (
	"context"
	"runtime"
	"time"

	"github.com/headroom-llm/headroom/internal/cputime"
	"github.com/headroom-llm/headroom/rundir"
)

// SampleClient records the client's own CPU time (the whole process, so
// everything it does beside the load counts), open streams and send lag
// every SampleInterval until ctx ends, and once more then, so that a report
// can tell when the client, not the server, was the bottleneck. Run calls
// it for its duration; a caller running levels one by one (RunLevel) runs
// it alongside.
func (g *Generator) SampleClient(ctx context.Context, sink Sink) {
	tick := time.NewTicker(g.cfg.SampleInterval)
	defer tick.Stop()
	take := func() {
		user, sys := cputime.Process()
		sink.ClientSample(rundir.ClientSampleRow{
			TimeNS: g.clock.NowNS(), CPUUserS: user.Seconds(), CPUSystemS: sys.Seconds(), CPUs: int32(runtime.GOMAXPROCS(0)),
			OpenStreams: g.openStreams.Load(), SendLagMaxS: float64(g.sendLagMaxNS.Swap(0)) / 1e9,
		})
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
