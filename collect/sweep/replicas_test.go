package sweep

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/internal/testengine"
	"github.com/headroom-llm/headroom/rundir"
)

// A sweep spread over two real test engines (two llama.cpp processes on
// loopback, one replica each): every request names the replica that
// served it, and each replica's own log confirms the count; each replica's
// log, /metrics and CPU are kept apart, labelled by replica, the metrics
// of both taken in the same ticks.
func TestSweepAgainstTwoReplicas(t *testing.T) {
	es := testengine.StartAll(t, testengine.Options{Sequences: 2, CtxPerSeq: 256}, testengine.Options{Sequences: 2, CtxPerSeq: 256})
	e0, e1 := es[0], es[1]
	s := mustNew(t, e0.BaseURL+","+e1.BaseURL, WithLevels(2, 4), WithRequestsPerLevel(8), WithWarmup(0),
		WithPromptTokens(Fixed(32)), WithOutputTokens(Fixed(8)), WithServerLog(e0.LogPath, e1.LogPath),
		WithMetricsInterval(200*time.Millisecond), WithTimeout(time.Minute))
	dir, run := engineRun(t, s)
	m := run.Manifest
	if !m.Complete || len(m.Replicas) != 2 || m.Workload.Balance != "least-outstanding" {
		t.Fatalf("manifest: complete %v, replicas %+v, balance %q", m.Complete, m.Replicas, m.Workload.Balance)
	}
	for i, r := range m.Replicas {
		want := []string{e0.BaseURL, e1.BaseURL}[i]
		if r.Index != i || r.BaseURL != want || r.Engine == nil || r.Engine.Name != "node-llama-cpp" ||
			r.Engine.MaxContextTokens != 256 || r.ServerLog != rundir.ReplicaLogFile(i) {
			t.Errorf("replica %d: %+v engine %+v", i, r, r.Engine)
		}
	}
	if m.Engine.Name != "node-llama-cpp" || m.Engine.BaseURL != e0.BaseURL {
		t.Errorf("the set's engine: %+v", m.Engine)
	}

	reqs, err := rundir.ReadTable[rundir.RequestRow](dir, rundir.TableRequests)
	if err != nil || len(reqs) != 16 {
		t.Fatalf("%d requests, %v", len(reqs), err)
	}
	var per [2]int
	for _, r := range reqs {
		if r.Replica == nil || *r.Replica < 0 || *r.Replica > 1 || r.Status != rundir.StatusOK {
			t.Fatalf("request %s: replica %v, %s %s", r.RequestID, r.Replica, r.Status, r.Error)
		}
		per[*r.Replica]++
	}
	// Each engine's own log: one "finish" line per request it served, plus
	// the one short request every replica gets before the first level.
	for i, e := range []*testengine.Engine{e0, e1} {
		finished := countLines(t, e.LogPath, " finish req=")
		if finished != per[i]+1 {
			t.Errorf("replica %d: the run's rows say %d requests, its log finished %d (want rows + 1 check request)", i, per[i], finished)
		}
		if per[i] < 4 {
			t.Errorf("replica %d served %d of 16 requests: least-outstanding over two equal replicas should split them", i, per[i])
		}
	}
	if _, err := os.Stat(filepath.Join(dir, rundir.ServerLogFile)); err == nil {
		t.Error("a replica run wrote server.log: each replica's log is server-<i>.log")
	}

	lines, _ := rundir.ReadTable[rundir.ServerLogLineRow](dir, rundir.TableServerLogLines)
	var linesOf [2]int64
	for _, l := range lines {
		if l.Replica == nil {
			t.Fatalf("log line %d without a replica", l.Line)
		}
		linesOf[*l.Replica] = max(linesOf[*l.Replica], l.Line)
	}
	for i := range 2 {
		if n := countLines(t, filepath.Join(dir, rundir.ReplicaLogFile(i)), ""); int64(n) != linesOf[i] {
			t.Errorf("replica %d: %d line times for %d lines in its log", i, linesOf[i], n)
		}
	}

	metrics, _ := rundir.ReadTable[rundir.ServerMetricRow](dir, rundir.TableServerMetrics)
	ticks := map[int64][2]bool{}
	for _, r := range metrics {
		if r.Replica == nil {
			t.Fatalf("metric %s without a replica", r.Name)
		}
		if r.Name == "nodellama:num_requests_running" {
			v := ticks[r.TimeNS]
			v[*r.Replica] = true
			ticks[r.TimeNS] = v
		}
	}
	both := 0
	for _, v := range ticks {
		if v[0] && v[1] {
			both++
		}
	}
	if both == 0 || both < len(ticks)-1 {
		t.Errorf("%d scrape times, %d with both replicas: the replicas are not scraped in the same ticks", len(ticks), both)
	}

	cpu, _ := rundir.ReadTable[rundir.ServerCPURow](dir, rundir.TableServerCPU)
	pids := map[int32]map[int32]bool{}
	for _, r := range cpu {
		if r.Replica == nil {
			t.Fatalf("server_cpu row without a replica: %+v", r)
		}
		if pids[*r.Replica] == nil {
			pids[*r.Replica] = map[int32]bool{}
		}
		pids[*r.Replica][r.PID] = true
	}
	if len(pids) != 2 {
		t.Fatalf("server CPU of %d replicas, want 2", len(pids))
	}
	for p := range pids[0] {
		if pids[1][p] {
			t.Errorf("process %d sampled as both replicas", p)
		}
	}
}

// countLines counts the lines of a file that contain sub.
func countLines(t *testing.T, path, sub string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), sub) {
			n++
		}
	}
	return n
}

// Settings that do not fit several replicas are refused before anything
// starts, in one line naming the problem.
func TestReplicaSettingsRefused(t *testing.T) {
	for _, tc := range []struct {
		base string
		opts []Option
		want string
	}{
		{"http://a:1,http://a:1", nil, "given twice"},
		{"http://a:1,,http://b:1", nil, "empty address"},
		{"http://a:1,http://b:1", []Option{WithServerCmd("llama-server", 0)}, "--server-cmd starts one server"},
		{"http://a:1,http://b:1", []Option{WithServerLog("x.log")}, "1 server logs for 2 replicas"},
		{"http://a:1", []Option{WithServerLog("x.log", "y.log")}, "2 server logs for one server"},
		{"http://a:1,http://b:1", []Option{WithBalance("random")}, "balance"},
	} {
		_, err := New(tc.base, tc.opts...)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("New(%q): %v, want one line with %q", tc.base, err, tc.want)
		}
	}
}
