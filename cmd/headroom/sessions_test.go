package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/internal/testengine"
)

// Multi-turn sessions from the command line to the report, against three
// test engines whose prefix reuse is known by construction:
//
//   - cache: the prefix cache on and a sequence for every session, so each
//     later turn finds its whole history: reuse seen;
//   - evicting: the prefix cache on but one sequence for two sessions in
//     progress, so the other session's turn runs between two turns of one
//     and evicts its history: reuse not seen;
//   - none: no prefix cache, nothing reported: reuse unknown.
//
// In each, the report shows every turn, the first turns against the
// later ones, and says what the server reported.
func TestSessionsReportPrefixReuse(t *testing.T) {
	cases := []struct {
		name string
		opts testengine.Options
		want string
	}{
		{"cache", testengine.Options{Sequences: 8, CtxPerSeq: 1024, PrefixCache: true}, analyze.ReuseSeen},
		{"evicting", testengine.Options{Sequences: 1, CtxPerSeq: 1024, PrefixCache: true}, analyze.ReuseNotSeen},
		{"none", testengine.Options{Sequences: 8, CtxPerSeq: 1024}, analyze.ReuseUnknown},
	}
	var opts []testengine.Options
	for _, c := range cases {
		opts = append(opts, c.opts)
	}
	engines := testengine.StartAll(t, opts...)
	var confusion []string
	for i, c := range cases {
		e := engines[i]
		dir := filepath.Join(t.TempDir(), c.name)
		code, _, errs := headroom(t, "sweep", "--base-url", e.BaseURL, "--concurrency", "2", "--session-turns-mean", "3",
			"--session-turn-delay-mean", "30", "--conversation-num", "4", "--warmup", "0", "--prompt-tokens", "120",
			"--output-tokens", "8", "--no-gpu", "--metrics-interval", "100ms", "--timeout", "1m", "-o", dir)
		if code != 0 {
			t.Fatalf("%s: sweep exit %d: %s", c.name, code, errs)
		}
		run, err := analyze.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := analyze.Analyze([]*analyze.Run{run}, analyze.Default())
		if err != nil {
			t.Fatal(err)
		}
		ss := rep.Runs[0].Sweep.Sessions
		if ss == nil || len(ss.Levels) != 1 {
			t.Fatalf("%s: sessions analysis %+v", c.name, ss)
		}
		l := ss.Levels[0]
		confusion = append(confusion, fmt.Sprintf("%-8s want %-8s got %-8s (cached of history %v, history %.0f%% of later prompts)",
			c.name, c.want, ss.Reuse, ptrText(l.CachedOfHistory), 100*l.HistoryFraction))
		if ss.Reuse != c.want {
			t.Errorf("%s: reuse %q, want %q", c.name, ss.Reuse, c.want)
		}
		if l.Sessions != 4 || len(l.Turns) != 3 || l.FirstTTFT == nil || l.FirstTTFT.N != 4 || l.LaterTTFT == nil || l.LaterTTFT.N != 8 {
			t.Errorf("%s: %d sessions, %d turn rows, first %+v, later %+v", c.name, l.Sessions, len(l.Turns), l.FirstTTFT, l.LaterTTFT)
		}
		for k := 1; k < len(l.Turns); k++ {
			if l.Turns[k].MeanPromptTokens <= l.Turns[k-1].MeanPromptTokens+120 {
				t.Errorf("%s: turn %d's prompts (%.0f tokens) do not hold turn %d's (%.0f) and a new text", c.name,
					k+1, l.Turns[k].MeanPromptTokens, k, l.Turns[k-1].MeanPromptTokens)
			}
		}
		if code, _, errs := headroom(t, "report", dir, "--format", "md"); code != 0 {
			t.Fatalf("%s: report exit %d: %s", c.name, code, errs)
		}
		md, err := os.ReadFile(filepath.Join(dir, "report.md"))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Multi-turn sessions, turn by turn", "later turns", "prefix cache"} {
			if !strings.Contains(string(md), want) {
				t.Errorf("%s: the report does not say %q", c.name, want)
			}
		}
	}
	t.Logf("prefix reuse by construction:\n  %s", strings.Join(confusion, "\n  "))
}

func ptrText(f *float64) string {
	if f == nil {
		return "not reported"
	}
	return fmt.Sprintf("%.0f%%", 100**f)
}
