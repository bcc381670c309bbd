package sweep

import (
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/rundir"
)

func TestClientBottleneck(t *testing.T) {
	level := rundir.LevelRow{LevelIndex: 3, Concurrency: 64, WarmupEndNS: 1e9, EndNS: 3e9}
	sample := func(tNS int64, cpuS, lagS float64) rundir.ClientSampleRow {
		return rundir.ClientSampleRow{TimeNS: tNS, CPUUserS: cpuS * 0.8, CPUSystemS: cpuS * 0.2, CPUs: 2, SendLagMaxS: lagS}
	}
	tests := []struct {
		name    string
		samples []rundir.ClientSampleRow
		want    string
	}{
		{"idle client", []rundir.ClientSampleRow{sample(1e9, 1, 0), sample(2e9, 1.2, 0.001), sample(3e9, 1.4, 0)}, ""},
		{"both cores busy", []rundir.ClientSampleRow{sample(1e9, 1, 0), sample(2e9, 2.9, 0), sample(3e9, 4.8, 0)}, "used 95% of its 2 CPUs"},
		{"busy outside the window", []rundir.ClientSampleRow{sample(0, 0, 0), sample(1e9, 2, 0), sample(3e9, 2.2, 0), sample(4e9, 5, 0)}, ""},
		{"one late send", []rundir.ClientSampleRow{sample(1e9, 1, 0), sample(2e9, 1.1, 0.025), sample(3e9, 1.2, 0)}, ""},
		{"late sends", []rundir.ClientSampleRow{sample(1e9, 1, 0.02), sample(2e9, 1.1, 0.025), sample(3e9, 1.2, 0)}, "lagged more than 10.0 ms in 2 of 3 samples (at most 25.0 ms)"},
		{"no samples", nil, ""},
	}
	for _, tt := range tests {
		got := ClientBottleneck(level, tt.samples, DefaultCPUWarnFraction, DefaultSendLagWarn)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
		if got != "" && !strings.Contains(got, "concurrency 64 (level 3)") {
			t.Errorf("%s: warning does not name the level: %q", tt.name, got)
		}
	}
}
