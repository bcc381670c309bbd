package compare

import (
	"context"
	"errors"
	"slices"
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
	if !gc.NotComparable || len(gc.Differs) != 1 || gc.Differs[0].Key != "workload.prompt_tokens" ||
		!slices.Equal(gc.Differs[0].Values, []string{"fixed 512", "fixed 128"}) {
		t.Fatalf("not comparable %v %+v", gc.NotComparable, gc.Differs)
	}
	for _, d := range gc.Deltas {
		if d.P != nil || d.Interval != nil || d.Significant || d.Test != "" || d.NoTest != NoTestNotComparable {
			t.Errorf("%s at %+v: %+v", d.Metric, d.Load, d)
		}
	}
	if len(gc.Deltas) == 0 || !c.Gate.Failed || c.Gate.Results[0].Status != "unchecked" || c.Gate.Results[0].Unchecked != UncheckedNotComparable {
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
		if gc.NotComparable || find(gc, "ttft_p50", conc(4)) == nil || find(gc, "ttft_p50", conc(4)).P == nil {
			t.Errorf("group by %s, allowed %v: %v %+v", o.GroupBy, o.AllowDiffer, gc.NotComparable, gc.Deltas)
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
	if l := c.LeftOut[0]; l.Why != LeftOutNoLevels || l.Stopped == nil || l.Stopped.Error != "connection refused" {
		t.Errorf("failed: %+v", l)
	}
	if l := c.LeftOut[1]; l.Why != LeftOutAllFailed || l.Requests != 5 {
		t.Errorf("errors: %+v", l)
	}
	_, err = Compare(context.Background(), []*analyze.Run{failed}, opts())
	if nothing := (*NothingToCompareError)(nil); !errors.As(err, &nothing) || len(nothing.LeftOut) != 1 || nothing.LeftOut[0].Dir != "failed" {
		t.Errorf("only failed runs: %v", err)
	}
}
