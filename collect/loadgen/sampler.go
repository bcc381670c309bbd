package loadgen

import (
	"context"
	"runtime"
	"time"

	"github.com/headroom-llm/headroom/internal/cputime"
	"github.com/headroom-llm/headroom/rundir"
)

// SampleClient records the client's own CPU time (the whole process, so
// everything it does beside the load counts) and the time its threads
// waited for a core, open streams and send lag
// every SampleInterval until ctx ends, and once more then, so that a report
// can tell when the client, not the server, was the bottleneck. Run calls
// it for its duration; a caller running levels one by one (RunLevel) runs
// it alongside.
func (g *Generator) SampleClient(ctx context.Context, sink Sink) {
	tick := time.NewTicker(g.cfg.SampleInterval)
	defer tick.Stop()
	take := func() {
		user, sys := cputime.Process()
		row := rundir.ClientSampleRow{
			TimeNS: g.clock.NowNS(), CPUUserS: user.Seconds(), CPUSystemS: sys.Seconds(), CPUs: int32(runtime.GOMAXPROCS(0)),
			OpenStreams: g.openStreams.Load(), SendLagMaxS: float64(g.sendLagMaxNS.Swap(0)) / 1e9,
			Resent: new(g.resent.Load()),
		}
		// The time the client's threads waited for a core: with its CPU
		// time, what the client wanted, which a busy host does not hide.
		if w, ok := cputime.Wait(); ok {
			s := w.Seconds()
			row.CPUWaitS = &s
		}
		sink.ClientSample(row)
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
