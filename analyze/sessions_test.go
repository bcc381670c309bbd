package analyze

import (
	"math"
	"strconv"
	"testing"

	"github.com/headroom-llm/headroom/rundir"
)

// sessionTimings are 10 sessions of 3 turns: each turn's prompt is the
// previous prompt, its 20-token answer and 100 new tokens; TTFT is 10 ms
// for first turns and ttftLater for later ones; cached(turn, history)
// gives the row's cached tokens (nil: not reported).
func sessionTimings(ttftLater float64, cached func(turn int, history int64) *int64) []requestTiming {
	var ts []requestTiming
	for s := range 10 {
		id := "0-s" + strconv.Itoa(s)
		prompt, history := int64(100), int64(0)
		for k := 1; k <= 3; k++ {
			turn, think := int32(k), int64(0)
			if k > 1 {
				think = 50e6
			}
			r := &rundir.RequestRow{RequestID: id + "-" + strconv.Itoa(k), Status: rundir.StatusOK, SessionID: &id, Turn: &turn, ThinkNS: &think,
				ServerCachedTokens: cached(k, history)}
			ttft := 0.010 + 0.0001*float64(s)
			if k > 1 {
				ttft = ttftLater + 0.0001*float64(s)
			}
			ts = append(ts, requestTiming{row: r, ok: true, ttftS: ttft, e2eS: 0.1, tpotS: math.NaN(), promptTokens: prompt, outputTokens: 20})
			history = prompt + 20
			prompt = history + 100
		}
	}
	return ts
}

func TestSessionsByConstruction(t *testing.T) {
	set := Default()
	level := []LevelStats{{LevelIndex: 0, Concurrency: 2, Load: LoadKeyOf(AxisConcurrency, 2, 0)}}
	run := &Run{Manifest: &rundir.Manifest{}}
	full := func(turn int, history int64) *int64 { v := max(history-1, 1); return &v }
	none := func(int, int64) *int64 { v := int64(1); return &v }
	unreported := func(int, int64) *int64 { return nil }

	cases := []struct {
		name      string
		later     float64
		cached    func(int, int64) *int64
		counters  *[2]float64 // hits, queries over the level
		reuse     string
		laterVs   string
		cachedOfH float64 // -1: nil
	}{
		{"history cached, later turns alike", 0.0102, full, nil, ReuseSeen, TurnsAlike, 0.99},
		{"nothing cached, later turns slow", 0.030, none, nil, ReuseNotSeen, TurnsSlower, 0.01},
		{"counters only, most hit", 0.012, unreported, &[2]float64{0.6 * 1260 * 10, 1260 * 10}, ReuseSeen, TurnsSlower, -1},
		{"counters only, none hit", 0.012, unreported, &[2]float64{10, 1260 * 10}, ReuseNotSeen, TurnsSlower, -1},
		{"nothing reported", 0.005, unreported, nil, ReuseUnknown, TurnsFaster, -1},
	}
	for _, c := range cases {
		lv := append([]LevelStats(nil), level...)
		if c.counters != nil {
			lv[0].Server.PrefixKnown, lv[0].Server.PrefixSource = true, "vllm:prefix_cache_hits_total"
			lv[0].Server.PrefixHitTokens, lv[0].Server.PrefixQueryTokens = c.counters[0], c.counters[1]
		}
		ss := analyzeSessions(run, lv, map[int][]requestTiming{0: sessionTimings(c.later, c.cached)}, set)
		if ss == nil || len(ss.Levels) != 1 {
			t.Fatalf("%s: %+v", c.name, ss)
		}
		l := ss.Levels[0]
		if ss.Reuse != c.reuse || l.LaterVsFirst != c.laterVs {
			t.Errorf("%s: reuse %q later-vs-first %q, want %q %q", c.name, ss.Reuse, l.LaterVsFirst, c.reuse, c.laterVs)
		}
		if l.Sessions != 10 || len(l.Turns) != 3 || l.Turns[2].MeanPromptTokens != 340 || l.FirstTTFT.N != 10 || l.LaterTTFT.N != 20 {
			t.Errorf("%s: %d sessions, turns %+v", c.name, l.Sessions, l.Turns)
		}
		// Later turns: (120+240) history of (220+340) prompt tokens.
		if want := 360.0 / 560; math.Abs(l.HistoryFraction-want) > 1e-9 {
			t.Errorf("%s: history fraction %v, want %v", c.name, l.HistoryFraction, want)
		}
		switch {
		case c.cachedOfH < 0 && l.CachedOfHistory != nil:
			t.Errorf("%s: cached of history %v from rows that report none", c.name, *l.CachedOfHistory)
		case c.cachedOfH >= 0 && (l.CachedOfHistory == nil || math.Abs(*l.CachedOfHistory-c.cachedOfH) > 0.01):
			t.Errorf("%s: cached of history %v, want %v", c.name, l.CachedOfHistory, c.cachedOfH)
		}
		if math.Abs(l.ThinkMeanS-0.05) > 1e-9 {
			t.Errorf("%s: think mean %v", c.name, l.ThinkMeanS)
		}
	}
	// A sweep of single requests has no sessions view.
	single := []requestTiming{{row: &rundir.RequestRow{Status: rundir.StatusOK}, ok: true, ttftS: 0.01}}
	if ss := analyzeSessions(run, level, map[int][]requestTiming{0: single}, set); ss != nil {
		t.Errorf("single requests: %+v", ss)
	}
}
