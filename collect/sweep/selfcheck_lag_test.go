package sweep

import (
	"strings"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// The manifest warns of send lag in a closed loop only when it is large
// next to the time a request takes on a stream (the rule analyze uses too).
func TestClientBottleneckClosedLoopLag(t *testing.T) {
	const s = int64(time.Second)
	samples := []rundir.ClientSampleRow{
		{TimeNS: 1 * s, CPUs: 16, SendLagMaxS: 0.0135},
		{TimeNS: 2 * s, CPUs: 16, SendLagMaxS: 0.0135},
	}
	slow := rundir.LevelRow{Concurrency: 64, Requests: 73, WarmupEndNS: 0, EndNS: 10 * s}
	if w := ClientBottleneck(slow, samples, 0.9, 10*time.Millisecond); w != "" {
		t.Errorf("13.5 ms before ~9 s requests: warned %q", w)
	}
	fast := rundir.LevelRow{Concurrency: 4, Requests: 400, WarmupEndNS: 0, EndNS: 10 * s}
	if w := ClientBottleneck(fast, samples, 0.9, 10*time.Millisecond); !strings.Contains(w, "fell behind") {
		t.Errorf("13.5 ms before 0.1 s requests: warning %q", w)
	}
	open := rundir.LevelRow{Concurrency: 64, RateRPS: 4, Requests: 73, WarmupEndNS: 0, EndNS: 10 * s}
	if w := ClientBottleneck(open, samples, 0.9, 10*time.Millisecond); !strings.Contains(w, "fell behind") {
		t.Errorf("open loop: warning %q", w)
	}
}
