package analyze

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/rundir"
)

// Two runs of one configuration are repeats: per level, a t interval over
// the runs' values.
func TestRepeatGroups(t *testing.T) {
	t.Parallel()
	a := kneeSweep(t)
	b := newFakeSweep(t)
	for _, c := range []int{1, 2, 4, 8, 16, 32} {
		b.level(c, 3, constTTFT(kneeTTFT), kneeTPOT[c]*1.1)
	}
	other := kneeSweep(t)
	other.manifest.Engine.Flags = []string{"--max-model-len", "8192"}
	rep, err := Analyze([]*Run{a.write(), b.write(), other.write()}, testSettings())
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Repeats) != 1 || len(rep.Repeats[0].Runs) != 2 || rep.Repeats[0].Runs[1] != 1 {
		t.Fatalf("repeats %+v", rep.Repeats)
	}
	l := rep.Repeats[0].Levels[0]
	if l.Concurrency != 1 || l.Runs != 2 || l.TPOTP50S == nil || l.TPOTP50S.N != 2 {
		t.Fatalf("level %+v", l)
	}
	if !near(l.TPOTP50S.Estimate, 0.021, 1e-9) || l.TPOTP50S.Low >= 0.020 || l.TPOTP50S.High <= 0.022 || !strings.Contains(l.TPOTP50S.Method, "Student") {
		t.Errorf("TPOT interval %+v", l.TPOTP50S)
	}
}

// A run that lacks context says so, item by item.
func TestMissingContext(t *testing.T) {
	t.Parallel()
	f := kneeSweep(t)
	f.manifest.Engine = &rundir.Engine{Name: "vllm", Model: "m"}
	f.manifest.GPUs = []rundir.GPU{{Name: "NVIDIA H200"}}
	f.manifest.Workload.SharedPrefixTokens = 100
	rep, err := Analyze([]*Run{f.write()}, testSettings())
	if err != nil {
		t.Fatal(err)
	}
	got := rep.Runs[0].Missing
	for _, want := range []string{CtxDriver, CtxCUDA, CtxEngineVersion, CtxQuantization, CtxDType, CtxContextLength, CtxServerFlags} {
		if !slices.Contains(got, want) {
			t.Errorf("missing context %q lacks %q", got, want)
		}
	}
	var prefix bool
	for _, c := range rep.Runs[0].Context {
		prefix = prefix || (c.Key == CtxSharedPrefix && len(c.Numbers) == 1 && c.Numbers[0] == 100)
	}
	if !prefix {
		t.Error("a shared prefix must be recorded")
	}
}

// Every scenario's report must serialize: no NaN or Inf anywhere.
func TestReportSerializes(t *testing.T) {
	t.Parallel()
	set := testSettings()
	set.SLO, _ = ParseSLO("ttft_p99=1s,tpot_p99=30ms,itl_p90=25ms")
	set.Model = readConfig(t, "mixtral-8x7b-instruct-v0.1.json")
	p, _ := BuiltinPrices()
	set.Cost = CostSettings{GPUHourUSD: 3, KWhUSD: 0.1, Prices: p}
	f := cleanKneeSweep(t)
	imp := newFakeSweep(t)
	imp.level(1, 1, constTTFT(0.1), 0.02)
	impRun := imp.write()
	impRun.Requests, impRun.Tokens, impRun.Levels = nil, nil, nil
	impRun.LevelStat = []rundir.LevelStatsRow{{Concurrency: 1, RequestsOK: 2, OutputTokPerS: 50, TTFTP50S: 0.1, TTFTP99S: 0.2, TPOTP50S: 0.02, TPOTP99S: 0.03}}
	rep, err := Analyze([]*Run{probeRun(t), f.write(), impRun}, set)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(rep)
	if err != nil {
		t.Fatalf("analysis.json: %v", err)
	}
	for _, key := range []string{`"ttft_p99_over_p50"`, `"decode_roofline"`, `"operating"`, `"primary"`, `"usd_per_mtok_output"`, `"level_stats"`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("analysis.json lacks %s", key)
		}
	}
	if g := rep.Runs[2].Sweep.Goodput; g.Levels[0].Known || g.Levels[0].PerRequestKnown {
		t.Errorf("imported level cannot know p90 ITL or per-request goodput: %+v", g.Levels[0])
	}
}
