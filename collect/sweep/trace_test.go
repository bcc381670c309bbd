package sweep

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/internal/testengine"
	"github.com/headroom-llm/headroom/rundir"
)

const mooncakeExcerpt = "../../testdata/traces/mooncake-conversation-head29.jsonl"

func TestReadTrace(t *testing.T) {
	rows, format, err := readTrace(mooncakeExcerpt, "")
	if err != nil || format != TraceMooncake || len(rows) != 29 {
		t.Fatalf("%d rows, %q: %v", len(rows), format, err)
	}
	if r := rows[11]; r.at != 3*time.Second || r.input != 87169 || r.output != 402 || len(r.hashIDs) != 171 || r.hashIDs[0] != 0 {
		t.Errorf("row 12: %+v", r)
	}
	if rows[25].at != 3*time.Second || rows[26].at != 5999*time.Millisecond || rows[28].at != 5999*time.Millisecond {
		t.Errorf("arrivals %v, %v, %v", rows[25].at, rows[26].at, rows[28].at)
	}
	csvPath := filepath.Join(t.TempDir(), "burst.csv")
	os.WriteFile(csvPath, []byte("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"+
		"5,ChatGPT,472,18,490,Conversation log\n7.5,GPT-4,1087,0,1087,Conversation log\n8,GPT-4,200,30,230,API log\n"), 0o644)
	rows, format, err = readTrace(csvPath, "")
	if err != nil || format != TraceBurstGPT || len(rows) != 2 || rows[0].at != 0 || rows[1].at != 3*time.Second || rows[1].input != 200 || rows[1].output != 30 {
		t.Errorf("burstgpt: %+v %q %v", rows, format, err)
	}
	for in, want := range map[string]string{
		`{"timestamp": 0, "input_length": 5}`:                       "line 1: a trace row needs",
		`{"timestamp": -1, "input_length": 5, "output_length": 2}`:  "line 1: timestamp -1",
		`{"timestamp": 0, "input_length": 0, "output_length": 2}`:   "want at least 1 token",
		`{"timestamp": "x", "input_length": 5, "output_length": 2}`: `line 1: not a trace row ("timestamp" has the wrong kind of value)`,
		"": "no requests",
	} {
		p := filepath.Join(t.TempDir(), "t.jsonl")
		os.WriteFile(p, []byte(in), 0o644)
		if _, _, err := readTrace(p, ""); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: err %v, want %q", in, err, want)
		}
	}
}

// Equal hash ids are equal text: two requests that share their first
// block start with the same 512 tokens of text and differ after it; a
// partial last block is the start of the block's text; the prompt has the
// row's length.
func TestTracePromptsShareBlocks(t *testing.T) {
	s := mustNew(t, "http://127.0.0.1:1", WithTrace(Trace{Path: mooncakeExcerpt}))
	s.prompts = calibrated(promptWords[:], 1, 1, "one token per word") // BOS + one token per word
	a, _ := s.tracePrompt(traceRow{input: 1025, hashIDs: []int64{0, 1, 2}}, 1025, 0)
	b, _ := s.tracePrompt(traceRow{input: 700, hashIDs: []int64{0, 3}}, 700, 1)
	c, _ := s.tracePrompt(traceRow{input: 600, hashIDs: []int64{0, 1}}, 600, 2)
	wa, wb, wc := strings.Fields(a), strings.Fields(b), strings.Fields(c)
	if len(wa) != 1024 || len(wb) != 699 || len(wc) != 599 {
		t.Fatalf("%d, %d, %d words", len(wa), len(wb), len(wc))
	}
	if strings.Join(wa[:512], " ") != strings.Join(wb[:512], " ") || strings.Join(wa[512:600], " ") == strings.Join(wb[512:600], " ") {
		t.Error("block 0 not shared, or block 1 shared with block 3")
	}
	if strings.Join(wc[:599], " ") != strings.Join(wa[:599], " ") {
		t.Error("a partial block 1 is not the start of block 1")
	}
	// Without hash ids every prompt is its own.
	d, nd := s.tracePrompt(traceRow{input: 50}, 50, 3)
	e, _ := s.tracePrompt(traceRow{input: 50}, 50, 4)
	if d == e || len(strings.Fields(d)) != 49 || nd != 50 {
		t.Errorf("unique prompts: %q %q (%d tokens)", d, e, nd)
	}
	// Shorter than BOS and the unique words: the prompt is the shortest
	// unique one, and its length says so.
	f, nf := s.tracePrompt(traceRow{input: 2}, 2, 5)
	if len(strings.Fields(f)) != uniqueWords || nf != uniqueWords+1 {
		t.Errorf("a 2-token row: %q, %d tokens; want the %d unique words and BOS", f, nf, uniqueWords)
	}
}

// The real Mooncake excerpt replayed against the real test engine at
// three times its speed: all 29 requests, each sent at its arrival / 3
// (intended times exact to the schedule, actual sends never early), with
// the trace's output length and its input length cut to the engine's
// context of 1024 tokens (every prompt of this excerpt is longer; prompt
// lengths are exact: the engine counts one token per byte, and the
// prompts are built to it). The shared first block shows as repeated
// block tokens: every request after the first starts with it.
func TestMooncakeReplayAgainstTestEngine(t *testing.T) {
	// The expected schedule and lengths, from the file itself (not the
	// sweep's reader) and the documented rule: a row whose input and
	// output exceed the context keeps its output and gets the rest of
	// the context as its prompt.
	type row struct {
		Timestamp    float64 `json:"timestamp"` // ms
		InputLength  int     `json:"input_length"`
		OutputLength int     `json:"output_length"`
		HashIDs      []int   `json:"hash_ids"`
	}
	data, err := os.ReadFile(mooncakeExcerpt)
	if err != nil {
		t.Fatal(err)
	}
	var rows []row
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r row
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, r)
	}
	lengths := func(r row) (in, out int, cut bool) {
		if r.InputLength+r.OutputLength <= 1024 {
			return r.InputLength, r.OutputLength, false
		}
		out = min(r.OutputLength, 1023)
		return max(1, 1024-out), out, true
	}
	cut, repeated := 0, 0
	for i, r := range rows {
		in, _, c := lengths(r)
		if c {
			cut++
		}
		if len(r.HashIDs) == 0 || r.HashIDs[0] != 0 {
			t.Fatalf("row %d does not start with block 0: the excerpt changed", i)
		}
		if i > 0 {
			repeated += min(in, 512) // every request starts with block 0
		}
	}
	e := testengine.Start(t, testengine.Options{Sequences: 4, CtxPerSeq: 1024})
	dir := filepath.Join(t.TempDir(), "run")
	s := mustNew(t, e.BaseURL, WithTrace(Trace{Path: mooncakeExcerpt, Speeds: []float64{3}}), WithMaxInFlight(64),
		WithMetricsInterval(0), WithTimeout(2*time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	run, err := s.Record(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	w := run.Manifest.Workload
	tr := w.Trace
	if tr == nil || tr.Rows != 29 || tr.Format != TraceMooncake || tr.Cut != cut || cut != 29 || tr.RepeatedBlockTokens != int64(repeated) || w.MaxModelLen != 1024 || len(w.RatesRPS) != 1 {
		t.Errorf("trace record %+v (max model len %d, rates %v)", tr, w.MaxModelLen, w.RatesRPS)
	}
	reqs, _ := rundir.ReadTable[rundir.RequestRow](dir, rundir.TableRequests)
	levels, _ := rundir.ReadTable[rundir.LevelRow](dir, rundir.TableLevels)
	if len(reqs) != 29 || len(levels) != 1 {
		t.Fatalf("%d requests, %d levels", len(reqs), len(levels))
	}
	sort.Slice(reqs, func(i, j int) bool { return reqs[i].Seq < reqs[j].Seq })
	for i, r := range reqs {
		in, out, _ := lengths(rows[i])
		want := time.Duration(rows[i].Timestamp * float64(time.Millisecond) / 3)
		got := time.Duration(r.IntendedSendNS - levels[0].StartNS)
		if d := got - want; d < 0 || d > time.Millisecond {
			t.Errorf("request %d intended at %v, the trace says %v", i, got, want)
		}
		if r.SendNS < r.IntendedSendNS || r.Warmup {
			t.Errorf("request %d sent %v before its time (warm-up %v)", i, time.Duration(r.IntendedSendNS-r.SendNS), r.Warmup)
		}
		if r.Status != rundir.StatusOK || r.PromptTokensTarget != int64(in) || r.OutputTokensTarget != int64(out) ||
			r.ServerPromptTokens == nil || *r.ServerPromptTokens != int64(in) || r.ServerCompletionTokens == nil || *r.ServerCompletionTokens != int64(out) {
			t.Errorf("request %d: %s %q, prompt %d/%v (want %d), output %d/%v (want %d)", i, r.Status, r.Error,
				r.PromptTokensTarget, r.ServerPromptTokens, in, r.OutputTokensTarget, r.ServerCompletionTokens, out)
		}
	}
}
