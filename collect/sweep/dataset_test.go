package sweep

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/rundir"
)

func TestParseDataset(t *testing.T) {
	in := `{"prompt": "hello there", "output_tokens": 7}

{"text": "plain", "prompt_tokens": 3}
{"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "why?"}], "max_tokens": 5}
`
	recs, err := parseDataset(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[0].prompt != "hello there" || recs[0].outputTokens != 7 || recs[1].promptTokens != 3 ||
		recs[2].prompt != "why?" || recs[2].outputTokens != 5 || !strings.Contains(string(recs[2].messages), "be brief") {
		t.Errorf("%+v", recs)
	}
	for _, bad := range []string{`{"prompt": 1}`, `{"nothing": "x"}`, `{"messages": []}`, `not json`, ``, `{"prompt":"a","output_tokens":-1}`} {
		if _, err := parseDataset(strings.NewReader("{\"prompt\":\"ok\"}\n" + bad)); err == nil && bad != "" {
			t.Errorf("%q accepted", bad)
		} else if err != nil && !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: error does not name the line: %v", bad, err)
		}
	}
}

// The formats vllm bench names: ShareGPT's array (and its JSONL rows),
// custom JSONL, and HF-style rows of the common chat and instruction
// datasets, detected when not named; the reference answer is kept where
// the row has one.
func TestDatasetFormats(t *testing.T) {
	recs, format, err := readDataset("../../testdata/datasets/sharegpt-excerpt.json", "")
	if err != nil || format != DatasetShareGPT || len(recs) != 11 {
		t.Fatalf("%d records, format %q: %v", len(recs), format, err)
	}
	if r := recs[1]; r.prompt != "How does process intelligence or process mining work?" || !r.hasReference ||
		!strings.HasPrefix(r.reference, "Process mining is a technique") || len(r.turns) != 12 {
		t.Errorf("second conversation: %+v", r)
	}
	rows := map[string]datasetRecord{
		`{"conversations":[{"from":"human","value":"q"},{"from":"gpt","value":"a"}]}`:                                     {prompt: "q", reference: "a", hasReference: true},
		`{"messages":[{"role":"system","content":"s"},{"role":"user","content":"q"},{"role":"assistant","content":"a"}]}`: {prompt: "q", reference: "a", hasReference: true},
		`{"turns":["q1","q2"],"category":"writing"}`:                                                                      {prompt: "q1"},
		`{"instruction":"do","input":"this","output":"done"}`:                                                             {prompt: "do\n\nthis", reference: "done", hasReference: true},
		`{"question":"2+2?","answer":"4"}`:                                                                                {prompt: "2+2?", reference: "4", hasReference: true},
		`{"prompt":"p","completion":"c"}`:                                                                                 {prompt: "p", reference: "c", hasReference: true},
	}
	for row, want := range rows {
		recs, _, err := parseDatasetAs(bufio.NewReader(strings.NewReader(row)), DatasetHF)
		if err != nil || len(recs) != 1 || recs[0].prompt != want.prompt || recs[0].reference != want.reference || recs[0].hasReference != want.hasReference {
			t.Errorf("%s: %+v %v", row, recs, err)
		}
	}
	// Detected: a custom row, an HF row.
	if _, f, _ := parseDatasetAs(bufio.NewReader(strings.NewReader(`{"prompt":"x"}`)), ""); f != DatasetCustom {
		t.Errorf("custom detected as %q", f)
	}
	if _, f, _ := parseDatasetAs(bufio.NewReader(strings.NewReader(`{"question":"x","answer":"y"}`)), ""); f != DatasetHF {
		t.Errorf("hf detected as %q", f)
	}
	// Bad input: one line naming where, no Go types.
	for in, want := range map[string]string{
		`[{"id":"a"}]`:                     `entry 0: no "conversations"`,
		`[{"conversations":"x"}]`:          `entry 0: "conversations" is not a list`,
		`[{"conversations":[{"from":1}]}]`: `entry 0:`,
		`[1, 2]`:                           `entry 0: not a JSON object`,
		`{"instruction": 5}`:               `line 1: no prompt field`,
		"{\"prompt\":\"a\"}\n[1]":          `line 2`,
	} {
		_, _, err := parseDatasetAs(bufio.NewReader(strings.NewReader(in)), "")
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "sweep.") || strings.Contains(err.Error(), "Go value") {
			t.Errorf("%s: err %v, want one containing %q", in, err, want)
		}
	}
	if _, _, err := parseDatasetAs(bufio.NewReader(strings.NewReader(`[{"conversations":[]}]`)), DatasetCustom); err == nil || !strings.Contains(err.Error(), "--dataset-name sharegpt") {
		t.Errorf("an array named custom: %v", err)
	}
}

func FuzzParseDataset(f *testing.F) {
	f.Add(`{"prompt": "a"}` + "\n" + `{"messages":[{"role":"user","content":"b"}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		recs, err := parseDataset(strings.NewReader(s))
		if err == nil && len(recs) == 0 {
			t.Fatal("no error and no prompts")
		}
	})
}

func TestDatasetChatSweep(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prompts.jsonl")
	os.WriteFile(path, []byte(`{"messages":[{"role":"user","content":"first question"}],"output_tokens":3}
{"messages":[{"role":"user","content":"second question"}],"output_tokens":3}
`), 0o644)
	f := newFakeServer(t, func(f *fakeServer) { f.chat = true })
	s := mustNew(t, f.URL, WithEndpoint(EndpointChat), WithDataset(path), WithLevels(2), WithRequestsPerLevel(4), WithWarmup(0))
	rec, _, err := runSweep(t, s)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rec.requests {
		if r.Status != rundir.StatusOK || r.ClientChunks != 3 || r.PromptTokensTarget != 0 { // chat messages: length unknown to the client
			t.Errorf("%+v", r)
		}
	}
	if w := s.Workload(); w.Prompt.Kind != "dataset" || w.Dataset != path {
		t.Errorf("workload %+v", w)
	}
}
