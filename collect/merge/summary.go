package merge

import (
	"fmt"
	"io"
	"math"
	"sort"

	"github.com/headroom-llm/headroom/rundir"
	"github.com/headroom-llm/headroom/stats"
)

// LevelSummary is one level of a run in a few numbers, each percentile
// exact over every measured request of the level (stats' nearest rank),
// never a combination of the shards' own summaries.
type LevelSummary struct {
	LevelIndex  int
	Concurrency int64
	Requests    int // measured (warm-up excluded), any status
	OK          int
	TTFTP50S    float64 // from the send; NaN when no request had a first token
	TTFTP99S    float64
	TPOTP50S    float64 // (end − first token) / (tokens − 1), the server's count when it gave one
}

// Summarize is the per-level summary of a run's requests.
func Summarize(requests []rundir.RequestRow) []LevelSummary {
	by := map[int32]*LevelSummary{}
	ttft, tpot := map[int32][]float64{}, map[int32][]float64{}
	for _, r := range requests {
		if r.Warmup {
			continue
		}
		ls := by[r.LevelIndex]
		if ls == nil {
			ls = &LevelSummary{LevelIndex: int(r.LevelIndex), Concurrency: r.Concurrency}
			by[r.LevelIndex] = ls
		}
		ls.Requests++
		if r.Status != rundir.StatusOK || r.FirstTokenNS == nil {
			continue
		}
		ls.OK++
		ttft[r.LevelIndex] = append(ttft[r.LevelIndex], float64(*r.FirstTokenNS-r.SendNS)/1e9)
		n := r.ClientChunks
		if r.ServerCompletionTokens != nil {
			n = *r.ServerCompletionTokens
		}
		if n > 1 {
			tpot[r.LevelIndex] = append(tpot[r.LevelIndex], float64(r.EndNS-*r.FirstTokenNS)/1e9/float64(n-1))
		}
	}
	var out []LevelSummary
	for li, ls := range by {
		p := stats.Of(ttft[li], 50, 99)
		ls.TTFTP50S, ls.TTFTP99S = p[0], p[1]
		ls.TPOTP50S = stats.Of(tpot[li], 50)[0]
		out = append(out, *ls)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LevelIndex < out[j].LevelIndex })
	return out
}

// WriteSummary prints the merged run's levels and its shards, one line
// each.
func WriteSummary(w io.Writer, run *rundir.Run, levels []LevelSummary) {
	mr := run.Manifest.Merged
	partial := map[int]bool{}
	if mr != nil {
		partial = map[int]bool{}
		for _, l := range mr.PartialLevels {
			partial[l] = true
		}
		for _, s := range mr.Shards {
			state := "complete"
			if !s.Complete {
				state = "incomplete"
			}
			flag := ""
			if s.ClockFlagged {
				flag = "  (clock above the bound)"
			}
			fmt.Fprintf(w, "shard %d  %-10s %6d requests  clock %+.1f ms ± %.1f ms%s  %s\n", s.Index, state, s.Requests, s.OffsetS*1e3, s.UncertaintyS*1e3, flag, s.Dir)
		}
		for _, i := range mr.Missing {
			fmt.Fprintf(w, "shard %d  missing\n", i)
		}
	}
	ms := func(v float64) string {
		if math.IsNaN(v) {
			return "-"
		}
		return fmt.Sprintf("%.1f ms", v*1e3)
	}
	for _, l := range levels {
		what := fmt.Sprintf("c=%d", l.Concurrency)
		p := ""
		if partial[l.LevelIndex] {
			p = "  PARTIAL"
		}
		fmt.Fprintf(w, "level %d %-10s %6d requests (%d ok)  TTFT p50 %s p99 %s  TPOT p50 %s%s\n",
			l.LevelIndex, what, l.Requests, l.OK, ms(l.TTFTP50S), ms(l.TTFTP99S), ms(l.TPOTP50S), p)
	}
}
