package sweep

import (
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
