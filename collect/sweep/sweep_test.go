package sweep

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

func mustNew(t *testing.T, url string, opts ...Option) *Sweep {
	t.Helper()
	s, err := New(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func runSweep(t *testing.T, s *Sweep) (*memRecorder, *Result, error) {
	t.Helper()
	rec := newMemRecorder()
	res, err := s.Run(context.Background(), rec)
	return rec, res, err
}

// stampTolerance is how late the client may stamp a chunk the server wrote
// on the same host: 5 ms on a loaded 2-core machine; under the race
// detector, which slows every goroutine switch, 25 ms (the precise figures
// are measured by bench/holdstreams, docs/performance.md).
var stampTolerance = map[bool]time.Duration{false: 5 * time.Millisecond, true: 25 * time.Millisecond}[raceEnabled]

// The client's times must match what the server did: 50 ms to the first
// token, then 10 ms between tokens, and each chunk's receive time must be
// just after the server wrote it.
func TestTimingAgainstServerStamps(t *testing.T) {
	f := newFakeServer(t, func(f *fakeServer) { f.firstDelay, f.tokenDelay = 50*time.Millisecond, 10*time.Millisecond })
	var mu sync.Mutex
	observed := map[string]int64{} // request ID -> server request number
	observe := func(id string, index int, _ int64, text []byte) {
		if index == 0 {
			n, _ := strconv.ParseInt(strings.Split(string(text), ":")[0], 10, 64)
			mu.Lock()
			observed[id] = n
			mu.Unlock()
		}
	}
	s := mustNew(t, f.URL, WithLevels(1, 2), WithRequestsPerLevel(3), WithWarmup(0),
		WithPromptTokens(Fixed(64)), WithOutputTokens(Fixed(8)), WithChunkObserver(observe))
	rec, res, err := runSweep(t, s)
	if err != nil || res.Stopped != nil {
		t.Fatalf("run: %v %+v", err, res.Stopped)
	}
	if len(rec.requests) != 6 {
		t.Fatalf("%d requests, want 6", len(rec.requests))
	}
	// The machine is shared and noisy: the server may sleep longer than
	// asked, so the exact comparison is against the server's write times
	// below; here only what no delay can explain is an error.
	for _, r := range rec.requests {
		if r.Status != rundir.StatusOK {
			t.Fatalf("%s: %s %s", r.RequestID, r.Status, r.Error)
		}
		ttft := time.Duration(*r.FirstTokenNS - r.SendNS)
		if ttft < 50*time.Millisecond {
			t.Errorf("%s: TTFT %v, want at least the server's 50 ms", r.RequestID, ttft)
		}
		toks := rec.tokens[r.RequestID]
		if len(toks) != 8 || r.ClientChunks != 8 || *r.ServerCompletionTokens != 8 {
			t.Fatalf("%s: %d chunks, server says %d", r.RequestID, len(toks), *r.ServerCompletionTokens)
		}
		for i := 1; i < len(toks); i++ {
			itl := time.Duration(toks[i].RecvNS - toks[i-1].RecvNS)
			// The client may be up to stampTolerance late on the earlier
			// chunk (the bound checked against the server's stamps below).
			if itl < 10*time.Millisecond-stampTolerance {
				t.Errorf("%s: ITL %d = %v, want at least the server's 10 ms less %v", r.RequestID, i, itl, stampTolerance)
			}
		}
		if toks[0].RecvNS != *r.FirstTokenNS || r.EndNS < toks[len(toks)-1].RecvNS {
			t.Errorf("%s: first token/end inconsistent with chunks", r.RequestID)
		}
	}
	// Against the server's own write times (same host, same clock): every
	// chunk is stamped after the server wrote it, and soon after. The
	// server stamps a chunk before it writes it, so a pause of either
	// goroutine on a shared host (a CI machine fsyncing) shows as one late
	// chunk and the gaps on either side of it: up to maxLate such lines
	// (two pauses) are logged, more fail the test, and the median delay
	// must stay a fifth of the tolerance.
	const maxLate = 6
	var late []string
	var delays []float64
	lateIf := func(bad bool, format string, args ...any) {
		if bad {
			late = append(late, fmt.Sprintf(format, args...))
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range rec.requests {
		reqNo := observed[r.RequestID]
		stamps := f.sends[reqNo]
		toks := rec.tokens[r.RequestID]
		if len(stamps) != len(toks) {
			t.Fatalf("%s: server request %d wrote %d chunks, client has %d", r.RequestID, reqNo, len(stamps), len(toks))
		}
		for i, tok := range toks {
			d := time.Duration(tok.RecvNS - stamps[i])
			delays = append(delays, float64(d))
			if d < 0 {
				t.Errorf("%s chunk %d: received %v before the server wrote it", r.RequestID, i, -d)
			}
			lateIf(d > stampTolerance, "%s chunk %d: received %v after the server wrote it", r.RequestID, i, d)
			if i > 0 {
				itl, gap := tok.RecvNS-toks[i-1].RecvNS, stamps[i]-stamps[i-1]
				d := time.Duration(itl - gap)
				lateIf(d < -stampTolerance || d > stampTolerance, "%s chunk %d: ITL %v, server gap %v", r.RequestID, i, time.Duration(itl), time.Duration(gap))
			}
		}
		ttft := time.Duration(*r.FirstTokenNS - r.SendNS)
		serverTTFT := time.Duration(stamps[0] - r.SendNS)
		lateIf(ttft-serverTTFT > stampTolerance, "%s: TTFT %v, server wrote the first token %v after the send", r.RequestID, ttft, serverTTFT)
	}
	for _, l := range late {
		t.Log(l)
	}
	if len(late) > maxLate {
		t.Errorf("%d times off the server's by more than %v, at most %d allowed (listed above)", len(late), stampTolerance, maxLate)
	}
	slices.Sort(delays)
	if med := time.Duration(delays[len(delays)/2]); med > stampTolerance/5 {
		t.Errorf("median delay from the server's write to the client's stamp %v, want at most %v", med, stampTolerance/5)
	}
}

func TestPromptsSizedWithTokenizer(t *testing.T) {
	f := newFakeServer(t, nil)
	s := mustNew(t, f.URL, WithLevels(1), WithRequestsPerLevel(5), WithWarmup(0),
		WithPromptTokens(Dist{Kind: DistUniform, Min: 100, Max: 300}), WithOutputTokens(Fixed(2)))
	rec, _, err := runSweep(t, s)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range rec.requests {
		if *r.ServerPromptTokens != r.PromptTokensTarget {
			t.Errorf("%s: server counted %d prompt tokens, target %d", r.RequestID, *r.ServerPromptTokens, r.PromptTokensTarget)
		}
		if r.PromptTokensTarget < 100 || r.PromptTokensTarget > 300 {
			t.Errorf("target %d outside 100..300", r.PromptTokensTarget)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range f.bodies {
		p := b["prompt"].(string)
		first := strings.Join(strings.Fields(p)[:3], " ")
		if seen[first] {
			t.Errorf("two prompts start with %q", first)
		}
		seen[first] = true
	}
	if w := s.Workload(); !strings.Contains(w.Tokenizer, "exact") {
		t.Errorf("tokenizer %q", w.Tokenizer)
	}
}
