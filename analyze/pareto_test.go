package analyze

import (
	"path/filepath"
	"slices"
	"testing"
)

// Frontier membership on constructed points, each case with the answer
// known by construction.
func TestMarkFrontier(t *testing.T) {
	pt := func(name string, user, gpu float64) ParetoPoint {
		return ParetoPoint{Label: name, TokPerSPerUser: user, OutputTokPerSPerGPU: gpu, Sustained: true}
	}
	for _, tt := range []struct {
		name   string
		points []ParetoPoint
		want   []string
	}{
		{"a clean trade-off: every level on it", []ParetoPoint{pt("c=1", 100, 100), pt("c=4", 80, 300), pt("c=16", 40, 600)}, []string{"c=1", "c=4", "c=16"}},
		{"past saturation: slower per user and no more per GPU", []ParetoPoint{pt("c=1", 100, 100), pt("c=8", 60, 500), pt("c=32", 30, 480), pt("c=64", 15, 490)}, []string{"c=1", "c=8"}},
		{"an exact tie in throughput is kept, as vllm bench sweep keeps it", []ParetoPoint{pt("a", 50, 200), pt("b", 40, 200)}, []string{"a", "b"}},
		{"equal speed per user: only the one delivering more", []ParetoPoint{pt("a", 50, 200), pt("b", 50, 300)}, []string{"b"}},
		{"a point beaten on both axes", []ParetoPoint{pt("a", 50, 200), pt("b", 60, 250)}, []string{"b"}},
		{"one point", []ParetoPoint{pt("only", 10, 10)}, []string{"only"}},
	} {
		MarkFrontier(tt.points)
		var got []string
		for _, p := range tt.points {
			if p.Frontier {
				got = append(got, p.Label)
			}
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: frontier %v, want %v", tt.name, got, tt.want)
		}
	}
	// A level that was not sustained (errors, cut short) is never on the
	// frontier, and does not push others off it.
	ps := []ParetoPoint{pt("c=1", 100, 100), pt("c=8", 60, 500)}
	ps = append(ps, ParetoPoint{Label: "c=64", TokPerSPerUser: 80, OutputTokPerSPerGPU: 900})
	MarkFrontier(ps)
	if !ps[0].Frontier || !ps[1].Frontier || ps[2].Frontier {
		t.Errorf("unsustained level: %+v", ps)
	}
}

// On the recorded H200 transformers runs: the points are each level's own
// numbers (1 / median TPOT, output tok/s over one GPU) and the frontier
// is the set no other level beats, checked pairwise here.
func TestParetoOnRecordedRun(t *testing.T) {
	run, err := Load(filepath.Join("..", "examples", "runs", "h200", "sweep-kv256"))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Analyze([]*Run{run}, testSettings())
	if err != nil {
		t.Fatal(err)
	}
	sw := rep.Runs[0].Sweep
	p := sw.Pareto
	if p == nil || p.GPUs != 1 || len(p.Points) != len(sw.Levels) {
		t.Fatalf("pareto %+v for %d levels", p, len(sw.Levels))
	}
	for i, pt := range p.Points {
		l := sw.Levels[i]
		tpot, _ := l.TPOT.Quantile(50)
		if pt.LevelIndex != l.LevelIndex || pt.OutputTokPerSPerGPU != l.OutputTokPerS || pt.TokPerSPerUser != 1/tpot ||
			pt.OutputTokPerSPerConcurrency != l.OutputTokPerS/float64(l.Concurrency) {
			t.Errorf("c=%d: %+v", l.Concurrency, pt)
		}
		beaten := false
		for _, q := range p.Points {
			if q.Sustained && q.TokPerSPerUser >= pt.TokPerSPerUser && q.OutputTokPerSPerGPU > pt.OutputTokPerSPerGPU {
				beaten = true
			}
		}
		if pt.Frontier != (pt.Sustained && !beaten) {
			t.Errorf("c=%d: frontier %v, beaten %v, sustained %v", pt.Concurrency, pt.Frontier, beaten, pt.Sustained)
		}
		t.Logf("c=%-3d %6.1f tok/s/user %7.1f tok/s/GPU frontier=%v", pt.Concurrency, pt.TokPerSPerUser, pt.OutputTokPerSPerGPU, pt.Frontier)
	}
}
