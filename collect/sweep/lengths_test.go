package sweep

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An absurd output length (2e9 tokens, from a flag or a dataset) is an
// error at once, never an allocation sized from it.
func TestHugeOutputLengthRefused(t *testing.T) {
	if _, err := New("http://127.0.0.1:1", WithOutputTokens(Fixed(2_000_000_000))); err == nil || !strings.Contains(err.Error(), "no model takes that many") {
		t.Errorf("--output-tokens 2e9: %v", err)
	}
	if _, err := New("http://127.0.0.1:1", WithPromptTokens(Dist{Kind: DistNormal, Mean: 100, StdDev: 1e12})); err == nil {
		t.Error("a prompt standard deviation of 1e12 tokens accepted")
	}
	ds := filepath.Join(t.TempDir(), "ds.jsonl")
	os.WriteFile(ds, []byte(`{"prompt":"hi","output_tokens":2000000000}`+"\n"), 0o644)
	// The dataset is read by New, before any server or run directory.
	if _, err := New("http://127.0.0.1:1", WithDataset(ds), WithLevels(1), WithRequestsPerLevel(1)); err == nil ||
		!strings.Contains(err.Error(), "line 1") || !strings.Contains(err.Error(), "no model takes that many") {
		t.Errorf("dataset with output_tokens 2e9: %v", err)
	}
}

// Lengths the server's context cannot hold (its max_model_len) are refused
// before the first level, from flags or from a dataset.
func TestLengthsBeyondMaxModelLen(t *testing.T) {
	f := newFakeServer(t, func(f *fakeServer) { f.maxModelLen = 4096 })
	ds := filepath.Join(t.TempDir(), "ds.jsonl")
	os.WriteFile(ds, []byte(`{"prompt":"hi","output_tokens":5000}`+"\n"), 0o644)
	for _, tt := range []struct {
		name string
		opts []Option
		want string
	}{
		{"output", []Option{WithOutputTokens(Fixed(5000))}, "--output-tokens asks for up to 5000 tokens, more than the server's context of 4096"},
		{"prompt and output", []Option{WithPromptTokens(Fixed(3000)), WithOutputTokens(Fixed(2000))}, "prompts of up to 3000 tokens plus 2000 output tokens exceed"},
		// A dataset's records that do not fit are skipped; with none left, the sweep cannot start.
		{"dataset", []Option{WithDataset(ds)}, "none of its 1 records can be sent ([1 prompt and output over the model's context])"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := mustNew(t, f.URL, append(tt.opts, WithLevels(1), WithRequestsPerLevel(1), WithWarmup(0), WithNoGPU(), WithMetricsInterval(0))...)
			_, run, reqs, _, err := recordRun(t, s, context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) || len(reqs) > 0 {
				t.Errorf("err %v, %d requests; want %q", err, len(reqs), tt.want)
			}
			if st := run.Manifest.Stopped; st == nil || st.Phase != "prepare" {
				t.Errorf("stopped %+v", st)
			}
		})
	}
	s := mustNew(t, f.URL, WithPromptTokens(Fixed(3000)), WithOutputTokens(Fixed(1000)), WithLevels(1), WithRequestsPerLevel(1),
		WithWarmup(0), WithNoGPU(), WithMetricsInterval(0))
	if _, _, reqs, _, err := recordRun(t, s, context.Background()); err != nil || len(reqs) != 1 {
		t.Errorf("3000 + 1000 tokens within 4096: %v, %d requests", err, len(reqs))
	}
}
