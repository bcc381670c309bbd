package importer

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// sweepSource is what one imported file contributes to a sweep run: levels
// with per-request records, or per-level statistics for formats that keep
// no requests, plus the context the file records. Times are absolute Unix
// nanoseconds; a format whose times are relative to an unknown origin
// anchors them before returning (and says so in notes).
type sweepSource struct {
	kind   Kind
	tool   string
	file   string
	sha256 string
	// start and end bound the measurement, when the file records them.
	start    time.Time
	end      time.Time
	levels   []sourceLevel
	engine   rundir.Engine
	workload rundir.Workload
	label    string
	tags     []string
	notes    []string
	warnings []string
	lacks    []string
	// config are the settings the file records that set its results apart
	// from other runs' (see groups.go).
	config []configItem
}

// sourceLevel is one load level of an imported sweep.
type sourceLevel struct {
	concurrency int64
	rateRPS     float64
	// requests holds per-request records; stats is set instead for
	// aggregate-only formats.
	requests []sourceRequest
	stats    *rundir.LevelStatsRow
	// origin names the file and the place in it, for messages.
	origin string
	// repeat is 1 + the tool's run number of a repeated measurement
	// (vllm bench sweep's run=N), 0 when the tool records none.
	repeat int
}

// sourceRequest is one request as an imported format records it.
type sourceRequest struct {
	id      string
	warmup  bool
	sendNS  int64
	firstNS *int64
	endNS   int64
	// chunkNS are the receive times of the chunks that carried text, when
	// the format records them (or the gaps between them).
	chunkNS []int64
	// promptTokens and outputTokens are the tool's counts (server usage or
	// its tokenizer); nil when it has none.
	promptTokens, outputTokens *int64
	promptTarget, outputTarget int64
	status                     string
	httpStatus                 int32
	err                        string
	finishReason               string
}

func ptr[T any](v T) *T { return &v }

// nsFromS converts seconds (float) to nanoseconds, rounded.
func nsFromS(s float64) int64 { return int64(math.Round(s * 1e9)) }

// epochNSFromS converts Unix seconds held in a float to nanoseconds. A
// float64 holds today's Unix seconds to about 0.2 µs, so the value is
// rounded to the microsecond (Python's time.time() resolution) rather than
// carrying float noise into nanoseconds.
func epochNSFromS(s float64) int64 { return int64(math.Round(s*1e6)) * 1000 }

// writeSweep merges the sources into one run directory: levels sorted by
// concurrency (then rate), each level's requests in send order, and the
// context of the first source; what differs between sources is noted.
func writeSweep(dir string, srcs []*sweepSource, opts Options) (*rundir.Run, error) {
	first := srcs[0]
	var levels []sourceLevel
	perRequest, perLevel := false, false
	for _, s := range srcs {
		for _, l := range s.levels {
			if l.stats != nil {
				perLevel = true
			} else {
				perRequest = true
			}
			levels = append(levels, l)
		}
	}
	if len(levels) == 0 {
		return nil, errors.New("no load level with data")
	}
	if perLevel && perRequest {
		return nil, errors.New("some files have per-request records and others only per-level statistics: import them as separate runs")
	}
	for i := range levels {
		l := &levels[i]
		slices.SortStableFunc(l.requests, func(a, b sourceRequest) int { return cmp.Compare(a.sendNS, b.sendNS) })
		if l.concurrency <= 0 && l.rateRPS <= 0 && len(l.requests) > 0 {
			l.concurrency = peakInFlight(l.requests)
			first.notes = append(first.notes, fmt.Sprintf("%s: the file records no concurrency; %d is the largest number of requests in flight at once in its data", l.origin, l.concurrency))
		}
	}
	slices.SortStableFunc(levels, func(a, b sourceLevel) int {
		return cmp.Or(cmp.Compare(a.concurrency, b.concurrency), cmp.Compare(a.rateRPS, b.rateRPS))
	})
	for i := 1; i < len(levels); i++ {
		a, b := levels[i-1], levels[i]
		if a.concurrency == b.concurrency && a.rateRPS == b.rateRPS {
			return nil, fmt.Errorf("%s and %s are both at %s: import repeated runs as separate runs (headroom compare groups them)", a.origin, b.origin, describeLoad(a))
		}
	}

	m, err := newImportManifest(srcs, opts, rundir.KindSweep)
	if err != nil {
		return nil, err
	}
	m.Engine = ptr(first.engine)
	w := first.workload
	w.Mode = "closed"
	w.Levels, w.RatesRPS = nil, nil
	for _, l := range levels {
		if l.rateRPS > 0 {
			w.Mode = "open"
			w.RatesRPS = append(w.RatesRPS, l.rateRPS)
		}
		w.Levels = append(w.Levels, int(l.concurrency))
	}
	m.Workload = &w
	for _, s := range srcs[1:] {
		if s.engine.Model != first.engine.Model {
			m.Warnings = append(m.Warnings, fmt.Sprintf("the files name different models (%q in %s, %q in %s)", first.engine.Model, first.file, s.engine.Model, s.file))
		}
	}
	if m.StartTime.IsZero() {
		return nil, errors.New("no start time")
	}
	run, err := rundir.Create(dir, m)
	if err != nil {
		return nil, err
	}
	if perLevel {
		rows := make([]rundir.LevelStatsRow, len(levels))
		for i, l := range levels {
			rows[i] = *l.stats
			rows[i].Concurrency, rows[i].RateRPS = l.concurrency, l.rateRPS
		}
		if err := rundir.WriteTable(dir, rundir.TableLevelStats, rows); err != nil {
			return nil, err
		}
	} else if err := writeRequestTables(dir, m.RunID, levels, w.Endpoint); err != nil {
		return nil, err
	}
	if err := run.Finish(nil); err != nil {
		return nil, err
	}
	// Finish stamps the import's own end; the run's end is the measurement's.
	run.Manifest.EndTime = measuredEnd(srcs, levels)
	return run, run.SaveManifest()
}

// measuredEnd is when the imported measurement ended: the last request's
// end, else the latest end a file records; zero when unknown.
func measuredEnd(srcs []*sweepSource, levels []sourceLevel) time.Time {
	var endNS int64
	for _, l := range levels {
		for _, r := range l.requests {
			endNS = max(endNS, r.endNS)
		}
	}
	if endNS > 0 {
		return time.Unix(0, endNS).UTC()
	}
	var end time.Time
	for _, s := range srcs {
		if s.end.After(end) {
			end = s.end
		}
	}
	return end.UTC()
}

func describeLoad(l sourceLevel) string {
	if l.rateRPS > 0 {
		return fmt.Sprintf("%g requests/s", l.rateRPS)
	}
	return fmt.Sprintf("concurrency %d", l.concurrency)
}

// writeRequestTables writes the levels, requests and tokens tables, one
// part per level for requests and tokens so memory stays bounded by a level.
func writeRequestTables(dir, runID string, levels []sourceLevel, endpoint string) error {
	levelRows := make([]rundir.LevelRow, 0, len(levels))
	for li, l := range levels {
		lr := rundir.LevelRow{LevelIndex: int32(li), Concurrency: l.concurrency, RateRPS: l.rateRPS, Complete: true}
		// The measured window runs from the first measured send to the last
		// measured end: requests a tool ran after its measurement (guidellm's
		// cool-down, requests cut off at its end) stay in the level, marked
		// warm-up, but do not stretch the window its rates are taken over.
		start, warmEnd, end, measEnd := int64(math.MaxInt64), int64(math.MaxInt64), int64(math.MinInt64), int64(math.MinInt64)
		reqs := make([]rundir.RequestRow, 0, len(l.requests))
		var toks []rundir.TokenRow
		for seq, r := range l.requests {
			// Unique across runs: the run's id, then the tool's own request
			// id where it kept one (aiperf's x_request_id), else level-seq.
			id := rundir.RequestID(runID, li, seq)
			if r.id != "" {
				id = runID + "-" + r.id
			}
			start = min(start, r.sendNS)
			end = max(end, r.endNS)
			if !r.warmup {
				warmEnd = min(warmEnd, r.sendNS)
				measEnd = max(measEnd, r.endNS)
				lr.Requests++
				if r.status != rundir.StatusOK {
					lr.Errors++
				}
			}
			row := rundir.RequestRow{
				RequestID: id, LevelIndex: int32(li), Concurrency: l.concurrency, Seq: int64(seq),
				Warmup: r.warmup, Endpoint: endpoint,
				IntendedSendNS: r.sendNS, SendNS: r.sendNS, FirstTokenNS: r.firstNS, EndNS: r.endNS,
				PromptTokensTarget: r.promptTarget, OutputTokensTarget: r.outputTarget,
				ClientChunks:       int64(len(r.chunkNS)),
				ServerPromptTokens: r.promptTokens, ServerCompletionTokens: r.outputTokens,
				FinishReason: r.finishReason, Status: r.status, HTTPStatus: r.httpStatus, Error: r.err,
			}
			reqs = append(reqs, row)
			for i, ns := range r.chunkNS {
				toks = append(toks, rundir.TokenRow{RequestID: id, Index: int32(i), RecvNS: ns, Tokens: 1})
			}
		}
		if len(reqs) == 0 {
			continue
		}
		if warmEnd == math.MaxInt64 {
			warmEnd, measEnd = end, end
		}
		lr.StartNS, lr.WarmupEndNS, lr.EndNS = start, warmEnd, measEnd
		levelRows = append(levelRows, lr)
		if err := rundir.WriteTable(dir, rundir.TableRequests, reqs); err != nil {
			return err
		}
		if len(toks) > 0 {
			if err := rundir.WriteTable(dir, rundir.TableTokens, toks); err != nil {
				return err
			}
		}
	}
	return rundir.WriteTable(dir, rundir.TableLevels, levelRows)
}

// peakInFlight is the largest number of requests open at one instant
// (intervals are half-open: a request ending as another starts is not
// counted twice).
func peakInFlight(reqs []sourceRequest) int64 {
	type ev struct {
		t int64
		d int
	}
	evs := make([]ev, 0, 2*len(reqs))
	for _, r := range reqs {
		if r.warmup {
			continue
		}
		evs = append(evs, ev{r.sendNS, +1}, ev{max(r.endNS, r.sendNS), -1})
	}
	slices.SortFunc(evs, func(a, b ev) int { return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.d, b.d)) })
	var cur, peak int
	for _, e := range evs {
		cur += e.d
		peak = max(peak, cur)
	}
	return int64(peak)
}

// chunkTimes turns a first-chunk time and the gaps between chunks (in
// seconds) into receive times, summing in float so rounding does not
// accumulate.
func chunkTimes(firstNS int64, gapsS []float64) []int64 {
	out := make([]int64, 0, len(gapsS)+1)
	out = append(out, firstNS)
	acc := 0.0
	for _, g := range gapsS {
		acc += g
		out = append(out, firstNS+nsFromS(acc))
	}
	return out
}

// classifyError maps a tool's error text (and HTTP status, if known) to a
// request status of the run format.
func classifyError(msg string, code int) (status string, httpStatus int32) {
	low := strings.ToLower(msg)
	switch {
	case strings.Contains(low, "cancel"):
		return rundir.StatusCanceled, int32(code)
	case strings.Contains(low, "timeout") || strings.Contains(low, "timed out"):
		return rundir.StatusTimeout, int32(code)
	case code >= 400:
		return rundir.StatusHTTPError, int32(code)
	case strings.Contains(low, "connect") || strings.Contains(low, "connection refused"):
		return rundir.StatusConnect, 0
	case strings.Contains(low, "never received a valid chunk") || strings.Contains(low, "no tokens"):
		return rundir.StatusNoTokens, 0
	}
	if c := httpStatusFromReason(strings.TrimSpace(msg)); c > 0 {
		return rundir.StatusHTTPError, int32(c)
	}
	return rundir.StatusStreamError, int32(code)
}
