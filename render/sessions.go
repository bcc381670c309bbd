package render

import (
	"fmt"

	"github.com/headroom-llm/headroom/analyze"
)

// sessionsTable shows a sweep of multi-turn sessions turn by turn: at each
// level, every turn's requests, TTFT, prompt length and the share of it
// the server reported as cached.
func sessionsTable(sw *analyze.SweepAnalysis) (table, bool) {
	ss := sw.Sessions
	if ss == nil || len(ss.Levels) == 0 {
		return table{}, false
	}
	t := table{
		Caption: "Multi-turn sessions, turn by turn: each turn carries the whole conversation before it (the earlier user turns and the server's own answers), " +
			"so its prompt grows; TTFT is from the turn's send. Cached is the share of the turn's prompt the server reported as taken from its prefix cache.",
		Head:  []string{"Load", "Turn", "Requests", "TTFT p50", "TTFT p99", "Mean prompt tokens", "Cached"},
		Right: []bool{false, true, true, true, true, true, true},
	}
	for _, l := range ss.Levels {
		for j, tu := range l.Turns {
			turn := integer(tu.Turn)
			if tu.AndLater {
				turn += " and later"
			}
			p50, p99 := "–", "–"
			if tu.TTFT != nil {
				p50, p99 = durationText(tu.TTFT.P50S), quantileText(tu.TTFT, 99)
			}
			cached := "not reported"
			if tu.CachedFraction != nil {
				cached = percent(*tu.CachedFraction)
			}
			load := ""
			if j == 0 {
				load = fmt.Sprintf("%s (%d sessions)", loadName(l.Load), l.Sessions)
			}
			t.Rows = append(t.Rows, []string{load, turn, integer(tu.Requests), p50, p99, sig(tu.MeanPromptTokens), cached})
		}
	}
	return t, true
}

// quantileText is a latency's p-th percentile, marked when it rests on too
// few requests to be a tail estimate.
func quantileText(l *analyze.Latency, p float64) string {
	for _, q := range l.Percentiles {
		if q.Percentile == p {
			if !q.Reliable {
				return durationText(q.ValueS) + " (max)"
			}
			return durationText(q.ValueS)
		}
	}
	return "–"
}

// sessionSentences say, for a sweep of sessions, how later turns' TTFT
// compares with first turns' and what the server said about reusing the
// history.
func sessionSentences(sw *analyze.SweepAnalysis) []string {
	ss := sw.Sessions
	if ss == nil || len(ss.Levels) == 0 {
		return nil
	}
	var out []string
	for _, l := range ss.Levels {
		if l.FirstTTFT == nil || l.LaterTTFT == nil {
			continue
		}
		s := fmt.Sprintf("At %s, later turns (%d requests, their prompts %s history) had a median TTFT of %s against %s for first turns (%d)",
			loadName(l.Load), l.LaterTTFT.N, percent(l.HistoryFraction), durationText(l.LaterTTFT.P50S), durationText(l.FirstTTFT.P50S), l.FirstTTFT.N)
		switch l.LaterVsFirst {
		case analyze.TurnsSlower:
			s += fmt.Sprintf(": %s× the first turns', slower beyond the noise of either median", sig(l.LaterOverFirstP50))
		case analyze.TurnsFaster:
			s += fmt.Sprintf(": %s× the first turns', faster beyond the noise of either median", sig(l.LaterOverFirstP50))
		case analyze.TurnsAlike:
			s += ", within the noise of either median"
		}
		out = append(out, s+".")
	}
	switch ss.Reuse {
	case analyze.ReuseSeen:
		out = append(out, "The server reported most of the later turns' history as taken from its prefix cache ("+reuseWhere(ss)+"): the conversation's earlier turns were not computed again.")
	case analyze.ReuseNotSeen:
		out = append(out, "The server reports its prefix cache ("+reuseWhere(ss)+"), and it found little of the later turns' history there: each turn's history was computed again (no prefix caching, or the cache did not keep the conversations through their think times).")
	case analyze.ReuseUnknown:
		out = append(out, "The server reported nothing about a prefix cache (no cached_tokens in its usage, no prefix-cache metric): whether it reused the history is not known from this run.")
	}
	return out
}

func reuseWhere(ss *analyze.SessionsAnalysis) string {
	if ss.ReuseSource == analyze.ReusePerRequest {
		return "cached_tokens in each answer's usage"
	}
	return "metric " + ss.ReuseSource
}
