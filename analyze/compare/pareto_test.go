package compare

import (
	"slices"
	"testing"

	"github.com/headroom-llm/headroom/analyze"
)

// Two runs' levels on one chart: the frontier across them takes, at each
// speed per user, the run that delivers more, and a run that is beaten
// everywhere has no point on it; each point keeps its run.
func TestParetoAcrossRuns(t *testing.T) {
	pt := func(c int, user, gpu float64) analyze.ParetoPoint {
		return analyze.ParetoPoint{Load: analyze.LoadKeyOf(analyze.AxisConcurrency, c, 0), Concurrency: c, TokPerSPerUser: user, OutputTokPerSPerGPU: gpu, Sustained: true}
	}
	run := func(label string, ps ...analyze.ParetoPoint) Run {
		p := &analyze.Pareto{GPUs: 1, Points: ps}
		analyze.MarkFrontier(p.Points)
		return Run{Label: label, Sweep: &SweepSummary{Pareto: p}}
	}
	runs := []Run{
		run("tp2", pt(1, 120, 60), pt(8, 100, 400), pt(64, 40, 900)),
		run("replicas", pt(1, 90, 90), pt(8, 85, 600), pt(64, 50, 1000)),
		run("beaten", pt(1, 80, 50), pt(8, 60, 300)),
		{Label: "probe only"},
	}
	got := paretoAcross(runs)
	if len(got) != 8 {
		t.Fatalf("%d points, want 8", len(got))
	}
	var on []string
	for _, p := range got {
		if p.Label != runs[p.Run].Label {
			t.Errorf("point %+v lost its run", p)
		}
		if p.Frontier {
			on = append(on, p.Label+" "+p.Load.ID())
		}
	}
	want := []string{"tp2 c=1", "tp2 c=8", "replicas c=8", "replicas c=64"}
	if !slices.Equal(on, want) {
		t.Errorf("frontier %v, want %v", on, want)
	}
	// The runs' own frontiers are theirs: tp2's c=64 is on its own.
	if !runs[0].Sweep.Pareto.Points[2].Frontier {
		t.Error("a run's own frontier was changed by the comparison")
	}
}
