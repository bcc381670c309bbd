package slo_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/internal/runtest"
	"github.com/headroom-llm/headroom/rundir"
	"github.com/headroom-llm/headroom/slo"
)

// The sweep's search and the report judge a level the same way: on
// recorded runs (a real H200 and the test engine), each bound's value at
// each level, the share of requests meeting the SLO, and pass or fail of
// every sustained level are the same from slo.Judge over the run's rows
// and from analyze's goodput. The bounds sit at each level's own median,
// so some levels pass and some fail.
func TestJudgeAgreesWithAnalyze(t *testing.T) {
	dirs := []string{
		"../examples/runs/h200/sweep-kv768", "../examples/runs/h200/sweep-kv256", "../examples/runs/h200-1b/sweep-kv256",
		"../examples/runs/sweep-testengine", "../testdata/runs/testengine-sequences/seq4-a",
	}
	agree, levels, passed := 0, 0, 0
	for _, dir := range dirs {
		run, err := analyze.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		// Bounds in the middle of the run: the middle level's own values.
		probe, _ := slo.Parse("ttft_p99=1s,tpot_p50=1s,itl_p90=1s,e2e_p50=1s")
		reqs := levelRequests(t, dir)
		byLevel := judgeRun(t, dir, reqs, probe)
		mid := byLevel[len(byLevel)/2].Bounds
		spec := fmt.Sprintf("ttft_p99=%dus,tpot_p50=%dus,itl_p90=%dus,e2e_p50=%dus",
			int(mid[0].ValueS*1e6), int(mid[1].ValueS*1e6), int(mid[2].ValueS*1e6)+1, int(mid[3].ValueS*1e6))
		s, err := slo.Parse(spec)
		if err != nil {
			t.Fatal(err)
		}
		set := analyze.Default()
		if set.SLO, err = analyze.ParseSLO(spec); err != nil {
			t.Fatal(err)
		}
		rep, err := analyze.Analyze([]*analyze.Run{run}, set)
		if err != nil {
			t.Fatal(err)
		}
		sw := rep.Runs[0].Sweep
		judged := judgeRun(t, dir, reqs, s)
		for i, lg := range sw.Goodput.Levels {
			l := sw.Levels[i]
			v := judged[lg.LevelIndex]
			levels++
			for _, b := range v.Bounds {
				want, _ := latency(l, b.Metric).Quantile(b.Percentile)
				if b.ValueS != want {
					t.Errorf("%s level %d: %s at p%v is %v here, %v in analyze", filepath.Base(dir), lg.LevelIndex, b.Metric, b.Percentile, b.ValueS, want)
				}
			}
			meeting := 0
			for _, r := range reqs[lg.LevelIndex] {
				if s.Meets(r) {
					meeting++
				}
			}
			if got := float64(meeting) / float64(v.Requests); got != lg.RequestsMeetingFraction {
				t.Errorf("%s level %d: %.4f of requests meet the SLO here, %.4f in analyze", filepath.Base(dir), lg.LevelIndex, got, lg.RequestsMeetingFraction)
			}
			if l.Complete && l.ErrorFraction <= slo.DefaultMaxErrorFraction && v.Pass != lg.Pass {
				t.Errorf("%s level %d: pass %v here, %v in analyze", filepath.Base(dir), lg.LevelIndex, v.Pass, lg.Pass)
			} else if v.Pass == lg.Pass {
				agree++
			}
			if v.Pass {
				passed++
			}
		}
	}
	t.Logf("pass/fail agree at %d of %d levels of %d runs (%d pass)", agree, levels, len(dirs), passed)
	if passed == 0 || passed == levels {
		t.Errorf("%d of %d levels pass: the check needs both", passed, levels)
	}
}

func latency(l analyze.LevelStats, metric string) *analyze.Latency {
	return map[string]*analyze.Latency{"ttft": l.TTFT, "tpot": l.TPOT, "itl": l.ITL, "e2e": l.E2E}[metric]
}

// levelRequests reads a run's measured requests by level.
func levelRequests(t *testing.T, dir string) map[int][]slo.Request {
	t.Helper()
	reqs := runtest.Table[rundir.RequestRow](t, dir, rundir.TableRequests)
	toks := runtest.Table[rundir.TokenRow](t, dir, rundir.TableTokens)
	byID := map[string][]rundir.TokenRow{}
	for _, k := range toks {
		byID[k.RequestID] = append(byID[k.RequestID], k)
	}
	out := map[int][]slo.Request{}
	for i := range reqs {
		if r := &reqs[i]; !r.Warmup {
			out[int(r.LevelIndex)] = append(out[int(r.LevelIndex)], slo.RequestOf(r, byID[r.RequestID]))
		}
	}
	return out
}

func judgeRun(t *testing.T, dir string, byLevel map[int][]slo.Request, s *slo.SLO) map[int]slo.Verdict {
	levels := runtest.Table[rundir.LevelRow](t, dir, rundir.TableLevels)
	out := map[int]slo.Verdict{}
	for _, l := range levels {
		out[int(l.LevelIndex)] = s.Judge(slo.Level{Requests: byLevel[int(l.LevelIndex)], Complete: l.Complete}, slo.DefaultMaxErrorFraction)
	}
	return out
}
