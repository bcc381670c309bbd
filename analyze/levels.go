package analyze

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/headroom-llm/headroom/rundir"
	"github.com/headroom-llm/headroom/slo"
	"github.com/headroom-llm/headroom/stats"
)

// requestTiming is what the statistics need of one measured request.
type requestTiming struct {
	row         *rundir.RequestRow
	ok          bool
	ttftS, e2eS float64 // NaN when unknown
	tpotS       float64 // NaN when fewer than two tokens
	// slotWaitS is the open-loop wait from the intended send time to the
	// send (a free slot under the concurrency cap); 0 in a closed loop.
	slotWaitS    float64
	outputTokens int64
	promptTokens int64
	itlS         []float64 // gaps between consecutive text chunks
	recvNS       []int64   // chunk receive times
	chunkTokens  []int32
}

// tokenCounting tallies how output tokens were counted across a sweep, and
// how many requests lacked the server's prompt count.
type tokenCounting struct {
	TokenCounting
	promptTarget int
}

// levelStatsFromRequests computes per-level statistics from the requests,
// tokens and levels tables.
func levelStatsFromRequests(run *Run, set Settings) ([]LevelStats, map[int][]requestTiming, tokenCounting) {
	byLevel := map[int][]*rundir.RequestRow{}
	for i := range run.Requests {
		r := &run.Requests[i]
		byLevel[int(r.LevelIndex)] = append(byLevel[int(r.LevelIndex)], r)
	}
	tokens := map[string][]rundir.TokenRow{}
	for _, t := range run.Tokens {
		tokens[t.RequestID] = append(tokens[t.RequestID], t)
	}
	for _, ts := range tokens {
		sort.Slice(ts, func(i, j int) bool { return ts[i].Index < ts[j].Index })
	}
	levelRows := map[int]rundir.LevelRow{}
	for _, l := range run.Levels {
		levelRows[int(l.LevelIndex)] = l
	}
	idx := make([]int, 0, len(byLevel))
	for k := range byLevel {
		idx = append(idx, k)
	}
	for k := range levelRows {
		if _, ok := byLevel[k]; !ok {
			idx = append(idx, k)
		}
	}
	sort.Ints(idx)

	var counting tokenCounting
	timings := map[int][]requestTiming{}
	var out []LevelStats
	for _, li := range idx {
		reqs := byLevel[li]
		lr, hasRow := levelRows[li]
		ls := LevelStats{LevelIndex: li, ErrorsByClass: map[string]int{}}
		if hasRow {
			ls.Concurrency, ls.RateRPS = int(lr.Concurrency), lr.RateRPS
			ls.StartNS, ls.WarmupEndNS, ls.EndNS = lr.StartNS, lr.WarmupEndNS, lr.EndNS
			ls.Complete = lr.Complete
		} else if len(reqs) > 0 {
			ls.Concurrency = int(reqs[0].Concurrency)
			ls.Complete = true
			ls.Notes = append(ls.Notes, Note{Kind: NoteNoLevelsTable})
		}
		var ts []requestTiming
		for _, r := range reqs {
			if r.Warmup {
				ls.WarmupExcluded++
				continue
			}
			if r.Status == rundir.StatusCanceled {
				// Stopped by the load tool itself (Ctrl-C, the level's end, a
				// cancellation it was asked for): not the server's failure,
				// as the load generator's error limit counts it.
				ls.Canceled++
				continue
			}
			if closedIdleConn(r) {
				ls.NotSent++
				continue
			}
			ls.Requests++
			if r.Status != rundir.StatusOK {
				ls.Errors++
				ls.ErrorsByClass[r.Status]++
				ts = append(ts, requestTiming{row: r})
				continue
			}
			t := timeRequest(r, tokens[r.RequestID], &counting)
			ts = append(ts, t)
			ls.OK++
			ls.OutputTokens += t.outputTokens
			ls.PromptTokens += t.promptTokens
		}
		if len(ls.ErrorsByClass) == 0 {
			ls.ErrorsByClass = nil
		}
		if ls.Canceled > 0 {
			ls.Notes = append(ls.Notes, Note{Kind: NoteIncompleteRequests, Count: ls.Canceled})
		}
		if ls.NotSent > 0 {
			ls.Notes = append(ls.Notes, Note{Kind: NoteClosedIdle, Count: ls.NotSent})
		}
		if !hasRow && len(ts) > 0 {
			ls.StartNS, ls.WarmupEndNS, ls.EndNS = measuredSpan(ts)
		}
		if ls.EndNS > ls.WarmupEndNS {
			ls.WindowS = float64(ls.EndNS-ls.WarmupEndNS) / 1e9
		}
		fillLevel(&ls, ts, set)
		ls.PromptIntakeShare = promptIntakeShare(ts, reqs, ls.ITL)
		timings[li] = ts
		out = append(out, ls)
	}
	return out, timings, counting
}

// closedIdleConn reports a request that Go's HTTP client could not send:
// the server closed the kept-alive connection as the request went out
// (net/http's errServerClosedIdle, "http: server closed idle connection",
// returned only for a pooled connection). The server never saw it, and
// clients that pool connections send it again on a new connection: the
// OpenAI SDKs do, and so does the load generator since it counts such
// requests in client_samples.resent. Runs recorded before that hold it as
// a connection error.
func closedIdleConn(r *rundir.RequestRow) bool {
	return r.Status == rundir.StatusConnect && strings.HasSuffix(r.Error, "http: server closed idle connection")
}

// timeRequest derives the latencies of one successful request.
func timeRequest(r *rundir.RequestRow, toks []rundir.TokenRow, counting *tokenCounting) requestTiming {
	t := requestTiming{row: r, ok: true, ttftS: math.NaN(), tpotS: math.NaN()}
	counting.OK++
	t.e2eS = float64(r.EndNS-r.SendNS) / 1e9
	if r.IntendedSendNS > 0 && r.IntendedSendNS < r.SendNS {
		t.slotWaitS = float64(r.SendNS-r.IntendedSendNS) / 1e9
	}
	n := r.ClientChunks
	if r.ServerCompletionTokens != nil {
		counting.Server++
		n = *r.ServerCompletionTokens
		if n != r.ClientChunks {
			counting.Differ++
		}
	}
	t.outputTokens = n
	if r.ServerPromptTokens != nil {
		t.promptTokens = *r.ServerPromptTokens
	} else {
		t.promptTokens = r.PromptTokensTarget
		counting.promptTarget++
	}
	if r.FirstTokenNS != nil {
		first := *r.FirstTokenNS
		t.ttftS = float64(first-r.SendNS) / 1e9
		if n >= 2 {
			t.tpotS = float64(r.EndNS-first) / 1e9 / float64(n-1)
		}
	}
	for i, k := range toks {
		t.recvNS = append(t.recvNS, k.RecvNS)
		t.chunkTokens = append(t.chunkTokens, k.Tokens)
		if i > 0 {
			t.itlS = append(t.itlS, float64(k.RecvNS-toks[i-1].RecvNS)/1e9)
		}
	}
	return t
}

// fillFromIntended adds an open-loop level's latencies measured from the
// intended send times, and the wait between intended and actual send.
func fillFromIntended(ls *LevelStats, ts []requestTiming, ps []float64) {
	var ttft, e2e, wait []float64
	for _, t := range ts {
		r := t.row
		if !t.ok || r.IntendedSendNS == 0 || r.IntendedSendNS > r.SendNS {
			continue
		}
		wait = append(wait, float64(r.SendNS-r.IntendedSendNS)/1e9)
		e2e = append(e2e, float64(r.EndNS-r.IntendedSendNS)/1e9)
		if r.FirstTokenNS != nil {
			ttft = append(ttft, float64(*r.FirstTokenNS-r.IntendedSendNS)/1e9)
		}
	}
	ls.TTFTFromIntended = newLatency(ttft, ps)
	ls.E2EFromIntended = newLatency(e2e, ps)
	ls.SendWait = newLatency(wait, ps)
}

// promptIntakeShare is the share of the measured answers' time between
// tokens spent in gaps that another request's first token (warm-up
// requests' too) fell in: the gap (a, b] of an answer holds a prompt intake
// when a first token arrived in (a+tol, b+tol], tol a quarter of the
// level's median gap, since the tokens of one step reach the client a
// little apart. A step that takes in a prompt beside the running answers
// ends with that prompt's first token; a separate prompt step lies inside
// the gap. Nil without per-token times or with fewer than two requests.
func promptIntakeShare(ts []requestTiming, reqs []*rundir.RequestRow, itl *Latency) *float64 {
	if itl == nil || itl.P50S <= 0 {
		return nil
	}
	var firsts []int64
	for _, r := range reqs {
		if r.FirstTokenNS != nil {
			firsts = append(firsts, *r.FirstTokenNS)
		}
	}
	if len(firsts) < 2 {
		return nil
	}
	slices.Sort(firsts)
	tol := int64(itl.P50S * 1e9 / 4)
	var all, intake int64
	for _, t := range ts {
		if !t.ok || t.row.FirstTokenNS == nil {
			continue
		}
		own := *t.row.FirstTokenNS
		for i := 1; i < len(t.recvNS); i++ {
			a, b := t.recvNS[i-1], t.recvNS[i]
			all += b - a
			j, _ := slices.BinarySearch(firsts, a+tol+1)
			for ; j < len(firsts) && firsts[j] <= b+tol; j++ {
				if firsts[j] != own {
					intake += b - a
					break
				}
			}
		}
	}
	if all <= 0 {
		return nil
	}
	share := float64(intake) / float64(all)
	return &share
}

func measuredSpan(ts []requestTiming) (start, warmEnd, end int64) {
	start, end = math.MaxInt64, math.MinInt64
	for _, t := range ts {
		start = min(start, t.row.SendNS)
		end = max(end, t.row.EndNS)
	}
	return start, start, end
}

// fillLevel computes latencies, throughputs and intervals of one level.
func fillLevel(ls *LevelStats, ts []requestTiming, set Settings) {
	ps := set.reportedPercentiles()
	var lat slo.Latencies
	for _, t := range ts {
		if t.ok {
			lat.Add(t.ttftS, t.tpotS, t.e2eS, t.itlS)
		}
	}
	ls.TTFT = newLatency(lat.TTFT, ps)
	ls.TPOT = newLatency(lat.TPOT, ps)
	ls.E2E = newLatency(lat.E2E, ps)
	ls.ITL = newLatency(lat.ITL, ps)
	if ls.RateRPS > 0 {
		fillFromIntended(ls, ts, ps)
	}
	if ls.ITL == nil && ls.OK > 0 {
		ls.Missing = append(ls.Missing, LackITL)
	}
	if ls.Requests > 0 {
		ls.ErrorFraction = float64(ls.Errors) / float64(ls.Requests)
	}
	if ls.OK > 0 {
		ls.MeanOutputTokens = float64(ls.OutputTokens) / float64(ls.OK)
		ls.MeanPromptTokens = float64(ls.PromptTokens) / float64(ls.OK)
	}
	if ls.WindowS > 0 {
		ls.RequestsPerS = float64(ls.OK) / ls.WindowS
		ls.OutputTokPerS = float64(ls.OutputTokens) / ls.WindowS
		ls.TotalTokPerS = float64(ls.OutputTokens+ls.PromptTokens) / ls.WindowS
	} else if ls.OK > 0 {
		ls.Missing = append(ls.Missing, LackThroughput)
	}
	if ls.TTFT != nil && ls.TTFT.P50S > 0 {
		ls.TTFTP99OverP50 = ls.TTFT.P99S / ls.TTFT.P50S
	}

	b := stats.Bootstrap{Resamples: set.BootstrapResamples, Seed: set.BootstrapSeed, Confidence: set.Confidence}
	if iv, ok := b.Percentile(lat.TTFT, 50); ok {
		iv.Of = stats.OfRequests
		ls.Confidence.TTFTP50S = &iv
	}
	if iv, ok := b.Percentile(lat.TPOT, 50); ok {
		iv.Of = stats.OfRequests
		ls.Confidence.TPOTP50S = &iv
	}
	if iv, ok := b.Percentile(lat.E2E, 50); ok {
		iv.Of = stats.OfRequests
		ls.Confidence.E2EP50S = &iv
	}
	if iv, ok := throughputInterval(ls, ts, set, b); ok {
		ls.Confidence.OutputTokPerS = &iv
	}
}

// newLatency summarises xs at the reported percentiles; nil for no values.
func newLatency(xs []float64, ps []float64) *Latency {
	if len(xs) == 0 {
		return nil
	}
	s := stats.Sorted(xs)
	l := &Latency{N: len(s), MaxS: s[len(s)-1]}
	for _, p := range ps {
		l.add(p, stats.Percentile(s, p))
	}
	return l
}

// Quantile returns the p-th percentile of l, if the source has it.
func (l *Latency) Quantile(p float64) (float64, bool) {
	if l == nil {
		return 0, false
	}
	for _, q := range l.Percentiles {
		if q.Percentile == p {
			return q.ValueS, true
		}
	}
	return 0, false
}

func formatPct(p float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", p), "0"), ".")
}

// throughputInterval is the interval of a level's output throughput from
// one run: the measured window is cut into equal sub-windows, the output
// tokens received in each are counted (chunk receive times when the tokens
// table exists, else each request's tokens spread evenly between its first
// token and its end), and the mean rate over sub-windows is bootstrapped.
// The mean over equal sub-windows is the level's throughput.
func throughputInterval(ls *LevelStats, ts []requestTiming, set Settings, b stats.Bootstrap) (stats.Interval, bool) {
	k := set.ThroughputBlocks
	if ls.WindowS <= 0 || k < 2 || ls.OK == 0 {
		return stats.Interval{}, false
	}
	blockNS := float64(ls.EndNS-ls.WarmupEndNS) / float64(k)
	tokens := make([]float64, k)
	block := func(ns int64) int {
		return min(max(int(float64(ns-ls.WarmupEndNS)/blockNS), 0), k-1)
	}
	for _, t := range ts {
		if !t.ok || t.outputTokens == 0 {
			continue
		}
		var chunkSum int64
		for _, c := range t.chunkTokens {
			chunkSum += int64(c)
		}
		switch {
		case len(t.recvNS) > 0 && chunkSum > 0:
			scale := float64(t.outputTokens) / float64(chunkSum)
			for i, ns := range t.recvNS {
				tokens[block(ns)] += float64(t.chunkTokens[i]) * scale
			}
		case t.row.FirstTokenNS != nil:
			spreadEvenly(tokens, float64(t.outputTokens), *t.row.FirstTokenNS, t.row.EndNS, ls.WarmupEndNS, blockNS)
		default:
			tokens[block(t.row.EndNS)] += float64(t.outputTokens)
		}
	}
	rates := make([]float64, k)
	for i := range tokens {
		rates[i] = tokens[i] / (blockNS / 1e9)
	}
	iv, ok := b.Mean(rates)
	iv.Of = stats.OfSubWindows
	return iv, ok
}

// spreadEvenly adds total tokens over [from, to] into blocks of blockNS
// starting at origin, in proportion to the overlap.
func spreadEvenly(blocks []float64, total float64, from, to, origin int64, blockNS float64) {
	k := len(blocks)
	if to <= from {
		i := min(max(int(float64(from-origin)/blockNS), 0), k-1)
		blocks[i] += total
		return
	}
	span := float64(to - from)
	for i := range blocks {
		bs := float64(origin) + float64(i)*blockNS
		be := bs + blockNS
		if i == 0 {
			bs = math.Inf(-1)
		}
		if i == k-1 {
			be = math.Inf(1)
		}
		ov := math.Min(be, float64(to)) - math.Max(bs, float64(from))
		if ov > 0 {
			blocks[i] += total * ov / span
		}
	}
}

// levelStatsFromImport maps imported per-level statistics (no per-request
// data) into the same model, marking what the source does not have.
func levelStatsFromImport(rows []rundir.LevelStatsRow, set Settings) []LevelStats {
	ps := set.reportedPercentiles()
	rows = slices.Clone(rows)
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Concurrency != rows[j].Concurrency {
			return rows[i].Concurrency < rows[j].Concurrency
		}
		return rows[i].RateRPS < rows[j].RateRPS
	})
	var out []LevelStats
	for i, r := range rows {
		ls := LevelStats{
			LevelIndex: i, Concurrency: int(r.Concurrency), RateRPS: r.RateRPS, Complete: true,
			Requests: int(r.RequestsOK + r.Errors), OK: int(r.RequestsOK), Errors: int(r.Errors), Canceled: int(r.Incomplete),
			WindowS: r.WindowS, RequestsPerS: r.RequestsPerS,
			OutputTokPerS: r.OutputTokPerS, TotalTokPerS: r.TotalTokPerS,
			MeanOutputTokens: r.MeanOutputTokens, MeanPromptTokens: r.MeanPromptTokens,
		}
		if ls.Requests > 0 {
			ls.ErrorFraction = float64(ls.Errors) / float64(ls.Requests)
		}
		n := int(r.RequestsOK)
		ls.TTFT = importedLatency(n, ps, map[float64]float64{50: r.TTFTP50S, 90: r.TTFTP90S, 99: r.TTFTP99S})
		ls.TPOT = importedLatency(n, ps, map[float64]float64{50: r.TPOTP50S, 90: r.TPOTP90S, 99: r.TPOTP99S})
		ls.ITL = importedLatency(n, ps, map[float64]float64{50: r.ITLP50S, 90: r.ITLP90S, 99: r.ITLP99S})
		ls.E2E = importedLatency(n, ps, map[float64]float64{50: r.E2EP50S, 90: r.E2EP90S, 99: r.E2EP99S})
		if ls.TTFT != nil && ls.TTFT.P50S > 0 && ls.TTFT.P99S > 0 {
			ls.TTFTP99OverP50 = ls.TTFT.P99S / ls.TTFT.P50S
		}
		ls.Missing = []string{LackIntervals, LackErrorClasses, LackPerRequestGoods}
		if ls.ITL == nil {
			ls.Missing = append(ls.Missing, LackITL)
		}
		if r.RequestsPerS == 0 || r.TotalTokPerS == 0 {
			ls.Missing = append(ls.Missing, LackRequestRate)
		}
		if r.WindowS == 0 {
			ls.Missing = append(ls.Missing, LackWindow)
		}
		if r.Incomplete > 0 {
			ls.Notes = append(ls.Notes, Note{Kind: NoteIncompleteRequests, Count: int(r.Incomplete)})
		}
		if r.PercentileMethod != "" && r.PercentileMethod != stats.PercentileMethod {
			ls.Notes = append(ls.Notes, Note{Kind: NoteSourcePercentile, Text: r.PercentileMethod})
		}
		out = append(out, ls)
	}
	return out
}

// importedLatency builds a Latency from the percentiles a source recorded
// (0 = absent).
func importedLatency(n int, ps []float64, have map[float64]float64) *Latency {
	l := &Latency{N: n}
	any := false
	for _, p := range ps {
		v, ok := have[p]
		if !ok || v <= 0 {
			l.Missing = append(l.Missing, "p"+formatPct(p))
			continue
		}
		any = true
		l.add(p, v)
	}
	if !any {
		return nil
	}
	l.Missing = append(l.Missing, "max")
	return l
}

// add records percentile p of the latency, marking it unreliable when N is
// too small for it, and fills the P50S/P90S/P99S shortcut it has.
func (l *Latency) add(p, v float64) {
	l.Percentiles = append(l.Percentiles, Quantile{Percentile: p, ValueS: v, Reliable: l.N >= stats.MinSamples(p)})
	switch p {
	case 50:
		l.P50S = v
	case 90:
		l.P90S = v
	case 99:
		l.P99S = v
	}
}

// samplesOf collects each level's per-request TPOT and TTFT (from the
// intended send time: TTFT plus the wait for a free slot) for the interval
// decisions.
func samplesOf(timings map[int][]requestTiming) map[int]levelSamples {
	out := map[int]levelSamples{}
	for li, ts := range timings {
		var s levelSamples
		for _, t := range ts {
			if !t.ok {
				continue
			}
			if !math.IsNaN(t.tpotS) {
				s.tpot = append(s.tpot, t.tpotS)
			}
			if !math.IsNaN(t.ttftS) {
				s.ttft = append(s.ttft, t.ttftS+t.slotWaitS)
			}
		}
		out[li] = s
	}
	return out
}
