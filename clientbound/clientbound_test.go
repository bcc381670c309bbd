package clientbound

import (
	"testing"

	"github.com/headroom-llm/headroom/rundir"
)

const s = int64(1e9)

func sample(tNS int64, cpuS, lagS float64) rundir.ClientSampleRow {
	return rundir.ClientSampleRow{TimeNS: tNS, CPUUserS: cpuS * 0.8, CPUSystemS: cpuS * 0.2, CPUs: 2, SendLagMaxS: lagS}
}

func TestJudge(t *testing.T) {
	level := Level{FromNS: 1 * s, ToNS: 4 * s, OpenLoop: true}
	tests := []struct {
		name     string
		samples  []rundir.ClientSampleRow
		cpu, lag bool
		lagN, n  int
	}{
		{"idle client", []rundir.ClientSampleRow{sample(1*s, 1, 0), sample(2*s, 1.2, 0.001), sample(3*s, 1.4, 0)}, false, false, 0, 3},
		{"both cores busy", []rundir.ClientSampleRow{sample(1*s, 1, 0), sample(2*s, 2.9, 0), sample(3*s, 4.8, 0)}, true, false, 0, 3},
		{"busy outside the window", []rundir.ClientSampleRow{sample(0, 0, 0), sample(1*s, 2, 0), sample(3*s, 2.2, 0), sample(5*s, 5, 0)}, false, false, 0, 2},
		{"one late send", []rundir.ClientSampleRow{sample(1*s, 1, 0), sample(2*s, 1.1, 0.025), sample(3*s, 1.2, 0), sample(4*s, 1.3, 0)}, false, false, 1, 4},
		{"late sends in half the samples", []rundir.ClientSampleRow{sample(1*s, 1, 0.02), sample(2*s, 1.1, 0.025), sample(3*s, 1.2, 0), sample(4*s, 1.3, 0)}, false, true, 2, 4},
		{"late sends in under half", []rundir.ClientSampleRow{sample(1*s, 1, 0.02), sample(2*s, 1.1, 0.025), sample(3*s, 1.2, 0), sample(3*s+5e8, 1.2, 0), sample(4*s, 1.3, 0)}, false, false, 2, 5},
		{"no samples", nil, false, false, 0, 0},
		{"samples too close for CPU", []rundir.ClientSampleRow{sample(1*s, 1, 0), sample(1*s+1e8, 1.2, 0)}, false, false, 0, 2},
	}
	for _, tt := range tests {
		c := Judge(Defaults(), level, tt.samples)
		if c.CPUBound != tt.cpu || c.Lagging != tt.lag || c.LagSamples != tt.lagN || c.Samples != tt.n || c.Bound() != (tt.cpu || tt.lag) {
			t.Errorf("%s: %+v", tt.name, c)
		}
	}
	if c := Judge(Defaults(), level, tests[1].samples); !c.CPUKnown || c.CPUs != 2 || c.CPUFraction < 0.949 || c.CPUFraction > 0.951 {
		t.Errorf("CPU of the busy client: %+v, want 95%% of 2 cores", c)
	}
	if c := Judge(Defaults(), level, tests[7].samples); c.CPUKnown {
		t.Errorf("CPU judged over 0.1 s: %+v", c)
	}
}

// A client starved of CPU by other processes uses little CPU time but waits
// for a core: its demand, CPU time plus that wait, is what it wanted.
func TestJudgeDemandCountsTheWaitForACore(t *testing.T) {
	level := Level{FromNS: 1 * s, ToNS: 4 * s, OpenLoop: true}
	wait := func(r rundir.ClientSampleRow, w float64) rundir.ClientSampleRow { r.CPUWaitS = &w; return r }
	starved := []rundir.ClientSampleRow{wait(sample(1*s, 1, 0), 0), wait(sample(2*s, 1.6, 0), 1.3), wait(sample(3*s, 2.2, 0), 2.6)}
	c := Judge(Defaults(), level, starved)
	if !c.DemandKnown || c.CPUFraction > 0.31 || c.CPUDemand < 0.94 || c.CPUDemand > 0.96 || !c.CPUBound {
		t.Errorf("starved client: %+v, want 30%% CPU, 95%% demand, CPU-bound", c)
	}
	if c := Judge(Defaults(), level, []rundir.ClientSampleRow{sample(1*s, 1, 0), sample(3*s, 2.2, 0)}); c.DemandKnown || c.CPUDemand != c.CPUFraction {
		t.Errorf("samples without cpu_wait_s: %+v", c)
	}
}

// In a closed loop a send lag counts next to the time a request takes on a
// stream; in an open loop the schedule is absolute.
func TestLagLimitClosedLoop(t *testing.T) {
	slow := Level{Concurrency: 64, Requests: 73, FromNS: 0, ToNS: 10 * s} // ~8.8 s per request
	fast := Level{Concurrency: 4, Requests: 400, FromNS: 0, ToNS: 10 * s} // 0.1 s per request
	open := Level{Concurrency: 64, Requests: 73, FromNS: 0, ToNS: 10 * s, OpenLoop: true}
	if got := LagLimitS(Defaults(), slow); got < 0.0876 || got > 0.0877 {
		t.Errorf("slow closed loop: limit %v, want 1%% of 8.77 s", got)
	}
	if got := LagLimitS(Defaults(), fast); got != DefaultSendLagS {
		t.Errorf("fast closed loop: limit %v, want %v", got, DefaultSendLagS)
	}
	if got := LagLimitS(Defaults(), open); got != DefaultSendLagS {
		t.Errorf("open loop: limit %v", got)
	}
	lagging := []rundir.ClientSampleRow{{TimeNS: 1 * s, CPUs: 16, SendLagMaxS: 0.0135}, {TimeNS: 2 * s, CPUs: 16, SendLagMaxS: 0.0135}}
	if Judge(Defaults(), slow, lagging).Lagging || !Judge(Defaults(), fast, lagging).Lagging || !Judge(Defaults(), open, lagging).Lagging {
		t.Error("13.5 ms lags: want lagging in the fast closed loop and the open loop only")
	}
}
