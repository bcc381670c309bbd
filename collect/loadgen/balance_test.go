package loadgen

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// The balancer alone: least-outstanding fills the emptiest target and goes
// round on ties; round-robin ignores what is in flight.
func TestBalancerPicks(t *testing.T) {
	lor := newBalancer(LeastOutstanding, 3)
	var got []int
	for range 3 {
		got = append(got, lor.acquire())
	}
	if fmt.Sprint(got) != "[0 1 2]" {
		t.Fatalf("least-outstanding from empty: %v, want [0 1 2]", got)
	}
	lor.release(1)
	if i := lor.acquire(); i != 1 {
		t.Errorf("least-outstanding after target 1 freed a slot: %d, want 1", i)
	}
	lor.release(0)
	lor.release(2)
	// 0 and 2 hold nothing, 1 holds one: the tie 0/2 goes round from after 1.
	if i := lor.acquire(); i != 2 {
		t.Errorf("least-outstanding tie: %d, want 2 (round from the last pick)", i)
	}
	rr := newBalancer(RoundRobin, 2)
	got = nil
	for range 5 {
		got = append(got, rr.acquire()) // nothing released: in flight does not matter
	}
	if fmt.Sprint(got) != "[0 1 0 1 0]" {
		t.Errorf("round-robin: %v, want [0 1 0 1 0]", got)
	}
	if _, err := ParseBalance("random"); err == nil {
		t.Error("ParseBalance accepted an unknown name")
	}
}

// slowServer streams 4 tokens, waiting delay before each.
func slowServer(t *testing.T, delay time.Duration, hits *atomic.Int64) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 4 {
			time.Sleep(delay)
			fmt.Fprintf(w, "data: {\"choices\":[{\"text\":\"t%d\",\"finish_reason\":null}]}\n\n", i)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(s.Close)
	return s
}

// Two replicas, one 25× slower (far apart, so that a loaded machine's late
// wake-ups, several ms each, do not close the gap): least-outstanding sends
// most requests to the fast one (a slow replica keeps its slots busy),
// round-robin splits them evenly; every row names the replica that served
// it, and the counts per replica are the servers' own.
func TestRunSpreadsOverReplicas(t *testing.T) {
	for _, tc := range []struct {
		balance Balance
		check   func(fast, slow int64) error
	}{
		{LeastOutstanding, func(fast, slow int64) error {
			if fast < 2*slow {
				return fmt.Errorf("fast %d, slow %d: want the fast replica to get at least twice as many", fast, slow)
			}
			return nil
		}},
		{RoundRobin, func(fast, slow int64) error {
			if fast-slow > 1 || slow-fast > 1 {
				return fmt.Errorf("fast %d, slow %d: want an even split", fast, slow)
			}
			return nil
		}},
	} {
		t.Run(string(tc.balance), func(t *testing.T) {
			var fastHits, slowHits atomic.Int64
			fast := slowServer(t, time.Millisecond, &fastHits)
			slow := slowServer(t, 25*time.Millisecond, &slowHits)
			cfg := DefaultConfig("")
			cfg.URLs = []string{fast.URL + "/v1/completions", slow.URL + "/v1/completions"}
			cfg.Balance, cfg.Model, cfg.SampleInterval = tc.balance, "m", 50*time.Millisecond
			g, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if g.Targets() != 2 {
				t.Fatalf("Targets() = %d, want 2", g.Targets())
			}
			sink := &memSink{}
			src := SourceFunc(func(Level, int, bool) Request { return Request{Prompt: "p", MaxTokens: 4} })
			if _, err := g.Run(context.Background(), []Level{{Index: 0, Concurrency: 4, Requests: 60}}, src, sink); err != nil {
				t.Fatal(err)
			}
			per := [2]int64{}
			for _, r := range sink.requests {
				if r.Replica == nil || *r.Replica < 0 || *r.Replica > 1 {
					t.Fatalf("request %s: replica %v, want 0 or 1", r.RequestID, r.Replica)
				}
				if r.Status != "ok" {
					t.Fatalf("request %s: %s %s", r.RequestID, r.Status, r.Error)
				}
				per[*r.Replica]++
			}
			if per[0] != fastHits.Load() || per[1] != slowHits.Load() {
				t.Errorf("rows say %v per replica, the servers saw %d and %d", per, fastHits.Load(), slowHits.Load())
			}
			if err := tc.check(per[0], per[1]); err != nil {
				t.Error(err)
			}
		})
	}
}

// One target: rows carry no replica (the column stays null).
func TestOneTargetNoReplica(t *testing.T) {
	srv := newServer(t)
	cfg := DefaultConfig(srv.URL + "/v1/completions")
	cfg.Model = "m"
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	row, _ := g.Do(context.Background(), Request{Prompt: "p", MaxTokens: 2})
	if row.Replica != nil {
		t.Errorf("one server: replica %d, want null", *row.Replica)
	}
	cfg.URLs = []string{srv.URL + "/v1/completions", "ftp://x"}
	if _, err := New(cfg); err == nil {
		t.Error("New accepted a replica URL that is not http(s)")
	}
}
