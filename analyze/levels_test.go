package analyze

import (
	"math"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/rundir"
)

func near(a, b, rel float64) bool { return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b)) }

// One level of constructed requests whose every latency is known.
func TestLevelStatsKnownAnswers(t *testing.T) {
	t.Parallel()
	f := newFakeSweep(t)
	f.level(2, 5, constTTFT(0.1), 0.02)
	// A failed measured request: counted as an error, not in latencies.
	f.reqs = append(f.reqs, rundir.RequestRow{RequestID: "bad", LevelIndex: 0, Concurrency: 2, Status: rundir.StatusHTTPError, HTTPStatus: 503,
		SendNS: f.at(0, 0.5), EndNS: f.at(0, 0.5)})
	sw := analyzeOne(t, f.write(), testSettings())
	if len(sw.Levels) != 1 {
		t.Fatalf("%d levels", len(sw.Levels))
	}
	l := sw.Levels[0]
	// Each lane: one warm-up then five requests of 0.1 s + 15 × 0.02 s.
	cycle := 0.1 + 15*0.02
	checks := []struct {
		name      string
		got, want float64
	}{
		{"requests", float64(l.Requests), 11},
		{"ok", float64(l.OK), 10},
		{"errors", float64(l.Errors), 1},
		{"warm-up excluded", float64(l.WarmupExcluded), 2},
		{"TTFT p50", l.TTFT.P50S, 0.1},
		{"TTFT p99", l.TTFT.P99S, 0.1},
		{"TPOT p50", l.TPOT.P50S, 0.02},
		{"ITL p90", l.ITL.P90S, 0.02},
		{"E2E p50", l.E2E.P50S, cycle},
		{"window", l.WindowS, 5 * cycle},
		{"output tok/s", l.OutputTokPerS, 2 * 16 / cycle},
		{"requests/s", l.RequestsPerS, 2 / cycle},
		{"total tok/s", l.TotalTokPerS, 2 * (16 + 512) / cycle},
		{"ITL samples", float64(l.ITL.N), 10 * 15},
	}
	for _, c := range checks {
		if !near(c.got, c.want, 1e-6) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if l.ErrorsByClass[rundir.StatusHTTPError] != 1 {
		t.Errorf("errors by class %v", l.ErrorsByClass)
	}
	if iv := l.Confidence.OutputTokPerS; iv == nil || !near(iv.Estimate, l.OutputTokPerS, 1e-9) || iv.Low > iv.Estimate || iv.High < iv.Estimate {
		t.Errorf("throughput interval %+v does not hold the level's throughput %v", iv, l.OutputTokPerS)
	}
	if iv := l.Confidence.TTFTP50S; iv == nil || iv.Low != 0.1 || iv.High != 0.1 {
		t.Errorf("constant TTFT must give a zero-width interval, got %+v", iv)
	}
	// 10 requests cannot carry a p99 or, below 10, a p90: the data say so
	// (the report footnotes it once per table, not once per level).
	for _, q := range l.TTFT.Percentiles {
		if want := q.Percentile < 99; q.Reliable != want {
			t.Errorf("p%v reliable = %v with n=10", q.Percentile, q.Reliable)
		}
	}
	if tc := sw.TokenCount; tc.Server != tc.OK || tc.OK == 0 || tc.Differ != 0 {
		t.Errorf("token count %+v", tc)
	}
}

// Server completion tokens that differ from the client's chunks are used
// for TPOT and throughput, and the difference is reported.
func TestTPOTUsesServerTokens(t *testing.T) {
	t.Parallel()
	f := newFakeSweep(t)
	f.level(1, 4, constTTFT(0.1), 0.02)
	for i := range f.reqs {
		f.reqs[i].ClientChunks = 8 // two tokens per chunk
		n := int64(16)
		f.reqs[i].ServerCompletionTokens = &n
	}
	sw := analyzeOne(t, f.write(), testSettings())
	if got := sw.Levels[0].TPOT.P50S; !near(got, 0.02, 1e-9) {
		t.Errorf("TPOT %v, want 0.02 from 16 server tokens", got)
	}
	if tc := sw.TokenCount; tc.Differ != 4 || tc.Server != 4 {
		t.Errorf("token count %+v does not say the chunk count differs for 4", tc)
	}
}

func TestLevelStatsFromImport(t *testing.T) {
	t.Parallel()
	rows := []rundir.LevelStatsRow{
		{Concurrency: 4, RequestsOK: 8, OutputTokPerS: 400, TTFTP50S: 0.2, TTFTP99S: 0.5, TPOTP50S: 0.02, TPOTP99S: 0.03, E2EP50S: 3, PercentileMethod: "nearest rank (seed)"},
		{Concurrency: 1, RequestsOK: 2, Errors: 1, OutputTokPerS: 100, TTFTP50S: 0.1, TTFTP99S: 0.1, TPOTP50S: 0.02, TPOTP99S: 0.02},
	}
	set := testSettings()
	set.Percentiles = []float64{95}
	ls := levelStatsFromImport(rows, set)
	if ls[0].Concurrency != 1 || ls[1].Concurrency != 4 {
		t.Fatalf("levels not sorted by concurrency: %d, %d", ls[0].Concurrency, ls[1].Concurrency)
	}
	l := ls[1]
	if l.TTFT.P50S != 0.2 || l.TTFT.P99S != 0.5 || l.TTFT.P90S != 0 || l.ITL != nil || l.TTFTP99OverP50 != 2.5 {
		t.Errorf("imported latencies wrong: %+v", l.TTFT)
	}
	if strings.Join(l.TTFT.Missing, ",") != "p90,p95,max" {
		t.Errorf("missing percentiles %v", l.TTFT.Missing)
	}
	if ls[0].ErrorFraction != 1.0/3 {
		t.Errorf("error fraction %v", ls[0].ErrorFraction)
	}
	if len(l.Missing) == 0 || l.Confidence.TTFTP50S != nil {
		t.Error("imported levels must say what they lack and carry no intervals")
	}
}

// An open-loop level whose requests waited for a free slot: TTFT and E2E
// from the schedule include the wait, the usual ones (from send) do not.
func TestOpenLoopLatencyFromSchedule(t *testing.T) {
	f := newFakeSweep(t)
	f.manifest.Workload.Mode = "open"
	f.level(2, 10, constTTFT(0.1), 0.01) // TTFT 100 ms, E2E 250 ms
	f.levels[0].RateRPS = 20
	n := 0
	for i := range f.reqs {
		if f.reqs[i].Warmup {
			continue
		}
		// every measured request was due 0, 50, 100, ... ms before it could go
		f.reqs[i].IntendedSendNS = f.reqs[i].SendNS - int64(n%10)*50e6
		n++
	}
	l := analyzeOne(t, f.write(), testSettings()).Levels[0]
	if l.TTFT == nil || l.SendWait == nil || l.TTFTFromIntended == nil || l.E2EFromIntended == nil {
		t.Fatalf("missing latencies: %+v", l)
	}
	// 20 waits, twice each of 0, 50, ..., 450 ms: nearest-rank p50 is the
	// 10th smallest (200 ms), p99 the 20th (450 ms)
	if l.SendWait.P50S != 0.2 || l.SendWait.P99S != 0.45 {
		t.Errorf("wait p50 %v p99 %v, want 0.2 and 0.45", l.SendWait.P50S, l.SendWait.P99S)
	}
	if d := l.TTFTFromIntended.P99S - 0.55; d > 1e-9 || d < -1e-9 || l.TTFT.P99S > 0.1+1e-9 {
		t.Errorf("TTFT p99 %v from send, %v from schedule; want 0.1 and 0.55", l.TTFT.P99S, l.TTFTFromIntended.P99S)
	}
	if d := l.E2EFromIntended.P50S - (0.2 + 0.25); d > 1e-9 || d < -1e-9 {
		t.Errorf("E2E p50 from schedule %v, want 0.45", l.E2EFromIntended.P50S)
	}
}

// A closed loop has no schedule: no latencies from it.
func TestClosedLoopHasNoScheduleLatency(t *testing.T) {
	f := newFakeSweep(t)
	f.level(2, 10, constTTFT(0.1), 0.01)
	if l := analyzeOne(t, f.write(), testSettings()).Levels[0]; l.SendWait != nil || l.TTFTFromIntended != nil {
		t.Errorf("closed loop with schedule latencies: %+v %+v", l.SendWait, l.TTFTFromIntended)
	}
}

// A gap of one answer that another request's first token fell in counts as
// prompt intake: A's 40 ms gap ends as B's first token arrives (B's prompt
// was taken in by that step); B's own first token does not count for B.
func TestPromptIntakeShare(t *testing.T) {
	t.Parallel()
	ms := func(v ...int64) []int64 {
		for i := range v {
			v[i] *= 1e6
		}
		return v
	}
	firstA, firstB := int64(0), int64(60e6)
	a := &rundir.RequestRow{RequestID: "a", FirstTokenNS: &firstA}
	b := &rundir.RequestRow{RequestID: "b", FirstTokenNS: &firstB}
	ts := []requestTiming{
		{row: a, ok: true, recvNS: ms(0, 10, 20, 60, 70)},
		{row: b, ok: true, recvNS: ms(60, 70, 80)},
	}
	got := promptIntakeShare(ts, []*rundir.RequestRow{a, b}, &Latency{P50S: 0.010})
	if got == nil || math.Abs(*got-40.0/90) > 1e-12 {
		t.Errorf("share %v, want 40 ms of 90 ms", got)
	}
	// One request alone, or no per-token times: nothing to say.
	if got := promptIntakeShare(ts[:1], []*rundir.RequestRow{a}, &Latency{P50S: 0.010}); got != nil {
		t.Errorf("one request: %v", *got)
	}
	if got := promptIntakeShare(ts, []*rundir.RequestRow{a, b}, nil); got != nil {
		t.Errorf("no ITL: %v", *got)
	}
}
