package analyze

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/headroom-llm/headroom/rundir"
)

// noteOf returns the run's note of the kind about table, or nil.
func noteOf(notes []Note, kind, table string) *Note {
	for i, n := range notes {
		if n.Kind == kind && n.Table == table {
			return &notes[i]
		}
	}
	return nil
}

// A valid Prometheus sample of NaN (vllm:num_requests_running NaN) made
// `headroom report` fail with "json: unsupported value: NaN" and write
// nothing (issue 21 item 3). The row is left out at load, with a note.
func TestNaNMetricSampleKeepsTheReport(t *testing.T) {
	t.Parallel()
	f := newFakeSweep(t)
	f.level(1, 4, constTTFT(0.05), 0.01)
	f.level(2, 4, constTTFT(0.05), 0.01)
	f.metric(f.at(0, 0.5), "vllm:num_requests_running", "", math.NaN())
	f.metric(f.at(1, 0.5), "vllm:num_requests_running", "", 2)
	f.metric(f.at(1, 0.6), "vllm:gpu_cache_usage_perc", "", math.Inf(1))
	run := f.write()
	if len(run.Metrics) != 1 || run.Metrics[0].Value != 2 {
		t.Errorf("metrics kept: %+v", run.Metrics)
	}
	n := noteOf(run.Notes, NoteNonFinite, rundir.TableServerMetrics)
	if n == nil || n.Count != 2 || n.Of != 3 {
		t.Fatalf("notes %+v: want 2 of 3 server_metrics rows left out", run.Notes)
	}
	rep, err := Analyze([]*Run{run}, testSettings())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Fatalf("analysis.json: %v", err)
	}
	if noteOf(rep.Runs[0].Notes, NoteNonFinite, rundir.TableServerMetrics) == nil {
		t.Errorf("the run's analysis does not carry the note: %+v", rep.Runs[0].Notes)
	}
}

// A nullable value that is not finite is unknown, which is what nil says:
// the row stays.
func TestNonFiniteNullableCleared(t *testing.T) {
	t.Parallel()
	nan := math.NaN()
	rows := []rundir.ServerCPURow{{TimeNS: 1, PID: 1, TID: 1, RunS: 1}}
	type row struct {
		A float64
		B *float64
	}
	got, n, of := finiteRows([]row{{1, &nan}, {2, nil}, {math.Inf(-1), nil}})
	if len(got) != 2 || got[0].B != nil || got[1].A != 2 || n != 2 || of != 3 {
		t.Errorf("kept %+v, %d of %d affected", got, n, of)
	}
	if kept, n, _ := finiteRows(rows); len(kept) != 1 || n != 0 {
		t.Errorf("a finite row was touched: %+v, %d", kept, n)
	}
}

// Levels at concurrency 1000 and 1001 gave +Inf gain per doubling and
// failed analysis.json (issue 21 item 3): two loads that close say nothing
// per doubling.
func TestCloseLevelsGiveAFiniteGain(t *testing.T) {
	t.Parallel()
	a := LevelStats{Concurrency: 1000, OutputTokPerS: 10}
	b := LevelStats{Concurrency: 1001, OutputTokPerS: 1e6}
	if g := gainPerDoubling(a, b, AxisConcurrency); g != 0 {
		t.Errorf("gain per doubling from c=1000 to c=1001: %g, want 0", g)
	}
	if g := gainPerDoubling(LevelStats{Concurrency: 1, OutputTokPerS: 10}, LevelStats{Concurrency: 2, OutputTokPerS: 15}, AxisConcurrency); math.Abs(g-0.5) > 1e-12 {
		t.Errorf("gain per doubling from c=1 to c=2: %g, want 0.5", g)
	}

	// The same through the whole analysis, from imported level statistics.
	f := newFakeSweep(t)
	f.level(1, 1, constTTFT(0.1), 0.02)
	run := f.write()
	run.Requests, run.Tokens, run.Levels = nil, nil, nil
	run.LevelStat = []rundir.LevelStatsRow{
		{Concurrency: 1000, RequestsOK: 200, OutputTokPerS: 10, TTFTP50S: 0.1, TTFTP99S: 0.2, TPOTP50S: 0.02, TPOTP99S: 0.03},
		{Concurrency: 1001, RequestsOK: 200, OutputTokPerS: 1e300, TTFTP50S: 0.1, TTFTP99S: 0.2, TPOTP50S: 0.02, TPOTP99S: 0.03},
	}
	rep, err := Analyze([]*Run{run}, testSettings())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := json.Marshal(rep); err != nil {
		t.Fatalf("analysis.json: %v", err)
	}
	if n := noteOf(rep.Notes, NoteNonFiniteResult, ""); n != nil {
		t.Errorf("the knee computation still overflowed (%d values cleared)", n.Count)
	}
}

// Imported TTFTs of 1e308 s or −5 s overflowed int64 times and showed a
// "−5,000 ms" p50 (issue 21 item 3). Such requests are left out at load.
func TestBadTimesLeftOut(t *testing.T) {
	t.Parallel()
	f := newFakeSweep(t)
	f.level(1, 6, constTTFT(0.05), 0.01)
	send := f.reqs[1].SendNS
	neg := send - 5e9 // a TTFT of −5 s
	f.reqs[1].FirstTokenNS = &neg
	ttft := 1e308
	huge := send + int64(math.Round(ttft*1e9)) // what a TTFT of 1e308 s becomes
	f.reqs[2].FirstTokenNS, f.reqs[2].EndNS = &huge, huge
	f.reqs[3].EndNS = send + 2e15 // 23 days: no request
	run := f.write()
	n := noteOf(run.Notes, NoteBadTimes, rundir.TableRequests)
	if n == nil || n.Count != 3 || n.Of != 7 {
		t.Fatalf("notes %+v: want 3 of 7 requests left out", run.Notes)
	}
	sw := analyzeOne(t, run, testSettings())
	if l := sw.Levels[0]; l.TTFT == nil || l.TTFT.P50S < 0.049 || l.TTFT.P50S > 0.051 || l.TTFT.MaxS > 0.051 {
		t.Errorf("TTFT %+v, want 0.05 s throughout", l.TTFT)
	}

	stats := []rundir.LevelStatsRow{{Concurrency: 1, TTFTP50S: -5}, {Concurrency: 2, TTFTP50S: 0.1}, {Concurrency: 4, E2EP50S: 1e308}}
	if got := keep(stats, goodStats); len(got) != 1 || got[0].Concurrency != 2 {
		t.Errorf("level statistics kept: %+v", got)
	}
}

// When every chunk of a request arrives in one read (a buffering proxy),
// TPOT and ITL read 0; the run says its stream was buffered (issue 21
// item 11).
func TestBufferedStreamNoted(t *testing.T) {
	t.Parallel()
	buffered := newFakeSweep(t)
	buffered.level(2, 3, constTTFT(0.05), 0) // every chunk at the first token's time
	run := buffered.write()
	n := noteOf(run.Notes, NoteBufferedStream, rundir.TableTokens)
	if n == nil || n.Count != 8 || n.Of != 8 {
		t.Fatalf("notes %+v: want 8 of 8 requests buffered", run.Notes)
	}
	streamed := newFakeSweep(t)
	streamed.level(2, 3, constTTFT(0.05), 0.01)
	if n := noteOf(streamed.write().Notes, NoteBufferedStream, rundir.TableTokens); n != nil {
		t.Errorf("a streamed run is called buffered: %+v", n)
	}
}

// A value the analysis computes that is not finite is cleared, counted
// and noted, wherever it sits in the model, so analysis.json is written.
func TestNonFiniteResultsCleared(t *testing.T) {
	t.Parallel()
	nan, inf := math.NaN(), math.Inf(1)
	type inner struct {
		X float64
		P *float64
	}
	v := struct {
		A  float64
		S  []inner
		M  map[string]float64
		MS map[string]inner
		I  any
		ok float64 // unexported: json does not write it
	}{A: nan, S: []inner{{X: 1, P: &inf}, {X: inf}}, M: map[string]float64{"a": nan, "b": 2}, MS: map[string]inner{"c": {X: nan}}, I: inner{X: inf}, ok: nan}
	if n := clearNonFinite(reflect.ValueOf(&v).Elem()); n != 6 {
		t.Errorf("%d values cleared, want 6", n)
	}
	if _, err := json.Marshal(v); err != nil {
		t.Errorf("still not writable: %v", err)
	}
	if v.S[0].X != 1 || v.M["b"] != 2 || v.S[0].P != nil {
		t.Errorf("after clearing: %+v", v)
	}
}
