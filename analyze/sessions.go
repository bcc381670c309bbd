package analyze

import (
	"maps"
	"math"
	"slices"

	"github.com/headroom-llm/headroom/stats"
)

// SessionsAnalysis is a sweep of multi-turn sessions seen turn by turn:
// TTFT by turn number, the first turn against later ones (which carry
// their history), and the prefix reuse the server reported.
type SessionsAnalysis struct {
	// Source is "dataset" or "generated" (the manifest's).
	Source string `json:"source,omitempty"`
	// ThinkMeanS is the mean think time asked; 0 when none.
	ThinkMeanS float64        `json:"think_mean_s"`
	Levels     []SessionLevel `json:"levels"`
	// Reuse is what the server said about reusing the history over the
	// sweep's later turns: ReuseSeen, ReuseNotSeen or ReuseUnknown.
	Reuse string `json:"reuse"`
	// ReuseSource names where that came from: ReusePerRequest (usage's
	// cached_tokens) or the prefix-cache metric's name.
	ReuseSource string `json:"reuse_source,omitempty"`
}

// Prefix reuse as the server reported it.
const (
	ReuseSeen    = "seen"     // the server reported most of the history as cached
	ReuseNotSeen = "not_seen" // it reports its cache, and the history was not found there
	ReuseUnknown = "unknown"  // it reports nothing about a prefix cache
	// ReusePerRequest: usage.prompt_tokens_details.cached_tokens.
	ReusePerRequest = "usage.prompt_tokens_details.cached_tokens"
)

// reuseSeenFraction is the share of the later turns' history the server
// must report as cached for ReuseSeen: most of it. Below it the history
// was evicted or not cached; a server reports either nearly all
// (the cache kept the conversation) or a fraction of the first block.
const reuseSeenFraction = 0.5

// How later turns' median TTFT compares with first turns'.
const (
	TurnsSlower = "slower"
	TurnsFaster = "faster"
	TurnsAlike  = "alike"
)

// maxTurnRows is the number of turns shown one by one; later turns are
// one row (TurnStats.AndLater).
const maxTurnRows = 8

// SessionLevel is one level of sessions.
type SessionLevel struct {
	LevelIndex  int     `json:"level_index"`
	Concurrency int     `json:"concurrency"`
	Load        LoadKey `json:"load"`
	// Sessions is the measured sessions with a request in the level;
	// TurnsPerSession the mean of their requests.
	Sessions        int         `json:"sessions"`
	TurnsPerSession float64     `json:"turns_per_session"`
	Turns           []TurnStats `json:"turns"`
	// FirstTTFT is the TTFT of first turns; LaterTTFT of every later turn.
	FirstTTFT *Latency `json:"first_ttft,omitempty"`
	LaterTTFT *Latency `json:"later_ttft,omitempty"`
	// LaterOverFirstP50 is LaterTTFT's median over FirstTTFT's; 0 when
	// either is missing. The medians' bootstrap intervals are FirstP50 and
	// LaterP50, and LaterVsFirst compares them: TurnsSlower when later
	// turns' interval lies above the first turns', TurnsFaster below,
	// TurnsAlike when they overlap, "" when an interval is missing.
	LaterOverFirstP50 float64         `json:"later_over_first_p50,omitempty"`
	FirstP50          *stats.Interval `json:"first_ttft_p50_s,omitempty"`
	LaterP50          *stats.Interval `json:"later_ttft_p50_s,omitempty"`
	LaterVsFirst      string          `json:"later_vs_first,omitempty"`
	// HistoryFraction is the share of the later turns' prompt tokens that
	// is history (the previous prompt and answer): what a prefix cache can
	// reuse at best (vLLM's multi-turn benchmark's approx_cached_percent).
	HistoryFraction float64 `json:"history_fraction"`
	// CachedOfHistory is the later turns' cached tokens over their history
	// tokens, as the server reported per request; nil when it did not.
	CachedOfHistory *float64 `json:"cached_of_history,omitempty"`
	// FirstCachedFraction is the first turns' cached share of their
	// prompts (reuse across sessions, a shared prefix); nil unknown.
	FirstCachedFraction *float64 `json:"first_cached_fraction,omitempty"`
	// PrefixHitFraction is the server's prefix-cache counters over the
	// level (hits over queries, every turn); nil when it has none.
	PrefixHitFraction *float64 `json:"prefix_hit_fraction,omitempty"`
	PrefixSource      string   `json:"prefix_source,omitempty"`
	// ThinkMeanS is the mean think time drawn before the level's later
	// turns.
	ThinkMeanS float64 `json:"think_mean_s"`
}

// TurnStats is one turn number of a level's sessions.
type TurnStats struct {
	Turn int `json:"turn"`
	// AndLater: this row is turn Turn and every later one.
	AndLater bool     `json:"and_later,omitempty"`
	Requests int      `json:"requests"`
	TTFT     *Latency `json:"ttft,omitempty"`
	// MeanPromptTokens is the mean prompt length of the turn's requests.
	MeanPromptTokens float64 `json:"mean_prompt_tokens"`
	// CachedFraction is the cached share of the turn's prompt tokens, as
	// the server reported per request; nil when it did not.
	CachedFraction *float64 `json:"cached_fraction,omitempty"`
}

// sessionTurn is one measured, successful request of a session.
type sessionTurn struct {
	t       requestTiming
	turn    int
	history int64 // the same session's previous prompt and answer; 0 for a first turn or when unknown
}

// analyzeSessions is the per-turn view of a sweep whose requests carry
// session and turn; nil for any other sweep.
func analyzeSessions(run *Run, levels []LevelStats, timings map[int][]requestTiming, set Settings) *SessionsAnalysis {
	if len(timings) == 0 {
		return nil
	}
	var out SessionsAnalysis
	if w := run.Manifest.Workload; w != nil && w.Sessions != nil {
		out.Source, out.ThinkMeanS = w.Sessions.Source, w.Sessions.ThinkMeanS
	}
	ps := set.reportedPercentiles()
	var cached, history, hits, queries float64
	perRequest, counters := false, ""
	for _, ls := range levels {
		turns := sessionTurns(timings[ls.LevelIndex])
		if len(turns) == 0 {
			continue
		}
		sl := sessionLevel(ls, turns, ps, set)
		for _, st := range turns {
			if st.turn > 1 && st.t.row.ServerCachedTokens != nil && st.history > 0 {
				perRequest = true
				cached += float64(*st.t.row.ServerCachedTokens)
				history += float64(st.history)
			}
		}
		if ls.Server.PrefixKnown {
			counters = ls.Server.PrefixSource
			hits, queries = hits+ls.Server.PrefixHitTokens, queries+ls.Server.PrefixQueryTokens
		}
		out.Levels = append(out.Levels, sl)
	}
	if len(out.Levels) == 0 {
		return nil
	}
	switch {
	case perRequest:
		out.Reuse, out.ReuseSource = reuseOf(cached/history), ReusePerRequest
	case counters != "" && queries > 0:
		// The counters mix first turns in: against the history's share of
		// every prompt.
		var hist, prompt float64
		for _, l := range out.Levels {
			for _, t := range l.Turns {
				prompt += t.MeanPromptTokens * float64(t.Requests)
			}
			hist += l.HistoryFraction * laterPromptTokens(l)
		}
		out.Reuse, out.ReuseSource = ReuseNotSeen, counters
		if hist > 0 && prompt > 0 {
			out.Reuse = reuseOf((hits / queries) / (hist / prompt))
		}
	default:
		out.Reuse = ReuseUnknown
	}
	return &out
}

func reuseOf(fractionOfHistory float64) string {
	if fractionOfHistory >= reuseSeenFraction {
		return ReuseSeen
	}
	return ReuseNotSeen
}

// laterPromptTokens is the prompt tokens of a level's later turns.
func laterPromptTokens(l SessionLevel) float64 {
	var n float64
	for _, t := range l.Turns {
		if t.Turn > 1 {
			n += t.MeanPromptTokens * float64(t.Requests)
		}
	}
	return n
}

// sessionTurns are a level's measured successful requests that belong to
// sessions, each with its history (the previous turn's prompt and answer
// in the same session, when that turn succeeded).
func sessionTurns(ts []requestTiming) []sessionTurn {
	type key struct {
		session string
		turn    int32
	}
	byTurn := map[key]requestTiming{}
	for _, t := range ts {
		if t.ok && t.row.SessionID != nil && t.row.Turn != nil {
			byTurn[key{*t.row.SessionID, *t.row.Turn}] = t
		}
	}
	var out []sessionTurn
	for _, t := range ts {
		r := t.row
		if !t.ok || r.SessionID == nil || r.Turn == nil {
			continue
		}
		st := sessionTurn{t: t, turn: int(*r.Turn)}
		if prev, ok := byTurn[key{*r.SessionID, *r.Turn - 1}]; ok {
			st.history = prev.promptTokens + prev.outputTokens
		}
		out = append(out, st)
	}
	return out
}

func sessionLevel(ls LevelStats, turns []sessionTurn, ps []float64, set Settings) SessionLevel {
	sl := SessionLevel{LevelIndex: ls.LevelIndex, Concurrency: ls.Concurrency, Load: ls.Load}
	sessions := map[string]bool{}
	type acc struct {
		ttft                    []float64
		n                       int
		prompt, cached, cachedN float64
		cachedKnown             bool
	}
	rows := map[int]*acc{}
	var first, later []float64
	var laterPrompt, laterHistory, laterCached, laterCachedHistory, firstPrompt, firstCached float64
	var firstCachedKnown, laterCachedKnown bool
	var think []float64
	for _, st := range turns {
		r := st.t.row
		sessions[*r.SessionID] = true
		k := min(st.turn, maxTurnRows+1)
		a := rows[k]
		if a == nil {
			a = &acc{}
			rows[k] = a
		}
		a.n++
		a.prompt += float64(st.t.promptTokens)
		if r.ServerCachedTokens != nil {
			a.cachedKnown = true
			a.cached += float64(*r.ServerCachedTokens)
			a.cachedN += float64(st.t.promptTokens)
		}
		if !math.IsNaN(st.t.ttftS) {
			a.ttft = append(a.ttft, st.t.ttftS)
			if st.turn == 1 {
				first = append(first, st.t.ttftS)
			} else {
				later = append(later, st.t.ttftS)
			}
		}
		if st.turn == 1 {
			if r.ServerCachedTokens != nil {
				firstCachedKnown = true
				firstPrompt += float64(st.t.promptTokens)
				firstCached += float64(*r.ServerCachedTokens)
			}
			continue
		}
		if r.ThinkNS != nil {
			think = append(think, float64(*r.ThinkNS)/1e9)
		}
		if st.history > 0 {
			laterPrompt += float64(st.t.promptTokens)
			laterHistory += float64(min(st.history, st.t.promptTokens))
			if r.ServerCachedTokens != nil {
				laterCachedKnown = true
				laterCached += float64(*r.ServerCachedTokens)
				laterCachedHistory += float64(st.history)
			}
		}
	}
	sl.Sessions = len(sessions)
	sl.TurnsPerSession = float64(len(turns)) / float64(len(sessions))
	for _, k := range slices.Sorted(maps.Keys(rows)) {
		a := rows[k]
		ts := TurnStats{Turn: k, AndLater: k > maxTurnRows, Requests: a.n, TTFT: newLatency(a.ttft, ps), MeanPromptTokens: a.prompt / float64(a.n)}
		if a.cachedKnown && a.cachedN > 0 {
			f := a.cached / a.cachedN
			ts.CachedFraction = &f
		}
		sl.Turns = append(sl.Turns, ts)
	}
	sl.FirstTTFT, sl.LaterTTFT = newLatency(first, ps), newLatency(later, ps)
	if sl.FirstTTFT != nil && sl.LaterTTFT != nil && sl.FirstTTFT.P50S > 0 {
		sl.LaterOverFirstP50 = sl.LaterTTFT.P50S / sl.FirstTTFT.P50S
	}
	b := stats.Bootstrap{Resamples: set.BootstrapResamples, Seed: set.BootstrapSeed, Confidence: set.Confidence}
	if iv, ok := b.Percentile(first, 50); ok {
		iv.Of = stats.OfRequests
		sl.FirstP50 = &iv
	}
	if iv, ok := b.Percentile(later, 50); ok {
		iv.Of = stats.OfRequests
		sl.LaterP50 = &iv
	}
	if f, l := sl.FirstP50, sl.LaterP50; f != nil && l != nil {
		switch {
		case l.Low > f.High:
			sl.LaterVsFirst = TurnsSlower
		case l.High < f.Low:
			sl.LaterVsFirst = TurnsFaster
		default:
			sl.LaterVsFirst = TurnsAlike
		}
	}
	if laterPrompt > 0 {
		sl.HistoryFraction = laterHistory / laterPrompt
	}
	if laterCachedKnown && laterCachedHistory > 0 {
		f := min(laterCached/laterCachedHistory, 1)
		sl.CachedOfHistory = &f
	}
	if firstCachedKnown && firstPrompt > 0 {
		f := firstCached / firstPrompt
		sl.FirstCachedFraction = &f
	}
	if ls.Server.PrefixKnown && ls.Server.PrefixQueryTokens > 0 {
		f := ls.Server.PrefixHitTokens / ls.Server.PrefixQueryTokens
		sl.PrefixHitFraction, sl.PrefixSource = &f, ls.Server.PrefixSource
	}
	if len(think) > 0 {
		var s float64
		for _, x := range think {
			s += x
		}
		sl.ThinkMeanS = s / float64(len(think))
	}
	return sl
}
