package sweep

import (
	"context"
	"errors"
	"math"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/collect/loadgen"
	"github.com/headroom-llm/headroom/rundir"
)

func TestStreamFormats(t *testing.T) {
	tests := []struct {
		name      string
		configure func(*fakeServer)
		opts      []Option
		status    string
		chunks    int64
		errorHas  string
	}{
		{name: "plain", status: rundir.StatusOK, chunks: 4},
		{name: "chat role chunk not a token", configure: func(f *fakeServer) { f.chat = true },
			opts: []Option{WithEndpoint(EndpointChat)}, status: rundir.StatusOK, chunks: 4},
		{name: "CRLF", configure: func(f *fakeServer) { f.crlf = true }, status: rundir.StatusOK, chunks: 4},
		{name: "no space after data:", configure: func(f *fakeServer) { f.noSpace = true }, status: rundir.StatusOK, chunks: 4},
		{name: "no [DONE] but finish_reason", configure: func(f *fakeServer) { f.noDone = true }, status: rundir.StatusOK, chunks: 4},
		{name: "long line", configure: func(f *fakeServer) { f.longLine = 100 << 10 }, status: rundir.StatusOK, chunks: 4},
		{name: "error inside 200 stream", configure: func(f *fakeServer) { f.streamError = "CUDA out of memory" },
			status: rundir.StatusServerError, chunks: 1, errorHas: "CUDA out of memory"},
		{name: "malformed chunk", configure: func(f *fakeServer) { f.garbage = true },
			status: rundir.StatusStreamError, chunks: 1, errorHas: "malformed chunk"},
		{name: "HTTP 500", configure: func(f *fakeServer) { f.status = 500 }, status: rundir.StatusHTTPError, errorHas: "HTTP 500"},
		{name: "HTTP 429", configure: func(f *fakeServer) { f.status = 429 }, status: rundir.StatusHTTPError, errorHas: "overloaded"},
		{name: "disconnect mid-stream", configure: func(f *fakeServer) { f.disconnect = 2 },
			status: rundir.StatusStreamError, chunks: 2, errorHas: "closed mid-stream"},
		{name: "stalled stream times out", configure: func(f *fakeServer) { f.stallAfter = 1 },
			opts: []Option{WithTimeout(300 * time.Millisecond)}, status: rundir.StatusTimeout, chunks: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeServer(t, tt.configure)
			cfg := tt.configure
			opts := append([]Option{WithLevels(1), WithRequestsPerLevel(2), WithWarmup(0), WithPromptTokens(Fixed(40)),
				WithOutputTokens(Fixed(4)), WithMaxErrorRate(1)}, tt.opts...)
			s := mustNew(t, f.URL, opts...)
			if cfg != nil {
				// Prepare against a healthy server, then inject the fault.
				status, streamError, disconnect, stall, garbage := f.status, f.streamError, f.disconnect, f.stallAfter, f.garbage
				f.status, f.streamError, f.disconnect, f.stallAfter, f.garbage = 0, "", 0, 0, false
				if err := s.Prepare(context.Background()); err != nil {
					t.Fatal(err)
				}
				f.status, f.streamError, f.disconnect, f.stallAfter, f.garbage = status, streamError, disconnect, stall, garbage
			}
			rec, _, err := runSweep(t, s)
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.requests) != 2 {
				t.Fatalf("%d rows, want 2", len(rec.requests))
			}
			for _, r := range rec.requests {
				if r.Status != tt.status || r.ClientChunks != tt.chunks || !strings.Contains(r.Error, tt.errorHas) {
					t.Errorf("status %q chunks %d error %q; want %q, %d, %q", r.Status, r.ClientChunks, r.Error, tt.status, tt.chunks, tt.errorHas)
				}
				if r.Status == rundir.StatusOK {
					if r.FirstTokenNS == nil || *r.FirstTokenNS <= r.SendNS || r.EndNS < *r.FirstTokenNS {
						t.Errorf("times: send %d first %v end %d", r.SendNS, r.FirstTokenNS, r.EndNS)
					}
					if r.FinishReason != "length" {
						t.Errorf("finish reason %q", r.FinishReason)
					}
				}
				if r.EndNS < r.SendNS {
					t.Errorf("end before send")
				}
			}
		})
	}
}

func TestMinTokensFallback(t *testing.T) {
	f := newFakeServer(t, func(f *fakeServer) { f.rejectMin = true })
	s := mustNew(t, f.URL, WithLevels(1), WithRequestsPerLevel(3), WithWarmup(0), WithPromptTokens(Fixed(40)), WithOutputTokens(Fixed(4)))
	rec, _, err := runSweep(t, s)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rec.requests {
		if r.Status != rundir.StatusOK {
			t.Errorf("%s: %s %s", r.RequestID, r.Status, r.Error)
		}
	}
	w := s.Workload()
	if w.FixedOutput || !strings.Contains(w.FixedOutputNote, "min_tokens") {
		t.Errorf("fixed output %v, note %q", w.FixedOutput, w.FixedOutputNote)
	}
	if ws := s.Warnings(nil); len(ws) == 0 || !strings.Contains(ws[0], "output lengths vary") {
		t.Errorf("warnings %q", ws)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	last := f.bodies[len(f.bodies)-1]
	if _, ok := last["min_tokens"]; ok {
		t.Error("still sending min_tokens after the 400")
	}
	if _, ok := last["ignore_eos"]; ok {
		t.Error("still sending ignore_eos after the 400")
	}
}

func TestFixedOutputAccepted(t *testing.T) {
	f := newFakeServer(t, nil)
	s := mustNew(t, f.URL, WithLevels(2), WithRequestsPerLevel(4), WithWarmup(2), WithPromptTokens(Fixed(40)), WithOutputTokens(Fixed(5)))
	rec, _, err := runSweep(t, s)
	if err != nil {
		t.Fatal(err)
	}
	if w := s.Workload(); !w.FixedOutput {
		t.Errorf("fixed output false: %s", w.FixedOutputNote)
	}
	var warm, measured int
	for _, r := range rec.requests {
		if r.Warmup {
			warm++
		} else {
			measured++
		}
	}
	if warm != 2 || measured != 4 || rec.levels[0].Requests != 4 {
		t.Errorf("warm-up %d, measured %d, level says %d", warm, measured, rec.levels[0].Requests)
	}
	l := rec.levels[0]
	for _, r := range rec.requests {
		if r.Warmup && r.EndNS > l.WarmupEndNS || !r.Warmup && r.SendNS < l.WarmupEndNS {
			t.Errorf("%s (warmup %v) outside its phase", r.RequestID, r.Warmup)
		}
	}
}

func TestClosedLoopConcurrency(t *testing.T) {
	f := newFakeServer(t, func(f *fakeServer) { f.tokenDelay = 5 * time.Millisecond })
	s := mustNew(t, f.URL, WithLevels(1, 4), WithRequestsPerLevel(12), WithWarmup(0), WithPromptTokens(Fixed(40)), WithOutputTokens(Fixed(10)))
	rec, _, err := runSweep(t, s)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.maxFlight.Load(); got != 4 {
		t.Errorf("at most %d requests in flight, want 4", got)
	}
	if len(rec.levels) != 2 || rec.levels[0].Concurrency != 1 || rec.levels[1].Concurrency != 4 || !rec.levels[1].Complete {
		t.Errorf("levels %+v", rec.levels)
	}
	if rec.levels[0].EndNS > rec.levels[1].StartNS {
		t.Error("levels overlap")
	}
}

// The open loop sends at the seeded Poisson schedule: intended send times
// are exactly the seeded exponential gaps, actual sends never precede them.
func TestPoissonSchedule(t *testing.T) {
	f := newFakeServer(t, nil)
	const rate = 200.0
	s := mustNew(t, f.URL, WithRates(64, rate), WithRequestsPerLevel(60), WithWarmup(5), WithSeed(42),
		WithPromptTokens(Fixed(40)), WithOutputTokens(Fixed(2)))
	rec, _, err := runSweep(t, s)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.requests) != 65 {
		t.Fatalf("%d requests", len(rec.requests))
	}
	sort.Slice(rec.requests, func(i, j int) bool { return rec.requests[i].Seq < rec.requests[j].Seq })
	next := seqOf(s.arrivals(0, rate))
	start := rec.levels[0].StartNS
	var offsets []float64
	for _, r := range rec.requests {
		want := next()
		got := time.Duration(r.IntendedSendNS - start)
		// the level's start is stamped just before the schedule's start
		if d := got - want; d < 0 || d > time.Millisecond {
			t.Fatalf("request %d intended at %v, schedule says %v", r.Seq, got, want)
		}
		if r.SendNS < r.IntendedSendNS {
			t.Errorf("request %d sent before its time", r.Seq)
		}
		offsets = append(offsets, want.Seconds())
		if r.Warmup != (r.Seq < 5) {
			t.Errorf("request %d warmup %v", r.Seq, r.Warmup)
		}
	}
	// the gaps are exponential with mean 1/rate (a loose check on 65 gaps)
	mean := offsets[len(offsets)-1] / float64(len(offsets))
	if math.Abs(mean*rate-1) > 0.35 {
		t.Errorf("mean gap %.4f s, want about %.4f", mean, 1/rate)
	}
	// same seed, same schedule; another seed, another one
	other := mustNew(t, "http://127.0.0.1:1", WithSeed(43))
	a, b, c := seqOf(s.arrivals(0, rate)), seqOf(s.arrivals(0, rate)), seqOf(other.arrivals(0, rate))
	if a() != b() || a() == c() {
		t.Error("schedule not determined by the seed")
	}
}

// seqOf returns a schedule's offsets one after the other.
func seqOf(sched loadgen.Schedule) func() time.Duration {
	seq := 0
	return func() time.Duration {
		d, _ := sched.At(seq)
		seq++
		return d
	}
}

func TestSameSeedSameWorkload(t *testing.T) {
	bodies := func(seed int64) []string {
		f := newFakeServer(t, nil)
		s := mustNew(t, f.URL, WithLevels(1), WithRequestsPerLevel(4), WithWarmup(0), WithSeed(seed),
			WithPromptTokens(Dist{Kind: DistNormal, Mean: 80, StdDev: 20}), WithOutputTokens(Dist{Kind: DistLognormal, Mean: 6, StdDev: 3}))
		if _, _, err := runSweep(t, s); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, b := range f.bodies[1:] { // after the probe request
			out = append(out, b["prompt"].(string)+"|"+strings.Repeat("x", int(b["max_tokens"].(float64))))
		}
		return out
	}
	a, b, c := bodies(7), bodies(7), bodies(8)
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Error("same seed, different prompts")
	}
	if strings.Join(a, "\n") == strings.Join(c, "\n") {
		t.Error("different seeds, same prompts")
	}
}

func TestMaxErrorRateStops(t *testing.T) {
	f := newFakeServer(t, nil)
	s := mustNew(t, f.URL, WithLevels(2, 4), WithRequestsPerLevel(40), WithWarmup(0), WithMaxErrorRate(0.2),
		WithPromptTokens(Fixed(40)), WithOutputTokens(Fixed(2)))
	if err := s.Prepare(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.status = 503
	rec, res, err := runSweep(t, s)
	if !errors.Is(err, ErrMaxErrorRate) {
		t.Fatalf("err %v", err)
	}
	if res.Stopped == nil || res.Stopped.Reason != "max-error-rate" || *res.Stopped.Level != 0 {
		t.Fatalf("stopped %+v", res.Stopped)
	}
	if len(rec.levels) != 1 || rec.levels[0].Complete {
		t.Errorf("levels %+v", rec.levels)
	}
	if n := len(rec.requests); n < 10 || n >= 40 {
		t.Errorf("%d requests before stopping", n)
	}
}

func TestCancelStopsQuickly(t *testing.T) {
	f := newFakeServer(t, func(f *fakeServer) { f.tokenDelay = 50 * time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	var chunks atomic.Int64
	var canceledAt atomic.Int64
	// Cancel once all four streams are under way.
	observe := func(string, int, int64, []byte) {
		if chunks.Add(1) == 12 {
			canceledAt.Store(time.Now().UnixNano())
			cancel()
		}
	}
	s := mustNew(t, f.URL, WithLevels(4), WithRequestsPerLevel(100), WithWarmup(0), WithPromptTokens(Fixed(40)),
		WithOutputTokens(Fixed(200)), WithChunkObserver(observe))
	rec := newMemRecorder()
	res, err := s.Run(ctx, rec)
	if took := time.Duration(time.Now().UnixNano() - canceledAt.Load()); took > time.Second && !raceEnabled || took > 10*time.Second {
		t.Errorf("took %v to stop", took)
	}
	if !errors.Is(err, context.Canceled) || res.Stopped == nil || res.Stopped.Reason != "interrupted" {
		t.Fatalf("err %v stopped %+v", err, res.Stopped)
	}
	var canceled int
	for _, r := range rec.requests {
		if r.Status == rundir.StatusCanceled {
			canceled++
		}
	}
	if canceled != 4 || len(rec.levels) != 1 {
		t.Errorf("%d canceled rows, %d levels", canceled, len(rec.levels))
	}
}

func TestAPIKeySent(t *testing.T) {
	f := newFakeServer(t, func(f *fakeServer) { f.wantKey = "sk-secret-123" })
	s := mustNew(t, f.URL, WithAPIKey("sk-secret-123"), WithLevels(1), WithRequestsPerLevel(1), WithWarmup(0),
		WithPromptTokens(Fixed(40)), WithOutputTokens(Fixed(2)))
	rec, _, err := runSweep(t, s)
	if err != nil || rec.requests[0].Status != rundir.StatusOK {
		t.Fatalf("%v %+v", err, rec.requests)
	}
}

// An open loop offered far more than the server serves, under a cap of 2:
// the requests wait for a slot (send_ns well after intended_send_ns: the
// coordinated omission the cap makes visible), but the client itself kept
// up, so nothing says it fell behind.
func TestOpenLoopCapWaitIsNotClientLag(t *testing.T) {
	f := newFakeServer(t, func(f *fakeServer) { f.tokenDelay = 20 * time.Millisecond })
	s := mustNew(t, f.URL, WithRates(2, 50), WithRequestsPerLevel(12), WithWarmup(0), WithSeed(7),
		WithPromptTokens(Fixed(40)), WithOutputTokens(Fixed(5)), WithNoGPU(), WithMetricsInterval(0))
	rec, res, err := runSweep(t, s)
	if err != nil {
		t.Fatal(err)
	}
	var maxWait time.Duration
	for _, r := range rec.requests {
		maxWait = max(maxWait, time.Duration(r.SendNS-r.IntendedSendNS))
	}
	// 12 requests of ~80 ms two at a time take ~480 ms; the schedule offers
	// them within ~240 ms, so the last ones wait for a slot
	if maxWait < 100*time.Millisecond {
		t.Errorf("largest wait for a slot %v: the cap did not hold requests back", maxWait)
	}
	var lag time.Duration
	for _, sm := range rec.samples {
		lag = max(lag, time.Duration(sm.SendLagMaxS*1e9))
	}
	// The waits for a slot reach maxWait; a lag of a quarter of that would
	// be them counted as the client's (a loaded host alone pauses ~10 ms).
	if lag > max(20*time.Millisecond, maxWait/4) {
		t.Errorf("client send lag %v with waits for a slot up to %v: the wait was counted as the client falling behind", lag, maxWait)
	}
	for _, w := range s.Warnings(res.Levels) {
		if strings.Contains(w, "client fell behind") {
			t.Errorf("warning: %s", w)
		}
	}
}
