package telemetry

import (
	"context"
	"errors"
	"runtime"
	"time"

	"github.com/headroom-llm/headroom/internal/cputime"
	"github.com/headroom-llm/headroom/rundir"
)

// DefaultServerCPUInterval is how often the server's threads are sampled.
const DefaultServerCPUInterval = 250 * time.Millisecond

// ErrNoServerProcess says the server's process could not be read.
var ErrNoServerProcess = errors.New("the server process could not be read from /proc")

// SampleServerCPU samples every thread of process pid and of its
// descendants (an engine's workers, a shell's child) every interval until
// ctx ends, handing the rows to sink: each thread's CPU time and the
// scheduler's run and wait times, so the analyzer can tell a thread that
// wanted a whole core from one that idled, on a busy host too. It returns
// ErrNoServerProcess when the first sample finds nothing to read; a server
// that exits later ends the rows, not the sweep.
func SampleServerCPU(ctx context.Context, pid int, interval time.Duration, now func() int64, sink func([]rundir.ServerCPURow)) error {
	if interval <= 0 {
		interval = DefaultServerCPUInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	first := true
	for {
		rows := ServerCPUSample(pid, now())
		if first && len(rows) == 0 {
			return ErrNoServerProcess
		}
		first = false
		if len(rows) > 0 {
			sink(rows)
		}
		select {
		case <-ctx.Done():
			if rows := ServerCPUSample(pid, now()); len(rows) > 0 {
				sink(rows)
			}
			return nil
		case <-tick.C:
		}
	}
}

// ServerCPUSample reads the threads of pid and its descendants once.
func ServerCPUSample(pid int, timeNS int64) []rundir.ServerCPURow {
	var rows []rundir.ServerCPURow
	cpus := int32(runtime.NumCPU())
	for _, p := range cputime.Tree(pid) {
		ts, err := cputime.Threads(p)
		if err != nil {
			continue
		}
		for _, t := range ts {
			r := rundir.ServerCPURow{TimeNS: timeNS, PID: int32(t.PID), TID: int32(t.TID), Thread: t.Name,
				CPUUserS: t.User.Seconds(), CPUSystemS: t.System.Seconds(), HostCPUs: cpus}
			if t.HasSched {
				r.RunS, r.WaitS = t.Run.Seconds(), t.Wait.Seconds()
			}
			rows = append(rows, r)
		}
	}
	return rows
}
