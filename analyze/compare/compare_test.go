package compare

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/rundir"
)

var t0 = time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)

// sweep describes a synthetic closed-loop sweep: at each level, n requests
// run back to back in c slots; request i has TTFT ttft(c, i), then `tokens`
// output tokens at one per tpot(c, i).
type sweep struct {
	dir, label string
	tags       []string
	engine     rundir.Engine
	levels     []int
	n          int
	tokens     int64
	ttft, tpot func(c, i int) time.Duration
}

func (s sweep) run() *analyze.Run {
	m := &rundir.Manifest{
		FormatVersion: 1, Kinds: []string{rundir.KindSweep}, Label: s.label, Tags: s.tags,
		StartTime: t0, Complete: true, Engine: &s.engine,
		GPUs:     []rundir.GPU{{Name: "NVIDIA H200", Driver: "570.1"}},
		Workload: &rundir.Workload{Endpoint: "completions", Mode: "closed", Levels: s.levels, Prompt: rundir.Dist{Kind: "fixed", Mean: 512}},
	}
	run := &analyze.Run{Dir: s.dir, Manifest: m}
	at := t0.UnixNano()
	for li, c := range s.levels {
		start := at
		slots := make([]int64, c)
		for i := range slots {
			slots[i] = start
		}
		end := start
		for i := 0; i < s.n; i++ {
			k := i % c
			send := slots[k]
			first := send + int64(s.ttft(c, i))
			fin := first + int64(s.tpot(c, i))*(s.tokens-1)
			slots[k] = fin
			end = max(end, fin)
			run.Requests = append(run.Requests, rundir.RequestRow{
				RequestID: s.dir + "-" + string(rune('a'+li)) + "-" + time.Duration(i).String(), LevelIndex: int32(li), Concurrency: int64(c),
				Seq: int64(i), SendNS: send, IntendedSendNS: send, FirstTokenNS: &first, EndNS: fin,
				ClientChunks: s.tokens, ServerCompletionTokens: &s.tokens, Status: rundir.StatusOK,
			})
		}
		run.Levels = append(run.Levels, rundir.LevelRow{LevelIndex: int32(li), Concurrency: int64(c), StartNS: start, WarmupEndNS: start, EndNS: end, Requests: int64(s.n), Complete: true})
		at = end
	}
	m.EndTime = time.Unix(0, at).UTC()
	return run
}

func constant(d time.Duration) func(c, i int) time.Duration {
	return func(int, int) time.Duration { return d }
}

// spread is d·(1 + i/n): n distinct values from d to about 2d.
func spread(d time.Duration, n int) func(c, i int) time.Duration {
	return func(_, i int) time.Duration { return d + d*time.Duration(i)/time.Duration(n) }
}

func opts() Options {
	o := DefaultOptions()
	o.Settings.Now = t0
	return o
}

// conc is the load of a closed-loop level at concurrency n.
func conc(n int) analyze.LoadKey { return analyze.LoadKeyOf(analyze.AxisConcurrency, n, 0) }

func find(gc GroupComparison, metric string, load analyze.LoadKey) *Delta {
	for i := range gc.Deltas {
		if gc.Deltas[i].Metric == metric && gc.Deltas[i].Load == load {
			return &gc.Deltas[i]
		}
	}
	return nil
}

// One run a side: the latencies are compared over the runs' requests; the
// throughput, one number a run, cannot be tested.
func TestCompareTwoRuns(t *testing.T) {
	base := sweep{dir: "a", label: "v1", engine: rundir.Engine{Name: "vllm", Version: "0.10.0", Model: "m"}, levels: []int{1, 4}, n: 200, tokens: 65,
		ttft: spread(100*time.Millisecond, 200), tpot: constant(10 * time.Millisecond)}
	cand := base
	cand.dir, cand.label, cand.engine.Version = "b", "v2", "0.11.0"
	cand.ttft = spread(200*time.Millisecond, 200) // every TTFT doubled
	c, err := Compare(context.Background(), []*analyze.Run{base.run(), cand.run()}, opts())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Groups) != 2 || !c.Groups[0].Baseline || c.Groups[0].Name != "v1" || c.Runs[1].Group != "v2" {
		t.Fatalf("groups %+v", c.Groups)
	}
	var keys []string
	for _, d := range c.Contexts[0].Differs {
		keys = append(keys, d.Key)
	}
	if !slices.Equal(keys, []string{"label", "engine.version"}) {
		t.Errorf("differs: %v", keys)
	}
	if len(c.Comparisons) != 1 {
		t.Fatalf("comparisons %+v", c.Comparisons)
	}
	gc := c.Comparisons[0]
	thr := find(gc, "throughput", analyze.LoadKey{})
	if thr == nil || thr.Test != "" || thr.NoTest != NoTestFewRuns || thr.N1 != 1 || thr.N2 != 1 || thr.Over != "runs" {
		t.Fatalf("throughput delta %+v", thr)
	}
	// c=1: 200 requests of 100 ms..199.5 ms TTFT + 64 × 10 ms decode, back
	// to back; the candidate adds 100..199.5 ms more to each.
	ttft := find(gc, "ttft_p50", conc(1))
	if ttft == nil || ttft.Over != "requests" || ttft.N1 != 200 || ttft.N2 != 200 || !ttft.Significant || ttft.P == nil || *ttft.P > 1e-10 {
		t.Fatalf("ttft_p50 at c=1: %+v", ttft)
	}
	// Nearest rank p50 of 200 values is the 100th: 100 ms + 99/200·100 ms.
	if math.Abs(ttft.Baseline-0.1495) > 1e-12 || math.Abs(ttft.Candidate-0.299) > 1e-12 || math.Abs(ttft.Change-1) > 1e-9 {
		t.Errorf("ttft_p50 values %v -> %v (%v)", ttft.Baseline, ttft.Candidate, ttft.Change)
	}
	p99 := find(gc, "ttft_p99", conc(4))
	if p99 == nil || p99.Interval == nil || !p99.Significant || p99.Interval.Low <= 1 {
		t.Fatalf("ttft_p99 at c=4: %+v", p99)
	}
	tpot := find(gc, "tpot_p50", conc(4))
	if tpot == nil || tpot.Significant || tpot.Change != 0 || tpot.P == nil || *tpot.P != 1 {
		t.Fatalf("tpot_p50 (unchanged) at c=4: %+v", tpot)
	}
}

// Repeated runs: with four runs a side the throughput can be tested, and a
// clean separation gives the exact p = 2/C(8,4) = 2/70.
func TestCompareRepeatsTestThroughput(t *testing.T) {
	var runs []*analyze.Run
	for i := 0; i < 8; i++ {
		s := sweep{dir: "r" + string(rune('0'+i)), label: "old", levels: []int{2}, n: 20, tokens: 33,
			ttft: constant(50 * time.Millisecond), tpot: constant(time.Duration(20+i) * time.Millisecond)}
		if i >= 4 {
			s.label = "new"
			s.tpot = constant(time.Duration(10+i) * time.Millisecond) // faster decode
		}
		runs = append(runs, s.run())
	}
	c, err := Compare(context.Background(), runs, opts())
	if err != nil {
		t.Fatal(err)
	}
	thr := find(c.Comparisons[0], "throughput", analyze.LoadKey{})
	if thr == nil || thr.N1 != 4 || thr.N2 != 4 || thr.P == nil || math.Abs(*thr.P-2.0/70) > 1e-12 || !thr.Significant || thr.Change <= 0 {
		t.Fatalf("throughput over repeats: %+v", thr)
	}
	// Two runs a side can never be significant: say so.
	c, _ = Compare(context.Background(), []*analyze.Run{runs[0], runs[1], runs[4], runs[5]}, opts())
	thr = find(c.Comparisons[0], "throughput", analyze.LoadKey{})
	if thr == nil || thr.Significant || thr.NoTest != NoTestPFloor || math.Abs(thr.MinP-1.0/3) > 1e-9 || thr.Alpha != 0.05 {
		t.Fatalf("two runs a side: %+v", thr)
	}
}

func TestCompareBaselineAndGroupBy(t *testing.T) {
	mk := func(dir, label string, tags ...string) *analyze.Run {
		return sweep{dir: dir, label: label, tags: tags, levels: []int{1}, n: 5, tokens: 3, ttft: constant(time.Millisecond), tpot: constant(time.Millisecond)}.run()
	}
	runs := []*analyze.Run{mk("x/1", "a", "prefix=on"), mk("x/2", "b", "prefix=off"), mk("x/3", "c", "prefix=on"), mk("x/4", "d")}
	o := opts()
	o.GroupBy = "tag:prefix"
	c, err := Compare(context.Background(), runs, o)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range c.Groups {
		names = append(names, g.Name)
	}
	if !slices.Equal(names, []string{"on", "off", "(none)"}) || !slices.Equal(c.Groups[0].Runs, []int{0, 2}) {
		t.Fatalf("groups %+v", c.Groups)
	}
	o.Baseline = []string{"x/2"}
	c, _ = Compare(context.Background(), runs, o)
	if c.Groups[0].Name != "baseline: off" || !c.Groups[0].Baseline || c.Runs[1].Group != "baseline: off" || len(c.Comparisons) != 2 {
		t.Fatalf("baseline groups %+v", c.Groups)
	}
	o.GroupBy = "engine.nonsense"
	if _, err := Compare(context.Background(), runs, o); err == nil || !strings.Contains(err.Error(), "label, dir, tag:KEY") {
		t.Errorf("unknown key: %v", err)
	}
	o.GroupBy, o.Baseline = "label", []string{"elsewhere"}
	if _, err := Compare(context.Background(), runs, o); err == nil || !strings.Contains(err.Error(), "--baseline elsewhere") {
		t.Errorf("missing baseline: %v", err)
	}
}

func TestParseFlags(t *testing.T) {
	got := parseFlags([]string{"serve", "meta-llama/Llama-3.1-8B", "--max-model-len", "4096", "--enable-prefix-caching",
		"--gpu-memory-utilization=0.9", "--seed", "-1", "-tp", "2"})
	want := []field{{"(positional)", "serve meta-llama/Llama-3.1-8B"}, {"--max-model-len", "4096"}, {"--enable-prefix-caching", "set"},
		{"--gpu-memory-utilization", "0.9"}, {"--seed", "-1"}, {"-tp", "2"}}
	if !slices.Equal(got, want) {
		t.Errorf("parseFlags:\n got %v\nwant %v", got, want)
	}
}

func TestDiffAndGroupValue(t *testing.T) {
	a := &rundir.Manifest{Label: "x", Tags: []string{"tp=2", "replicas"}, Engine: &rundir.Engine{Name: "vllm", Version: "0.10", Model: "m", Flags: []string{"--enable-prefix-caching"}}}
	b := &rundir.Manifest{Label: "x", Engine: &rundir.Engine{Name: "vllm", Version: "0.11", Model: "m", Flags: []string{"--max-model-len", "4096"}}}
	differs, same := diffManifests([]*rundir.Manifest{a, b})
	want := []DiffRow{
		{"tags", []string{"replicas, tp=2", ""}},
		{"engine.version", []string{"0.10", "0.11"}},
		{"engine.flag --enable-prefix-caching", []string{"set", ""}},
		{"engine.flag --max-model-len", []string{"", "4096"}},
	}
	if len(differs) != len(want) {
		t.Fatalf("differs %+v", differs)
	}
	for i := range want {
		if differs[i].Key != want[i].Key || !slices.Equal(differs[i].Values, want[i].Values) {
			t.Errorf("differs[%d] = %+v, want %+v", i, differs[i], want[i])
		}
	}
	if !slices.ContainsFunc(same, func(r DiffRow) bool { return r.Key == "engine.model" && r.Values[0] == "m" }) {
		t.Errorf("same %+v", same)
	}
	cases := map[string]string{"label": "x", "tag:tp": "2", "tag:replicas": "yes", "tag:absent": "(none)", "engine.version": "0.10",
		"engine.flag --enable-prefix-caching": "set", "dir": "runs/a", "gpu.name": "(none)"}
	for key, want := range cases {
		if got := groupValue(key, "runs/a", a); got != want {
			t.Errorf("groupValue(%q) = %q, want %q", key, got, want)
		}
	}
	if got := groupValue("label", "runs/a", &rundir.Manifest{}); got != "a" {
		t.Errorf("unlabelled run groups as %q", got)
	}
}

// A probe-only run has no numbers to compare: it is neither the baseline
// nor a candidate, and the gate does not fail on it.
func TestProbeRunsAreNotCompared(t *testing.T) {
	probe := &analyze.Run{Dir: "probe", Manifest: &rundir.Manifest{FormatVersion: 1, Kinds: []string{rundir.KindProbe}, StartTime: t0, Complete: true},
		GEMM:      []rundir.ProbeGEMMRow{{Batch: 4096, K: 8192, N: 8192, Intensity: 2048, FLOPPerS: 800e12, Mode: "solo"}},
		Bandwidth: []rundir.ProbeBandwidthRow{{Method: "memcpy_dtod", BufferBytes: 1 << 30, BytesPerCall: 2 << 30, BytesPerS: 4e12, Mode: "solo"}}}
	a := sweep{dir: "a", levels: []int{1}, n: 5, tokens: 3, ttft: constant(time.Millisecond), tpot: constant(time.Millisecond)}
	b := a
	b.dir = "b"
	o := opts()
	o.Rules, _ = ParseRules("ttft_p50>+10%")
	c, err := Compare(context.Background(), []*analyze.Run{probe, a.run(), b.run()}, o)
	if err != nil {
		t.Fatal(err)
	}
	if c.Groups[0].Baseline || !c.Groups[1].Baseline || len(c.Comparisons) != 1 || c.Comparisons[0].Candidate != "b" || c.Gate.Failed {
		t.Fatalf("groups %+v comparisons %+v gate %+v", c.Groups, c.Comparisons, c.Gate)
	}
}

// Runs without a label are named by the shortest suffix of their path
// that tells them apart; a manifest's label is kept as it is.
func TestDefaultLabels(t *testing.T) {
	for _, tt := range []struct {
		name   string
		dirs   []string
		labels []string // manifest labels, "" for none
		want   []string
	}{
		{"distinct names", []string{"a/run-1", "b/run-2"}, []string{"", ""}, []string{"run-1", "run-2"}},
		{"same name, two GPUs",
			[]string{"examples/runs/h200/probe", "examples/runs/h200-1b/probe"}, []string{"", ""},
			[]string{"h200/probe", "h200-1b/probe"}},
		{"parents differ higher up",
			[]string{"x/2026-01/sweep", "y/2026-01/sweep", "z/sweep"}, []string{"", "", ""},
			[]string{"x/2026-01/sweep", "y/2026-01/sweep", "z/sweep"}},
		{"a name that is another run's label", []string{"a/base", "b/other"}, []string{"", "base"},
			[]string{"a/base", "base"}},
		{"explicit labels are kept", []string{"a/probe", "b/probe"}, []string{"fp8", "fp8"}, []string{"fp8", "fp8"}},
		{"the same directory twice", []string{"a/probe", "a/probe/", "b/probe"}, []string{"", "", ""},
			[]string{"a/probe", "a/probe", "b/probe"}},
		{"a relative name and a longer path", []string{"probe", "h200/probe"}, []string{"", ""},
			[]string{"probe", "h200/probe"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var runs []*analyze.Run
			for i, d := range tt.dirs {
				runs = append(runs, &analyze.Run{Dir: d, Manifest: &rundir.Manifest{Label: tt.labels[i]}})
			}
			if got := defaultLabels(runs); !slices.Equal(got, tt.want) {
				t.Errorf("labels %q, want %q", got, tt.want)
			}
		})
	}
}

// Two unlabelled runs in folders of the same name are two groups, each
// named by its distinguishing path.
func TestCompareSameNamedRuns(t *testing.T) {
	a := sweep{dir: "archive/h200/sweep", engine: rundir.Engine{Name: "vllm", Version: "0.11.0"}, levels: []int{1, 4}, n: 20, tokens: 64,
		ttft: constant(20 * time.Millisecond), tpot: constant(10 * time.Millisecond)}
	b := a
	b.dir = "archive/h100/sweep"
	c, err := Compare(context.Background(), []*analyze.Run{a.run(), b.run()}, opts())
	if err != nil {
		t.Fatal(err)
	}
	if c.Runs[0].Label != "h200/sweep" || c.Runs[1].Label != "h100/sweep" {
		t.Errorf("labels %q, %q", c.Runs[0].Label, c.Runs[1].Label)
	}
	if len(c.Groups) != 2 || c.Groups[0].Name != "h200/sweep" || c.Groups[1].Name != "h100/sweep" || c.Runs[1].Group != "h100/sweep" {
		t.Errorf("groups %+v", c.Groups)
	}
}
