package sweep

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/internal/fakeserver"
	"github.com/headroom-llm/headroom/rundir"
)

func TestRecordWritesARun(t *testing.T) {
	const key = "sk-test-key-never-on-disk-4242"
	f := newFakeServer(t, func(f *fakeServer) { f.wantKey = key; f.tokenDelay = time.Millisecond })
	dir := filepath.Join(t.TempDir(), "run")
	logFile := filepath.Join(t.TempDir(), "server.log")
	os.WriteFile(logFile, []byte("old\n"), 0o644)
	stopLog := make(chan struct{})
	go func() { // a server writing its log while the sweep runs
		for i := 0; ; i++ {
			select {
			case <-stopLog:
				return
			case <-time.After(20 * time.Millisecond):
			}
			lf, _ := os.OpenFile(logFile, os.O_APPEND|os.O_WRONLY, 0)
			lf.WriteString("INFO step " + strings.Repeat("x", i%5) + "\n")
			lf.Close()
		}
	}()
	// the server process passes the load to f and prints its arguments
	addr := freeAddr(t)
	s := mustNew(t, "http://"+addr, WithAPIKey(key), WithLevels(1, 2), WithRequestsPerLevel(4), WithWarmup(1),
		WithPromptTokens(Fixed(50)), WithOutputTokens(Fixed(6)), WithServerLog(logFile),
		WithServerCmd(fakeserver.Command(fakeserver.Options{Addr: addr, Proxy: f.URL}, "server", "--api-key", key, "--port", "1"), 10*time.Second),
		WithMetricsInterval(50*time.Millisecond), WithLabel("test"))
	run, err := s.Record(context.Background(), dir)
	close(stopLog)
	if err != nil {
		t.Fatal(err)
	}
	m := run.Manifest
	if !m.Complete || m.Stopped != nil || m.Label != "test" || m.Engine.Model != "fake-model" || m.Workload == nil {
		t.Fatalf("manifest %+v", m)
	}
	if !m.Workload.FixedOutput || m.Workload.Levels[1] != 2 || m.Host.CPUs < 1 {
		t.Errorf("workload %+v host %+v", m.Workload, m.Host)
	}
	if got := strings.Join(m.Engine.Flags, " "); !strings.Contains(got, "--api-key <redacted>") {
		t.Errorf("flags %q", got)
	}
	if err := run.Check(); err != nil {
		t.Fatal(err)
	}
	reqs, _ := rundir.ReadTable[rundir.RequestRow](dir, rundir.TableRequests)
	toks, _ := rundir.ReadTable[rundir.TokenRow](dir, rundir.TableTokens)
	levels, _ := rundir.ReadTable[rundir.LevelRow](dir, rundir.TableLevels)
	metrics, _ := rundir.ReadTable[rundir.ServerMetricRow](dir, rundir.TableServerMetrics)
	samples, _ := rundir.ReadTable[rundir.ClientSampleRow](dir, rundir.TableClientSamples)
	lines, _ := rundir.ReadTable[rundir.ServerLogLineRow](dir, rundir.TableServerLogLines)
	if len(reqs) != 10 || len(toks) != 60 || len(levels) != 2 || levels[0].LevelIndex != 0 || levels[1].LevelIndex != 1 {
		t.Errorf("%d requests, %d tokens, levels %+v", len(reqs), len(toks), levels)
	}
	// one part file per level for the per-level tables
	for _, table := range []string{rundir.TableRequests, rundir.TableTokens, rundir.TableLevels} {
		if parts, _ := rundir.TableParts(dir, table); len(parts) != 2 {
			t.Errorf("%s: %d parts, want one per level", table, len(parts))
		}
	}
	var sawHistogram bool
	for _, r := range metrics {
		if r.Name == "vllm:e2e_request_latency_seconds_bucket" && r.Labels == `le="+Inf",model_name="fake-model"` && r.Value == 2 {
			sawHistogram = true
		}
	}
	if !sawHistogram || len(samples) < 2 {
		t.Errorf("metrics %d rows (histogram %v), %d client samples", len(metrics), sawHistogram, len(samples))
	}
	log, _ := os.ReadFile(filepath.Join(dir, rundir.ServerLogFile))
	// the followed log's start-up (here its one old line) is kept, once, first
	if !bytes.HasPrefix(log, []byte("old\n")) || bytes.Count(log, []byte("old\n")) != 1 || !bytes.Contains(log, []byte("INFO step")) || !bytes.Contains(log, []byte("server --api-key")) {
		t.Errorf("server.log:\n%s", log)
	}
	if n := bytes.Count(log, []byte("\n")); int(n) != len(lines) || lines[len(lines)-1].Line != int64(n) {
		t.Errorf("%d log lines, %d line rows", n, len(lines))
	}
	// the key is sent but written nowhere: not in the manifest, the tables or the log
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			data, _ := os.ReadFile(path)
			if bytes.Contains(data, []byte(key)) {
				t.Errorf("%s contains the API key", path)
			}
		}
		return nil
	})
}

// Ctrl-C: the run stops within a second and stays readable, marked
// incomplete, with the level in progress named.
func TestRecordInterrupted(t *testing.T) {
	f := newFakeServer(t, func(f *fakeServer) { f.tokenDelay = 20 * time.Millisecond })
	dir := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithCancel(context.Background())
	var at time.Time
	s := mustNew(t, f.URL, WithLevels(1, 2, 4), WithRequestsPerLevel(4), WithWarmup(0),
		WithPromptTokens(Fixed(50)), WithOutputTokens(Fixed(20)), WithProgress(func(p Progress) {
			if p.LevelIndex == 1 && p.Done == 1 && at.IsZero() {
				at = time.Now()
				cancel()
			}
		}))
	run, err := s.Record(ctx, dir)
	// Writing Parquet under the race detector is some 50 times slower.
	if took := time.Since(at); took > time.Second && !raceEnabled || took > 10*time.Second {
		t.Errorf("stopping took %v", took)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	reread, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := reread.Manifest
	if m.Complete || m.Stopped == nil || m.Stopped.Reason != "interrupted" || m.Stopped.Level == nil || *m.Stopped.Level != 1 {
		t.Fatalf("manifest complete=%v stopped=%+v", m.Complete, m.Stopped)
	}
	if err := run.Check(); err != nil {
		t.Fatal(err)
	}
	levels, _ := rundir.ReadTable[rundir.LevelRow](dir, rundir.TableLevels)
	reqs, _ := rundir.ReadTable[rundir.RequestRow](dir, rundir.TableRequests)
	if len(levels) != 2 || !levels[0].Complete || levels[1].Complete {
		t.Errorf("levels %+v", levels)
	}
	if len(reqs) < 5 {
		t.Errorf("%d requests", len(reqs))
	}
}
