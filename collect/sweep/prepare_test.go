package sweep

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// Preparation requests (/v1/models, /tokenize) that never answer are
// bounded by --timeout: the sweep fails, or does without the tokenizer,
// instead of hanging.
func TestPreparationRequestsTimeOut(t *testing.T) {
	t.Run("/v1/models", func(t *testing.T) {
		f := newFakeServer(t, func(f *fakeServer) { f.hangModels = true })
		s := mustNew(t, f.URL, WithTimeout(time.Second), WithLevels(1), WithRequestsPerLevel(2), WithNoGPU(), WithMetricsInterval(0))
		start := time.Now()
		_, run, _, _, err := recordRun(t, s, context.Background())
		if took := time.Since(start); err == nil || took > 10*time.Second {
			t.Fatalf("err %v after %v: want a failure within seconds", err, took)
		}
		if !strings.Contains(err.Error(), "no answer within 1s") || run.Manifest.Stopped == nil || run.Manifest.Stopped.Phase != "prepare" {
			t.Errorf("err %v, stopped %+v", err, run.Manifest.Stopped)
		}
	})
	t.Run("/tokenize", func(t *testing.T) {
		f := newFakeServer(t, func(f *fakeServer) { f.hangTokens = true })
		s := mustNew(t, f.URL, WithModel("fake-model"), WithTimeout(time.Second), WithLevels(1), WithRequestsPerLevel(2),
			WithWarmup(0), WithPromptTokens(Fixed(40)), WithOutputTokens(Fixed(2)), WithNoGPU(), WithMetricsInterval(0))
		start := time.Now()
		_, run, reqs, _, err := recordRun(t, s, context.Background())
		if took := time.Since(start); err != nil || took > 10*time.Second || len(reqs) != 2 {
			t.Fatalf("err %v after %v, %d requests: want the sweep done without /tokenize", err, took, len(reqs))
		}
		if !strings.Contains(run.Manifest.Workload.Tokenizer, "usage") {
			t.Errorf("tokenizer %q: want prompts sized from usage counts", run.Manifest.Workload.Tokenizer)
		}
	})
}

// Ctrl-C while a preparation request hangs is an interruption (exit 130,
// reason interrupted), whichever request it was.
func TestCtrlCDuringPreparation(t *testing.T) {
	for _, hang := range []string{"models", "tokenize"} {
		t.Run(hang, func(t *testing.T) {
			f := newFakeServer(t, func(f *fakeServer) { f.hangModels, f.hangTokens = hang == "models", hang == "tokenize" })
			opts := []Option{WithLevels(1), WithRequestsPerLevel(2), WithNoGPU(), WithMetricsInterval(0)}
			if hang == "tokenize" {
				opts = append(opts, WithModel("fake-model"))
			}
			s := mustNew(t, f.URL, opts...)
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(300*time.Millisecond, cancel)
			_, run, _, _, err := recordRun(t, s, ctx)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err %v: want context.Canceled (exit 130)", err)
			}
			if st := run.Manifest.Stopped; st == nil || st.Reason != "interrupted" || st.Phase != "prepare" {
				t.Errorf("stopped %+v: want interrupted in prepare", st)
			}
		})
	}
}
