package compare

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/rundir"
)

// Runs whose workloads differ are shown side by side and never tested; the
// gate cannot pass on them. Grouped by the key that differs, or with it
// allowed, they are compared as usual.
func TestNotComparableRunsAreNotTested(t *testing.T) {
	a := sweep{dir: "a", label: "a", levels: []int{1, 4}, n: 120, tokens: 8, ttft: spread(time.Millisecond, 120), tpot: constant(time.Millisecond)}
	b := a
	b.dir, b.label, b.ttft = "b", "b", spread(3*time.Millisecond, 120)
	ra, rb := a.run(), b.run()
	rb.Manifest.Workload.Prompt.Mean = 128
	o := opts()
	o.Rules, _ = ParseRules("ttft_p50>+10%")
	c, err := Compare(context.Background(), []*analyze.Run{ra, rb}, o)
	if err != nil {
		t.Fatal(err)
	}
	gc := c.Comparisons[0]
	if gc.NotComparable != "not comparable: workload.prompt_tokens differs (fixed 512 against fixed 128)" || len(gc.Differs) != 1 {
		t.Fatalf("not comparable %q %+v", gc.NotComparable, gc.Differs)
	}
	for _, d := range gc.Deltas {
		if d.P != nil || d.Interval != nil || d.Significant || d.Test != "" || d.NoTest != NoTestNotComparable {
			t.Errorf("%s at %s: %+v", d.Metric, d.Load, d)
		}
	}
	if len(gc.Deltas) == 0 || !c.Gate.Failed || c.Gate.Results[0].Status != "unchecked" || !strings.Contains(c.Gate.Results[0].Line, "not comparable") {
		t.Errorf("gate %+v", c.Gate)
	}
	for _, mod := range []func(*Options){
		func(o *Options) { o.GroupBy = "workload.prompt_tokens" },
		func(o *Options) { o.AllowDiffer = []string{"workload.prompt_tokens"} },
	} {
		o := opts()
		mod(&o)
		c, err := Compare(context.Background(), []*analyze.Run{a.run(), rb}, o)
		if err != nil {
			t.Fatal(err)
		}
		gc := c.Comparisons[0]
		if gc.NotComparable != "" || find(gc, "ttft_p50", "c=4") == nil || find(gc, "ttft_p50", "c=4").P == nil {
			t.Errorf("group by %s, allowed %v: %q %+v", o.GroupBy, o.AllowDiffer, gc.NotComparable, gc.Deltas)
		}
	}
}

// A sweep without one successful request is listed apart with why (and
// the collector's reason to stop), forms no group and is not the baseline.
func TestFailedRunsAreLeftOut(t *testing.T) {
	good := sweep{dir: "good", levels: []int{1}, n: 5, tokens: 3, ttft: constant(time.Millisecond), tpot: constant(time.Millisecond)}
	failed := &analyze.Run{Dir: "failed", Manifest: &rundir.Manifest{Kinds: []string{rundir.KindSweep}, StartTime: t0,
		Stopped: &rundir.Stopped{Reason: "error", Error: "connection refused"}}}
	errs := good.run()
	errs.Dir = "errors"
	for i := range errs.Requests {
		errs.Requests[i].Status, errs.Requests[i].FirstTokenNS = rundir.StatusConnect, nil
	}
	errs.Levels[0].Errors = errs.Levels[0].Requests
	o := opts()
	o.Baseline = []string{"failed"}
	c, err := Compare(context.Background(), []*analyze.Run{failed, good.run(), errs}, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Runs) != 1 || c.Runs[0].Dir != "good" || len(c.Groups) != 1 || len(c.LeftOut) != 2 {
		t.Fatalf("runs %+v groups %+v left out %+v", c.Runs, c.Groups, c.LeftOut)
	}
	if w := c.LeftOut[0].Why; w != "no request was measured (no sweep level was written); the collector stopped (error: connection refused)" {
		t.Errorf("failed: %q", w)
	}
	if w := c.LeftOut[1].Why; !strings.HasPrefix(w, "every one of its 5 measured requests failed") {
		t.Errorf("errors: %q", w)
	}
	if _, err := Compare(context.Background(), []*analyze.Run{failed}, opts()); err == nil || !strings.Contains(err.Error(), "failed: no request was measured") {
		t.Errorf("only failed runs: %v", err)
	}
}
