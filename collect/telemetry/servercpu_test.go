//go:build linux

package telemetry

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// A child process that spins shows as a thread of the sampled tree whose
// run plus wait time grows with the wall time, however busy the host is.
func TestSampleServerCPUSeesABusyChild(t *testing.T) {
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var mu sync.Mutex
	var rows []rundir.ServerCPURow
	ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
	defer cancel()
	now := func() int64 { return time.Now().UnixNano() }
	err := SampleServerCPU(ctx, os.Getpid(), 100*time.Millisecond, now, func(r []rundir.ServerCPURow) {
		mu.Lock()
		rows = append(rows, r...)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	var first, last *rundir.ServerCPURow
	for i := range rows {
		if int(rows[i].PID) == cmd.Process.Pid {
			if first == nil {
				first = &rows[i]
			}
			last = &rows[i]
		}
	}
	if first == nil || last == first {
		t.Fatalf("the child %d is not in %d rows", cmd.Process.Pid, len(rows))
	}
	dt := float64(last.TimeNS-first.TimeNS) / 1e9
	demand := (last.RunS + last.WaitS - first.RunS - first.WaitS) / dt
	if last.RunS > 0 && demand < 0.8 {
		t.Errorf("a spinning child wanted %.2f of a core over %.2f s", demand, dt)
	}
	if last.Thread != "sh" || last.HostCPUs < 1 {
		t.Errorf("row %+v", *last)
	}
	if err := SampleServerCPU(context.Background(), 1<<30, time.Millisecond, now, func([]rundir.ServerCPURow) {}); err != ErrNoServerProcess {
		t.Errorf("a missing process: %v", err)
	}
}
