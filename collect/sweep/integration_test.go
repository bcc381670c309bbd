package sweep

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/internal/runtest"
	"github.com/headroom-llm/headroom/internal/testengine"
	"github.com/headroom-llm/headroom/rundir"
)

// engineRun records s into a new run directory, giving it three minutes
// against the test engine, and stops the test unless the sweep succeeds
// and its run reads back (recordRun).
func engineRun(t *testing.T, s *Sweep) (string, *rundir.Run) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir, run, _, _, err := recordRun(t, s, ctx)
	if err != nil {
		t.Fatal(err)
	}
	return dir, run
}

// A short sweep against the real test engine (llama.cpp through
// node-llama-cpp, random-weight model, loopback): every request recorded,
// client and server agree on token counts, the log and metrics captured.
func TestSweepAgainstTestEngine(t *testing.T) {
	e := testengine.Start(t, testengine.Options{Sequences: 4, CtxPerSeq: 512})
	s := mustNew(t, e.BaseURL, WithLevels(1, 2, 4), WithRequestsPerLevel(8), WithWarmup(0),
		WithPromptTokens(Fixed(64)), WithOutputTokens(Fixed(16)), WithServerLog(e.LogPath),
		WithMetricsInterval(200*time.Millisecond), WithTimeout(time.Minute))
	dir, run := engineRun(t, s)
	m := run.Manifest
	if !m.Complete || m.Engine.Name != "node-llama-cpp" || m.Engine.Version == "" || m.Engine.Model != e.ModelName {
		t.Errorf("manifest: complete %v engine %+v", m.Complete, m.Engine)
	}
	if !m.Workload.FixedOutput || !strings.Contains(m.Workload.Tokenizer, "/tokenize") {
		t.Errorf("workload %+v", m.Workload)
	}
	reqs := runtest.Table[rundir.RequestRow](t, dir, rundir.TableRequests)
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
		// Equal when the whole stream arrived in one read (a starved host:
		// every chunk of a read carries the read's time).
		if *r.FirstTokenNS-r.SendNS > r.EndNS-r.SendNS {
			t.Errorf("%s: TTFT above E2E", r.RequestID)
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
	// The engine listens on this host: its process is found by its port and
	// its threads are sampled, so a CPU-served engine's saturation shows.
	cpu, err := rundir.ReadTable[rundir.ServerCPURow](dir, rundir.TableServerCPU)
	if err != nil || len(cpu) == 0 {
		t.Fatalf("server_cpu: %d rows, %v", len(cpu), err)
	}
	var busiest float64
	for _, r := range cpu {
		busiest = max(busiest, r.CPUUserS+r.CPUSystemS)
		if r.HostCPUs < 1 || r.PID <= 0 || r.TID <= 0 {
			t.Fatalf("server_cpu row %+v", r)
		}
	}
	if busiest <= 0 {
		t.Error("no server thread used any CPU during the sweep")
	}
	samples, _ := rundir.ReadTable[rundir.ClientSampleRow](dir, rundir.TableClientSamples)
	if len(samples) == 0 || samples[len(samples)-1].CPUWaitS == nil {
		t.Errorf("client samples without the run-queue wait: %d samples", len(samples))
	}
}

// cuttableProxy forwards loopback TCP connections to target. cut closes
// its listener and every connection at once, which is what a client sees
// when the server process dies; restore listens again on the same port,
// like the server coming back.
type cuttableProxy struct {
	t      *testing.T
	addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
}

func newCuttableProxy(t *testing.T, target string) *cuttableProxy {
	p := &cuttableProxy{t: t, target: target, conns: map[net.Conn]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.cut)
	return p
}

func (p *cuttableProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
}

func (p *cuttableProxy) pipe(c net.Conn) {
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil { // cut meanwhile
		p.mu.Unlock()
		c.Close()
		up.Close()
		return
	}
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	go func() { io.Copy(up, c); up.Close() }()
	io.Copy(c, up)
	c.Close()
}

func (p *cuttableProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0) // reset, as a dead process's sockets are
		}
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

func (p *cuttableProxy) restore() {
	for i := 0; i < 50; i++ {
		if ln, err := net.Listen("tcp", p.addr); err == nil {
			p.serve(ln)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.t.Errorf("cannot listen on %s again", p.addr)
}

// The real engine goes away in the middle of a level and comes back: the
// streams it was serving break, requests meanwhile are refused, every
// request keeps its row and the next level runs normally.
func TestTestEngineGoesAwayMidLevel(t *testing.T) {
	e := testengine.Start(t, testengine.Options{Sequences: 2, CtxPerSeq: 256})
	p := newCuttableProxy(t, strings.TrimPrefix(e.BaseURL, "http://"))
	progress := atMeasured(0, 3, func() {
		p.cut()
		time.Sleep(300 * time.Millisecond)
		p.restore()
	})
	s := mustNew(t, "http://"+p.addr, WithLevels(2, 2), WithRequestsPerLevel(10), WithWarmup(0),
		WithPromptTokens(Fixed(32)), WithOutputTokens(Fixed(48)), WithMaxErrorRate(1), WithTimeout(time.Minute),
		WithNoGPU(), WithMetricsInterval(0), WithProgress(progress))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, run, reqs, levels, err := recordRun(t, s, ctx)
	if err != nil || !run.Manifest.Complete {
		t.Fatalf("err %v complete %v", err, run.Manifest.Complete)
	}
	got := map[int32]map[string]int{0: {}, 1: {}}
	for _, r := range reqs {
		got[r.LevelIndex][r.Status]++
	}
	t.Logf("level 0: %v; level 1: %v", got[0], got[1])
	if got[0][rundir.StatusOK] < 3 || got[0][rundir.StatusOK] == 10 || len(reqs) != 20 {
		t.Errorf("level 0 %v: want 10 rows, some broken by the cut", got[0])
	}
	for status := range got[0] {
		if status != rundir.StatusOK && status != rundir.StatusStreamError && status != rundir.StatusConnect {
			t.Errorf("level 0: unexpected status %s", status)
		}
	}
	if got[1][rundir.StatusOK] != 10 {
		t.Errorf("level 1 after the engine came back: %v", got[1])
	}
	if int(levels[0].Errors) != 10-got[0][rundir.StatusOK] {
		t.Errorf("level 0 counts %d errors", levels[0].Errors)
	}
}
