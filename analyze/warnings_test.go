package analyze

import (
	"path/filepath"
	"strings"
	"testing"
)

// The flagship example's manifest carries two "client fell behind" warnings
// from an older collector rule; the analyzer's client check, applying
// today's rule to the same samples, finds the client kept up, so the report
// no longer opens with them.
func TestStaleClientWarningsSuperseded(t *testing.T) {
	t.Parallel()
	run, err := Load(filepath.Join("..", "examples", "runs", "h200", "sweep-kv256"))
	if err != nil {
		t.Fatal(err)
	}
	var stale int
	for _, w := range run.Manifest.Warnings {
		if strings.HasPrefix(w, "the client fell behind its send schedule") {
			stale++
		}
	}
	if stale != 2 {
		t.Fatalf("the example's manifest has %d client warnings, want the 2 this test is about", stale)
	}
	rep, err := Analyze([]*Run{run}, Default())
	if err != nil {
		t.Fatal(err)
	}
	ra := rep.Runs[0]
	for _, w := range ra.Warnings {
		if strings.Contains(w, "client fell behind") {
			t.Errorf("stale client warning shown: %q", w)
		}
	}
	if c := check(ra.Sweep.Diagnosis, WallClientBound); c.Status != StatusClear {
		t.Errorf("client check %s (%s)", c.Status, c.Reason)
	}
}

// A run whose client really fell behind: the collector's warning gives way
// to the analyzer's finding, which carries the lag as evidence. Other
// manifest warnings, and a client warning about a level without client
// samples, stay.
func TestClientWarningBecomesFinding(t *testing.T) {
	t.Parallel()
	f := cleanKneeSweep(t)
	c8 := kneeLevel[8]
	f.clientEveryLevel(0.3)
	f.gpuEveryLevel(98, 600)
	for i := range f.client {
		if f.client[i].TimeNS >= f.levels[c8].WarmupEndNS {
			f.client[i].SendLagMaxS = 0.250 // far past every level's limit
		}
	}
	lagWarning := "the client fell behind its send schedule at concurrency 8 (level 3): a send lagged 250.0 ms; rerun with more cores or a lower load"
	cpuWarning := "the client may have been the bottleneck at concurrency 16 (level 4): it used 97% of its 2 CPUs; client-side latencies are inflated, rerun with more cores or on another machine"
	unjudged := "the client fell behind its send schedule at concurrency 64 (level 9): a send lagged 30.0 ms; rerun with more cores or a lower load"
	other := "server metrics: 3 scrapes failed (connection refused)"
	f.manifest.Warnings = []string{lagWarning, other, cpuWarning, unjudged}
	rep, err := Analyze([]*Run{f.write()}, testSettings())
	if err != nil {
		t.Fatal(err)
	}
	ra := rep.Runs[0]
	if got, want := strings.Join(ra.Warnings, "\n"), other+"\n"+unjudged; got != want {
		t.Errorf("warnings:\n%s\nwant:\n%s", got, want)
	}
	d := ra.Sweep.Diagnosis
	wantWall(t, d, WallClientBound, 8)
	if !hasEvidence(d.Primary.Evidence, EvSendLag, func(e Evidence) bool { return e.Concurrency == 8 && near(e.Value, 0.250, 1e-9) && e.Count >= 2 }) {
		t.Errorf("client wall lacks the 250 ms send lag at c=8: %+v", d.Primary.Evidence)
	}
}
