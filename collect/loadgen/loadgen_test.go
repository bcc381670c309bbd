package loadgen

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/internal/runtest"
	"github.com/headroom-llm/headroom/rundir"
)

// server streams n tokens ("t0", "t1", …) for max_tokens n and keeps every body.
type server struct {
	*httptest.Server
	mu     sync.Mutex
	bodies []map[string]any
}

func newServer(t *testing.T) *server {
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]any
		data, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(data, &body); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		s.mu.Lock()
		s.bodies = append(s.bodies, body)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		n := min(int(body["max_tokens"].(float64)), 64) // a server stops at its context
		for i := range n {
			fmt.Fprintf(w, "data: {\"choices\":[{\"text\":\"t%d\",\"finish_reason\":null}]}\n\n", i)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(s.Close)
	return s
}

// memSink keeps the rows.
type memSink struct {
	mu       sync.Mutex
	requests []rundir.RequestRow
	tokens   map[string][]rundir.TokenRow
	levels   []rundir.LevelRow
	samples  int
	last     rundir.ClientSampleRow
}

func (m *memSink) Request(r rundir.RequestRow, t []rundir.TokenRow) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tokens == nil {
		m.tokens = map[string][]rundir.TokenRow{}
	}
	m.requests = append(m.requests, r)
	m.tokens[r.RequestID] = t
}
func (m *memSink) ClientSample(r rundir.ClientSampleRow) {
	m.mu.Lock()
	m.samples++
	m.last = r
	m.mu.Unlock()
}
func (m *memSink) LevelDone(l rundir.LevelRow) error {
	m.levels = append(m.levels, l)
	return nil
}

// A plan of one closed and one open level (a trace's offsets) from a
// Source of its own: every request is sent as decided, with the source's
// extra fields, the open loop at its offsets, and the rows reach the sink.
func TestRunPlanFromSource(t *testing.T) {
	srv := newServer(t)
	cfg := DefaultConfig(srv.URL + "/v1/completions")
	cfg.Model, cfg.SampleInterval = "m", 20*time.Millisecond
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	src := SourceFunc(func(l Level, seq int, warmup bool) Request {
		return Request{Prompt: fmt.Sprintf("L%d S%d", l.Index, seq), MaxTokens: 1 + seq%3, Extra: json.RawMessage(`{"top_p":0.5}`)}
	})
	offsets := Times{0, 50 * time.Millisecond, 100 * time.Millisecond, 150 * time.Millisecond}
	plan := []Level{
		{Index: 0, Concurrency: 2, Warmup: 1, Requests: 6},
		{Index: 1, Concurrency: 8, Arrivals: offsets, Requests: 10}, // the trace ends first
	}
	sink := &memSink{}
	res, err := g.Run(context.Background(), plan, src, sink)
	if err != nil || res.Stopped != nil || len(res.Levels) != 2 {
		t.Fatalf("err %v, result %+v", err, res)
	}
	if len(sink.requests) != 7+4 || sink.samples < 2 {
		t.Fatalf("%d requests, %d samples", len(sink.requests), sink.samples)
	}
	var open []rundir.RequestRow
	for _, r := range sink.requests {
		want := 1 + int(r.Seq)%3
		if r.Status != rundir.StatusOK || len(sink.tokens[r.RequestID]) != want || r.OutputTokensTarget != int64(want) {
			t.Errorf("%s: %s %q, %d tokens", r.RequestID, r.Status, r.Error, len(sink.tokens[r.RequestID]))
		}
		if r.LevelIndex == 1 {
			open = append(open, r)
		}
		if r.Warmup != (r.LevelIndex == 0 && r.Seq == 0) {
			t.Errorf("%s: warmup %v", r.RequestID, r.Warmup)
		}
	}
	sort.Slice(open, func(i, j int) bool { return open[i].Seq < open[j].Seq })
	for i, r := range open {
		if got := time.Duration(r.IntendedSendNS - sink.levels[1].StartNS); got < offsets[i] || got > offsets[i]+5*time.Millisecond {
			t.Errorf("open request %d intended at %v, trace says %v", i, got, offsets[i])
		}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for _, b := range srv.bodies {
		if b["top_p"] != 0.5 || b["model"] != "m" || b["min_tokens"] != b["max_tokens"] {
			t.Errorf("body %v", b)
		}
	}
}

// A server that closes a kept-alive connection as the next request goes out
// on it (llama-server did, mid-level): the request, which the server never
// answered, goes again on a new connection and is counted; a stream that
// began and broke is a failure, not sent again.
func TestResendWhenServerClosesKeptAliveConnection(t *testing.T) {
	type connKey struct{}
	type conn struct{ id, requests int }
	var mu sync.Mutex
	conns, served := 0, 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		c := r.Context().Value(connKey{}).(*conn)
		mu.Lock()
		c.requests++
		served++
		drop, abort := c.id == 1 && c.requests == 2, served == 4
		mu.Unlock()
		if drop { // the first connection's second request: closed unanswered
			if nc, _, err := w.(http.Hijacker).Hijack(); err == nil {
				nc.Close()
			}
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":null}]}\n\n")
		w.(http.Flusher).Flush()
		if abort { // the last request: its stream breaks after one token
			panic(http.ErrAbortHandler)
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"b\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
	}))
	srv.Config.ConnContext = func(ctx context.Context, _ net.Conn) context.Context {
		mu.Lock()
		defer mu.Unlock()
		conns++
		return context.WithValue(ctx, connKey{}, &conn{id: conns})
	}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the aborted handler
	srv.Start()
	t.Cleanup(srv.Close)
	cfg := DefaultConfig(srv.URL + "/v1/completions")
	cfg.Model, cfg.SampleInterval = "m", 10*time.Millisecond
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	src := SourceFunc(func(Level, int, bool) Request { return Request{Prompt: "p", MaxTokens: 2} })
	sink := &memSink{}
	if _, err := g.Run(context.Background(), []Level{{Concurrency: 1, Requests: 3}}, src, sink); err != nil {
		t.Fatal(err)
	}
	var status []string
	for _, r := range sink.requests {
		status = append(status, r.Status)
	}
	if want := []string{rundir.StatusOK, rundir.StatusOK, rundir.StatusStreamError}; !slices.Equal(status, want) {
		t.Errorf("statuses %q, want %q (%+v)", status, want, sink.requests)
	}
	mu.Lock()
	defer mu.Unlock()
	if resent := sink.last.Resent; served != 4 || resent == nil || *resent != 1 {
		t.Errorf("server saw %d requests, client samples count %v sent again; want 4 and 1", served, runtest.Count(resent))
	}
}

// RunLevel runs one level for a caller that picks the next from the last.
func TestRunLevelOneAtATime(t *testing.T) {
	srv := newServer(t)
	g, err := New(DefaultConfig(srv.URL + "/v1/completions"))
	if err != nil {
		t.Fatal(err)
	}
	src := SourceFunc(func(Level, int, bool) Request { return Request{Prompt: "x", MaxTokens: 2} })
	sink := &memSink{}
	conc := 1
	for i := range 3 {
		row, err := g.RunLevel(context.Background(), Level{Index: i, Concurrency: conc, Requests: 4}, src, sink)
		if err != nil || !row.Complete || row.Requests != 4 || row.Concurrency != int64(conc) {
			t.Fatalf("level %d: %v %+v", i, err, row)
		}
		conc *= 2
	}
	if len(sink.requests) != 12 || len(sink.levels) != 0 {
		t.Errorf("%d requests, %d level rows (RunLevel leaves the level row to the caller)", len(sink.requests), len(sink.levels))
	}
}

// doubling is a Planner that doubles the concurrency after each level
// until a level's requests took longer than limit; it sees each level's
// row after the sink did.
type doubling struct {
	sink  *memSink
	seen  []int
	limit int
}

func (d *doubling) Next(done []rundir.LevelRow) (Level, bool) {
	d.seen = append(d.seen, len(done))
	if len(done) != len(d.sink.levels) {
		panic("Next before LevelDone")
	}
	if len(done) >= d.limit {
		return Level{}, false
	}
	c := 1
	if len(done) > 0 {
		c = int(done[len(done)-1].Concurrency) * 2
	}
	return Level{Index: len(done), Concurrency: c, Requests: 2 * c}, true
}

// RunPlanner asks the planner for each level after the last one's rows
// were delivered, and ends when it says so; progress has no level count.
func TestRunPlanner(t *testing.T) {
	srv := newServer(t)
	cfg := DefaultConfig(srv.URL + "/v1/completions")
	var levelsSeen []int
	var mu sync.Mutex
	cfg.Progress = func(p Progress) { mu.Lock(); levelsSeen = append(levelsSeen, p.Levels); mu.Unlock() }
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	p := &doubling{sink: sink, limit: 3}
	src := SourceFunc(func(Level, int, bool) Request { return Request{Prompt: "x", MaxTokens: 1} })
	res, err := g.RunPlanner(context.Background(), p, src, sink)
	if err != nil || len(res.Levels) != 3 {
		t.Fatalf("err %v, %d levels", err, len(res.Levels))
	}
	for i, l := range res.Levels {
		if l.Concurrency != int64(1<<i) || l.Requests != int64(2<<i) {
			t.Errorf("level %d: %+v", i, l)
		}
	}
	if fmt.Sprint(p.seen) != "[0 1 2 3]" || len(sink.requests) != 2+4+8 {
		t.Errorf("Next saw %v levels; %d requests", p.seen, len(sink.requests))
	}
	for _, n := range levelsSeen {
		if n != 0 {
			t.Fatalf("progress says %d levels for a planner without Len", n)
		}
	}
}

// The output length asked comes from input: 2e9 tokens must not size an
// allocation (it once crashed the process out of memory).
func TestHugeMaxTokensAllocatesNothing(t *testing.T) {
	srv := newServer(t)
	g, err := New(DefaultConfig(srv.URL + "/v1/completions"))
	if err != nil {
		t.Fatal(err)
	}
	row, tokens := g.Do(context.Background(), Request{Prompt: "x", MaxTokens: 2_000_000_000})
	if row.Status != rundir.StatusOK || len(tokens) != 64 || cap(tokens) > 1<<16 {
		t.Errorf("%s %q: %d tokens, capacity %d", row.Status, row.Error, len(tokens), cap(tokens))
	}
}
