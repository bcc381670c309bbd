package sweep

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/internal/testengine"
	"github.com/headroom-llm/headroom/rundir"
)

// A short sweep against the real test engine (llama.cpp through
// node-llama-cpp, random-weight model, loopback): every request recorded,
// client and server agree on token counts, the log and metrics captured.
func TestSweepAgainstTestEngine(t *testing.T) {
	e := testengine.Start(t, testengine.Options{Sequences: 4, CtxPerSeq: 512})
	dir := filepath.Join(t.TempDir(), "run")
	s := mustNew(t, e.BaseURL, WithLevels(1, 2, 4), WithRequestsPerLevel(8), WithWarmup(0),
		WithPromptTokens(Fixed(64)), WithOutputTokens(Fixed(16)), WithServerLog(e.LogPath),
		WithMetricsInterval(200*time.Millisecond), WithTimeout(time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	run, err := s.Record(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Check(); err != nil {
		t.Fatal(err)
	}
	m := run.Manifest
	if !m.Complete || m.Engine.Name != "node-llama-cpp" || m.Engine.Version == "" || m.Engine.Model != e.ModelName {
		t.Errorf("manifest: complete %v engine %+v", m.Complete, m.Engine)
	}
	if !m.Workload.FixedOutput || !strings.Contains(m.Workload.Tokenizer, "/tokenize") {
		t.Errorf("workload %+v", m.Workload)
	}
	reqs, err := rundir.ReadTable[rundir.RequestRow](dir, rundir.TableRequests)
	if err != nil {
		t.Fatal(err)
	}
	levels, _ := rundir.ReadTable[rundir.LevelRow](dir, rundir.TableLevels)
	if len(reqs) != 24 || len(levels) != 3 {
		t.Fatalf("%d requests, %d levels", len(reqs), len(levels))
	}
	for i, l := range levels {
		if int(l.LevelIndex) != i || l.Concurrency != []int64{1, 2, 4}[i] || !l.Complete || l.Requests != 8 ||
			(i > 0 && l.StartNS < levels[i-1].EndNS) {
			t.Errorf("level %d: %+v", i, l)
		}
	}
	for _, r := range reqs {
		if r.Status != rundir.StatusOK {
			t.Errorf("%s: %s %s", r.RequestID, r.Status, r.Error)
			continue
		}
		if *r.FirstTokenNS-r.SendNS >= r.EndNS-r.SendNS {
			t.Errorf("%s: TTFT not below E2E", r.RequestID)
		}
		if r.ServerCompletionTokens == nil || r.ClientChunks != *r.ServerCompletionTokens || r.ClientChunks != 16 {
			t.Errorf("%s: %d chunks, server counted %v", r.RequestID, r.ClientChunks, r.ServerCompletionTokens)
		}
		if r.ServerPromptTokens == nil || *r.ServerPromptTokens != r.PromptTokensTarget {
			t.Errorf("%s: prompt %v tokens, target %d", r.RequestID, r.ServerPromptTokens, r.PromptTokensTarget)
		}
	}
	lines, _ := rundir.ReadTable[rundir.ServerLogLineRow](dir, rundir.TableServerLogLines)
	log, _ := os.ReadFile(filepath.Join(dir, rundir.ServerLogFile))
	if len(lines) == 0 || !strings.Contains(string(log), " finish req=") || lines[0].RecvNS < levels[0].StartNS-int64(time.Minute) {
		t.Errorf("%d log line times; log %d bytes", len(lines), len(log))
	}
	metrics, _ := rundir.ReadTable[rundir.ServerMetricRow](dir, rundir.TableServerMetrics)
	var running bool
	for _, r := range metrics {
		running = running || r.Name == "nodellama:num_requests_running"
	}
	if len(metrics) == 0 || !running {
		t.Errorf("%d metric rows, running gauge %v", len(metrics), running)
	}
}
