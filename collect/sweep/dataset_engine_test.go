package sweep

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/internal/testengine"
	"github.com/headroom-llm/headroom/rundir"
)

// The real ShareGPT excerpt against the real test engine, whose tokenizer
// is one token per UTF-8 byte plus BOS, so every length is known by
// construction: of the 11 conversations, 3 fall outside vllm bench's
// bounds (prompt over 1024 tokens) and 4 more do not fit the engine's 1024
// tokens of context with their reference answer; the 4 left are sent, in
// the same order at every level, each with its reference answer's length
// as the output, and the server sees exactly those lengths.
func TestShareGPTAgainstTestEngine(t *testing.T) {
	const path = "../../testdata/datasets/sharegpt-excerpt.json"
	var convs []struct {
		ID            string `json:"id"`
		Conversations []struct {
			Value string `json:"value"`
		} `json:"conversations"`
	}
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &convs); err != nil {
		t.Fatal(err)
	}
	// The expected sample, from the rules and the byte tokenizer.
	want := map[string]int{} // prompt -> output tokens
	skipped := map[string]int{}
	for _, c := range convs {
		p, o := len(c.Conversations[0].Value)+1, len(c.Conversations[1].Value)+1
		switch {
		case p < 4 || p > 1024 || o < 4 || p+o > 2048:
			skipped[skipVLLMBounds]++
		case p+o > 1024:
			skipped[skipMaxModelLen]++
		default:
			want[c.Conversations[0].Value] = o
		}
	}
	if len(want) != 4 || skipped[skipVLLMBounds] != 3 || skipped[skipMaxModelLen] != 4 {
		t.Fatalf("the excerpt changed: %d usable, skipped %v", len(want), skipped)
	}

	e := testengine.Start(t, testengine.Options{Sequences: 4, CtxPerSeq: 1024})
	s := mustNew(t, e.BaseURL, WithNamedDataset(Dataset{Name: DatasetShareGPT, Path: path}), WithLevels(2, 4),
		WithRequestsPerLevel(6), WithWarmup(0), WithMetricsInterval(0), WithTimeout(time.Minute))
	dir, run := engineRun(t, s)
	ds := run.Manifest.Workload.DatasetSample
	if ds == nil || ds.Format != DatasetShareGPT || ds.Records != 11 || ds.Used != 4 || !ds.Reused || ds.Considered != 11 ||
		ds.Skipped[skipVLLMBounds] != 3 || ds.Skipped[skipMaxModelLen] != 4 || run.Manifest.Workload.MaxModelLen != 1024 {
		t.Errorf("dataset sample %+v (max model len %d)", ds, run.Manifest.Workload.MaxModelLen)
	}
	reqs, _ := rundir.ReadTable[rundir.RequestRow](dir, rundir.TableRequests)
	if len(reqs) != 12 {
		t.Fatalf("%d requests", len(reqs))
	}
	bySeq := map[int64]int64{} // seq -> prompt length at level 0
	sent := map[int64]int{}
	for _, r := range reqs {
		if r.Status != rundir.StatusOK || r.ServerPromptTokens == nil || *r.ServerPromptTokens != r.PromptTokensTarget ||
			r.ServerCompletionTokens == nil || *r.ServerCompletionTokens != r.OutputTokensTarget {
			t.Errorf("%s: %s %q, prompt %d (server %v), output %d (server %v)", r.RequestID, r.Status, r.Error,
				r.PromptTokensTarget, r.ServerPromptTokens, r.OutputTokensTarget, r.ServerCompletionTokens)
			continue
		}
		matched := false
		for p, o := range want {
			if int64(len(p)+1) == r.PromptTokensTarget && int64(o) == r.OutputTokensTarget {
				matched = true
			}
		}
		if !matched {
			t.Errorf("%s: prompt of %d tokens, output %d: not one of the usable conversations", r.RequestID, r.PromptTokensTarget, r.OutputTokensTarget)
		}
		sent[r.PromptTokensTarget]++
		if r.LevelIndex == 0 {
			bySeq[r.Seq] = r.PromptTokensTarget
		}
	}
	for _, r := range reqs {
		if r.LevelIndex == 1 && bySeq[r.Seq] != r.PromptTokensTarget {
			t.Errorf("request %d of level 1 sent a prompt of %d tokens, level 0 one of %d", r.Seq, r.PromptTokensTarget, bySeq[r.Seq])
		}
	}
	if len(sent) != 4 {
		t.Errorf("prompts sent: %v", sent)
	}
	for _, r := range reqs {
		if r.Seq >= 4 && r.PromptTokensTarget != bySeq[r.Seq-4] {
			t.Errorf("request %d sent a prompt of %d tokens, not the one of request %d (%d): the 4 records are not reused in order", r.Seq, r.PromptTokensTarget, r.Seq-4, bySeq[r.Seq-4])
		}
	}
}
