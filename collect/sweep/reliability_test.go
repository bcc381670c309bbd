package sweep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/headroom-llm/headroom/collect/loadgen"
	"github.com/headroom-llm/headroom/collect/server"
	"github.com/headroom-llm/headroom/internal/fakeserver"
	"github.com/headroom-llm/headroom/internal/runtest"
	"github.com/headroom-llm/headroom/rundir"
)

// recordRun records a sweep into a new run directory and reads back its
// requests and levels; the run must pass Check whatever happened.
func recordRun(t *testing.T, s *Sweep, ctx context.Context) (string, *rundir.Run, []rundir.RequestRow, []rundir.LevelRow, error) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	run, err := s.Record(ctx, dir)
	if run == nil {
		t.Fatalf("no run written: %v", err)
	}
	if cerr := run.Check(); cerr != nil {
		t.Fatalf("the run does not read back: %v", cerr)
	}
	reqs, rerr := rundir.ReadTable[rundir.RequestRow](dir, rundir.TableRequests)
	levels, lerr := rundir.ReadTable[rundir.LevelRow](dir, rundir.TableLevels)
	if rerr != nil || lerr != nil {
		t.Fatal(rerr, lerr)
	}
	return dir, run, reqs, levels, err
}

// atMeasured is a progress callback that runs do once, when the measured
// requests of the level at index level reach done.
func atMeasured(level, done int, do func()) func(Progress) {
	var once sync.Once
	return func(p Progress) {
		if p.LevelIndex == level && p.Phase == "measure" && p.Done == done {
			once.Do(do)
		}
	}
}

// Every fault a server can throw at one request ends in a row with a
// status, an error that says what happened, valid UTF-8, and a run that
// reads back; the sweep goes on (--max-error-rate 1) and never follows a
// redirect to another host.
func TestFaultMatrix(t *testing.T) {
	var elsewhere atomic.Int64 // requests that reached the other host
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	tests := []struct {
		name      string
		configure func(*fakeServer)
		opts      []Option
		statuses  map[string]int // status → rows
		httpCode  int32          // of the failed rows
		errorHas  string
		minGapS   float64 // closed loop: least time between a failure and the next send
	}{
		{name: "429 with Retry-After seconds", configure: func(f *fakeServer) { f.status, f.retryAfter, f.failEvery = 429, "1", 2 },
			statuses: map[string]int{rundir.StatusOK: 2, rundir.StatusHTTPError: 2}, httpCode: 429, errorHas: "(Retry-After: 1)", minGapS: 1},
		// The date is taken when the server answers (1 to 2 s ahead, as
		// HTTP dates have whole seconds), not when the case is set up: under
		// load a date fixed in advance had passed by the time it was sent.
		{name: "503 with Retry-After date", configure: func(f *fakeServer) {
			f.status, f.failEvery, f.retryAt = 503, 2, 2*time.Second
		}, statuses: map[string]int{rundir.StatusOK: 2, rundir.StatusHTTPError: 2}, httpCode: 503, errorHas: "Retry-After: ", minGapS: 0.3},
		{name: "500 without Retry-After", configure: func(f *fakeServer) { f.status, f.failEvery = 500, 2 },
			statuses: map[string]int{rundir.StatusOK: 2, rundir.StatusHTTPError: 2}, httpCode: 500, errorHas: "HTTP 500: "},
		// The timeout also bounds Prepare's lookups (/v1/models, /tokenize,
		// the first request) against the healthy server: 300 ms was too
		// short for them under -race on a loaded machine. All four requests
		// run at once, so the case waits one timeout, not four.
		{name: "first token never arrives", configure: func(f *fakeServer) { f.firstDelay = time.Hour },
			opts: []Option{WithTimeout(3 * time.Second), WithLevels(4)}, statuses: map[string]int{rundir.StatusTimeout: 4}, errorHas: "deadline"},
		{name: "invalid UTF-8 in the text", configure: func(f *fakeServer) { f.badUTF8 = true },
			statuses: map[string]int{rundir.StatusOK: 4}},
		{name: "invalid UTF-8 in an error body", configure: func(f *fakeServer) { f.status, f.badUTF8 = 500, true },
			statuses: map[string]int{rundir.StatusHTTPError: 4}, httpCode: 500, errorHas: "overloaded \uFFFD"},
		{name: "line over the limit", configure: func(f *fakeServer) { f.longLine = loadgen.DefaultMaxLineBytes + 1 },
			statuses: map[string]int{rundir.StatusStreamError: 4}, errorHas: "line longer than the limit"},
		{name: "no [DONE] and no finish_reason", configure: func(f *fakeServer) { f.noFinish = true },
			statuses: map[string]int{rundir.StatusStreamError: 4}, errorHas: "without [DONE]"},
		{name: "redirect to another host", configure: func(f *fakeServer) { f.status, f.location = 307, other.URL+"/v1/completions" },
			statuses: map[string]int{rundir.StatusHTTPError: 4}, httpCode: 307, errorHas: "redirect to " + other.URL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // most of the time is Retry-After waits and Parquet writes
			f := newFakeServer(t, nil)
			s := mustNew(t, f.URL, append([]Option{WithLevels(1), WithRequestsPerLevel(4), WithWarmup(0), WithPromptTokens(Fixed(40)),
				WithOutputTokens(Fixed(4)), WithMaxErrorRate(1), WithNoGPU(), WithMetricsInterval(0)}, tt.opts...)...)
			if err := s.Prepare(context.Background()); err != nil { // against the healthy server
				t.Fatal(err)
			}
			tt.configure(f)
			f.requests.Store(0)
			_, run, reqs, levels, err := recordRun(t, s, context.Background())
			if err != nil || !run.Manifest.Complete {
				t.Fatalf("err %v, complete %v", err, run.Manifest.Complete)
			}
			got := map[string]int{}
			for _, r := range reqs {
				got[r.Status]++
				if !utf8.ValidString(r.Error) || !utf8.ValidString(r.FinishReason) {
					t.Errorf("%s: invalid UTF-8 in %q", r.RequestID, r.Error)
				}
				if r.Status == rundir.StatusOK {
					continue
				}
				if r.Error == "" || !strings.Contains(r.Error, tt.errorHas) || (tt.httpCode != 0 && r.HTTPStatus != tt.httpCode) {
					t.Errorf("%s: %s, HTTP %d, error %q; want HTTP %d and %q", r.RequestID, r.Status, r.HTTPStatus, r.Error, tt.httpCode, tt.errorHas)
				}
				if r.Status == rundir.StatusTimeout && r.FirstTokenNS != nil {
					t.Errorf("%s: a first token without one arriving", r.RequestID)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.statuses) {
				t.Errorf("statuses %v, want %v", got, tt.statuses)
			}
			if len(levels) != 1 || int(levels[0].Errors) != len(reqs)-got[rundir.StatusOK] || levels[0].Requests != 4 {
				t.Errorf("level %+v: want 4 requests and the failures counted", levels)
			}
			if n := elsewhere.Load(); n != 0 {
				t.Errorf("%d requests followed a redirect to another host", n)
			}
			if tt.minGapS > 0 {
				// the slot waited as asked before its next request
				sort.Slice(reqs, func(i, j int) bool { return reqs[i].Seq < reqs[j].Seq })
				for i := 0; i+1 < len(reqs); i++ {
					if reqs[i].Status == rundir.StatusHTTPError {
						if gap := float64(reqs[i+1].SendNS-reqs[i].EndNS) / 1e9; gap < tt.minGapS {
							t.Errorf("request %d sent %.2f s after a Retry-After answer; want at least %.1f s", reqs[i+1].Seq, gap, tt.minGapS)
						}
					}
				}
			}
		})
	}
}

// A redirect on the first requests (/v1/models, the probe request) stops
// the sweep before any load with an error naming where it pointed.
func TestRedirectStopsPrepare(t *testing.T) {
	var elsewhere atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	s := mustNew(t, srv.URL, WithLevels(1), WithNoGPU())
	err := s.Prepare(context.Background())
	if err == nil || !strings.Contains(err.Error(), "redirect to "+other.URL) {
		t.Errorf("err %v", err)
	}
	if elsewhere.Load() != 0 {
		t.Error("a redirect was followed")
	}
}

// The load generator sends exactly the requests it was asked for, and a
// level bounded by time ends on time.
func TestLoadIsBounded(t *testing.T) {
	f := newFakeServer(t, func(f *fakeServer) { f.tokenDelay = 5 * time.Millisecond })
	s := mustNew(t, f.URL, WithLevels(1, 3), WithRequestsPerLevel(5), WithWarmup(2), WithPromptTokens(Fixed(40)), WithOutputTokens(Fixed(4)))
	if _, _, err := runSweep(t, s); err != nil {
		t.Fatal(err)
	}
	// one probe request while preparing (prompts are sized with /tokenize),
	// then 2 warm-up and 5 measured per level
	if got := f.requests.Load(); got != 1+2*(2+5) {
		t.Errorf("the server got %d generation requests, want %d", got, 1+2*(2+5))
	}

	f = newFakeServer(t, func(f *fakeServer) { f.tokenDelay = 10 * time.Millisecond })
	const d = 400 * time.Millisecond
	s = mustNew(t, f.URL, WithLevels(2), WithDurationPerLevel(d), WithWarmup(0), WithPromptTokens(Fixed(40)), WithOutputTokens(Fixed(5)))
	rec, _, err := runSweep(t, s)
	if err != nil {
		t.Fatal(err)
	}
	l := rec.levels[0]
	// Requests are sent for d and the last ones (50 ms each) awaited: no
	// request goes out well after d (a send decided just before d may be
	// stamped a little after it), and the level ends with its last answer.
	// The window's length is bounded only against a hang, since a loaded
	// machine can hold a 50 ms answer up for a second.
	if w := time.Duration(l.EndNS - l.WarmupEndNS); w < d || w > d+10*time.Second {
		t.Errorf("measured window %v for a level of %v", w, d)
	}
	var lastEnd int64
	for _, r := range rec.requests {
		if r.SendNS > l.WarmupEndNS+int64(d+time.Second) {
			t.Errorf("%s sent %v into a level of %v", r.RequestID, time.Duration(r.SendNS-l.WarmupEndNS), d)
		}
		lastEnd = max(lastEnd, r.EndNS)
	}
	if l.EndNS < lastEnd {
		t.Errorf("the level ended %v before its last answer", time.Duration(lastEnd-l.EndNS))
	}
	if n := len(rec.requests); n > int(d/(40*time.Millisecond))*2+4 {
		t.Errorf("%d requests in %v at concurrency 2 of 50 ms requests", n, d)
	}
}

// restartableServer serves handler on a fixed loopback address and can be
// killed (listener and every connection closed at once, as when a server
// process dies) and started again on the same address.
type restartableServer struct {
	t       *testing.T
	addr    string
	handler http.Handler
	mu      sync.Mutex
	srv     *http.Server
}

func newRestartableServer(t *testing.T, h http.Handler) *restartableServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &restartableServer{t: t, addr: ln.Addr().String(), handler: h}
	r.serve(ln)
	t.Cleanup(r.kill)
	return r
}

func (r *restartableServer) URL() string { return "http://" + r.addr }

func (r *restartableServer) serve(ln net.Listener) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.srv = &http.Server{Handler: r.handler}
	go r.srv.Serve(ln)
}

func (r *restartableServer) kill() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.srv != nil {
		r.srv.Close()
		r.srv = nil
	}
}

func (r *restartableServer) restart() {
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ { // the port may take a moment to be free
		if ln, err = net.Listen("tcp", r.addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		r.t.Errorf("restart on %s: %v", r.addr, err)
		return
	}
	r.serve(ln)
}

// The server dies in the middle of a level and comes back: streams in
// flight break (stream_error), requests sent while it is down are refused
// (connect_error), every request has its row, the level counts its errors,
// and the next level runs against the restarted server.
func TestServerKilledMidLevelAndRestarted(t *testing.T) {
	f := newFakeServer(t, func(f *fakeServer) { f.tokenDelay = 5 * time.Millisecond })
	srv := newRestartableServer(t, http.HandlerFunc(f.handle))
	progress := atMeasured(0, 8, func() {
		// The slots run in step (same lengths), so wait until the
		// other slots' next streams have sent a chunk (a request takes
		// 20 × 5 ms): they must break mid-stream.
		for deadline := time.Now().Add(10 * time.Second); f.streaming.Load() < 2 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
		srv.kill()
		time.Sleep(200 * time.Millisecond) // down: the other slots are refused meanwhile
		srv.restart()
	})
	s := mustNew(t, srv.URL(), WithLevels(4, 2), WithRequestsPerLevel(40), WithWarmup(0), WithPromptTokens(Fixed(40)),
		WithOutputTokens(Fixed(20)), WithMaxErrorRate(1), WithNoGPU(), WithMetricsInterval(0), WithProgress(progress))
	_, run, reqs, levels, err := recordRun(t, s, context.Background())
	if err != nil || !run.Manifest.Complete {
		t.Fatalf("err %v complete %v", err, run.Manifest.Complete)
	}
	byLevel := map[int32]map[string]int{0: {}, 1: {}}
	for _, r := range reqs {
		byLevel[r.LevelIndex][r.Status]++
		if r.Status != rundir.StatusOK && r.Error == "" {
			t.Errorf("%s: %s without an error", r.RequestID, r.Status)
		}
	}
	l0, l1 := byLevel[0], byLevel[1]
	if l0[rundir.StatusOK] < 8 || l0[rundir.StatusStreamError] < 1 || l0[rundir.StatusConnect] < 1 ||
		l0[rundir.StatusOK]+l0[rundir.StatusStreamError]+l0[rundir.StatusConnect] != 40 {
		t.Errorf("level 0: %v; want 40 rows: ok, stream_error (broken streams), connect_error (refused)", l0)
	}
	if l1[rundir.StatusOK] != 40 {
		t.Errorf("level 1 after the restart: %v", l1)
	}
	if len(levels) != 2 || int(levels[0].Errors) != 40-l0[rundir.StatusOK] || levels[1].Errors != 0 || !levels[0].Complete {
		t.Errorf("levels %+v", levels)
	}
}

// The same with the default error limit: the sweep stops by policy at the
// level where the server died, and --resume runs that level again.
func TestServerKilledStopsByPolicyThenResumes(t *testing.T) {
	f := newFakeServer(t, func(f *fakeServer) { f.tokenDelay = 5 * time.Millisecond })
	srv := newRestartableServer(t, http.HandlerFunc(f.handle))
	progress := atMeasured(1, 4, srv.kill)
	opts := []Option{WithLevels(1, 4, 2), WithRequestsPerLevel(24), WithWarmup(0), WithPromptTokens(Fixed(40)),
		WithOutputTokens(Fixed(10)), WithNoGPU(), WithMetricsInterval(0)}
	s := mustNew(t, srv.URL(), append(opts, WithProgress(progress))...)
	dir, run, _, _, err := recordRun(t, s, context.Background())
	if !errors.Is(err, ErrMaxErrorRate) || run.Manifest.Complete || run.Manifest.Stopped.Reason != "max-error-rate" || *run.Manifest.Stopped.Level != 1 {
		t.Fatalf("err %v stopped %+v", err, run.Manifest.Stopped)
	}
	srv.restart()
	resumeRun(t, dir, srv.URL())
	reqs, _ := rundir.ReadTable[rundir.RequestRow](dir, rundir.TableRequests)
	for _, r := range reqs {
		if r.Status != rundir.StatusOK {
			t.Errorf("%s: %s after resuming", r.RequestID, r.Status)
		}
	}
	if len(reqs) != 3*24 {
		t.Errorf("%d requests, want 72", len(reqs))
	}
}

// resumeRun resumes the run in dir against url with the workload of its
// manifest, and checks that it completes and reads back.
func resumeRun(t *testing.T, dir, url string, extra ...Option) *rundir.Run {
	t.Helper()
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	opts, err := ResumeOptions(m)
	if err != nil {
		t.Fatal(err)
	}
	s := mustNew(t, url, append(opts, append([]Option{WithNoGPU(), WithMetricsInterval(0)}, extra...)...)...)
	run, err := s.Resume(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if !run.Manifest.Complete || run.Manifest.Stopped != nil {
		t.Fatalf("resumed run: complete %v stopped %+v", run.Manifest.Complete, run.Manifest.Stopped)
	}
	if err := run.Check(); err != nil {
		t.Fatal(err)
	}
	reread, err := rundir.Open(dir)
	if err != nil || !reread.Manifest.Complete {
		t.Fatalf("manifest on disk: %v %+v", err, reread)
	}
	return run
}

// prompts lists the generation requests a fake server got, as
// "prompt|max_tokens", after the first skip ones (preparation).
func prompts(f *fakeServer, skip int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, b := range f.bodies[skip:] {
		p, _ := b["prompt"].(string)
		out = append(out, fmt.Sprintf("%s|%v", p, b["max_tokens"]))
	}
	return out
}

// Ctrl-C in the middle of level 1, then --resume: level 0 is kept, level 1
// runs again from its first request, level 2 follows; the rows of the
// interrupted attempt are kept aside; the workload is exactly that of an
// uninterrupted sweep with the same seed.
func TestResumeAfterInterrupt(t *testing.T) {
	opts := []Option{WithLevels(1, 2, 4), WithRequestsPerLevel(6), WithWarmup(1), WithSeed(42), WithPromptTokens(Dist{Kind: DistUniform, Min: 20, Max: 80}),
		WithOutputTokens(Dist{Kind: DistUniform, Min: 3, Max: 9}), WithNoGPU(), WithMetricsInterval(0), WithLabel("resumable"), WithTags("k=v")}

	// the reference: one uninterrupted sweep
	ref := newFakeServer(t, nil)
	if _, _, _, _, err := recordRun(t, mustNew(t, ref.URL, opts...), context.Background()); err != nil {
		t.Fatal(err)
	}
	want := prompts(ref, 1)

	f := newFakeServer(t, func(f *fakeServer) { f.tokenDelay = 10 * time.Millisecond })
	ctx, cancel := context.WithCancel(context.Background())
	s := mustNew(t, f.URL, append(opts, WithProgress(atMeasured(1, 2, cancel)))...)
	dir, run, reqs, _, err := recordRun(t, s, ctx)
	if !errors.Is(err, context.Canceled) || run.Manifest.Stopped == nil || *run.Manifest.Stopped.Level != 1 {
		t.Fatalf("err %v stopped %+v", err, run.Manifest.Stopped)
	}
	interrupted := 0
	for _, r := range reqs {
		if r.LevelIndex == 1 {
			interrupted++
		}
	}
	if interrupted == 0 {
		t.Fatal("the interrupted level left no rows to set aside")
	}
	first := prompts(f, 1)
	f.mu.Lock()
	f.bodies = nil
	f.mu.Unlock()

	rerun := resumeRun(t, dir, f.URL)
	m := rerun.Manifest
	if len(m.Resumed) != 1 || m.Resumed[0].FromLevel != 1 || m.Resumed[0].Superseded != "superseded/resume-1" ||
		m.Label != "resumable" || m.Tags[0] != "k=v" || m.Workload.Seed != 42 {
		t.Errorf("manifest: resumed %+v label %q tags %v", m.Resumed, m.Label, m.Tags)
	}
	second := prompts(f, 1)
	// every request of the reference was sent, with the same prompt and length
	sent := map[string]bool{}
	for _, p := range append(first, second...) {
		sent[p] = true
	}
	for _, p := range want {
		if !sent[p] {
			t.Fatalf("the reference sent %.60q…, the interrupted and resumed sweep never did", p)
		}
	}
	refSet := map[string]bool{}
	for _, p := range want {
		refSet[p] = true
	}
	for _, p := range second {
		if !refSet[p] {
			t.Fatalf("the resumed sweep sent %.60q…, which the reference never did", p)
		}
	}

	levels, _ := rundir.ReadTable[rundir.LevelRow](dir, rundir.TableLevels)
	reqs, _ = rundir.ReadTable[rundir.RequestRow](dir, rundir.TableRequests)
	if len(levels) != 3 {
		t.Fatalf("levels %+v", levels)
	}
	for i, l := range levels {
		if int(l.LevelIndex) != i || !l.Complete || l.Requests != 6 {
			t.Errorf("level %d: %+v", i, l)
		}
	}
	ids := map[string]bool{}
	for _, r := range reqs {
		if ids[r.RequestID] {
			t.Errorf("request %s twice", r.RequestID)
		}
		ids[r.RequestID] = true
		if r.Status != rundir.StatusOK {
			t.Errorf("%s: %s", r.RequestID, r.Status)
		}
	}
	if len(reqs) != 3*7 {
		t.Errorf("%d requests, want 21", len(reqs))
	}
	aside, err := rundir.ReadTable[rundir.RequestRow](filepath.Join(dir, "superseded", "resume-1"), rundir.TableRequests)
	if err != nil || len(aside) != interrupted {
		t.Errorf("%d requests set aside (%v), want %d", len(aside), err, interrupted)
	}
	// a complete run has nothing to resume
	mopts, _ := ResumeOptions(m)
	if _, err := mustNew(t, f.URL, mopts...).Resume(context.Background(), dir); !errors.Is(err, ErrNothingToResume) {
		t.Errorf("resuming a complete run: %v", err)
	}
}

// A killed sweep (no Ctrl-C: nothing flushed for the level in progress,
// temporary files left, a server log cut mid-line) resumes too.
func TestResumeAfterKill(t *testing.T) {
	f := newFakeServer(t, nil)
	opts := []Option{WithLevels(1, 2, 3), WithRequestsPerLevel(4), WithWarmup(0), WithPromptTokens(Fixed(30)), WithOutputTokens(Fixed(3)),
		WithNoGPU(), WithMetricsInterval(0)}
	dir, _, _, _, err := recordRun(t, mustNew(t, f.URL, opts...), context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// What a kill -9 during level 2 leaves: levels 0 and 1 on disk, the
	// manifest still saying the run is in progress, a temporary part.
	for _, table := range []string{rundir.TableRequests, rundir.TableTokens, rundir.TableLevels} {
		parts, _ := rundir.TableParts(dir, table)
		os.Remove(parts[2])
		os.WriteFile(filepath.Join(dir, table, ".part-00002.parquet.tmp-123"), []byte("half"), 0o644)
	}
	m, _ := rundir.ReadManifest(dir)
	m.Complete, m.EndTime = false, time.Time{}
	rundir.WriteManifest(dir, m)
	os.WriteFile(filepath.Join(dir, rundir.ServerLogFile), []byte("line one\nline tw"), 0o644)

	logFile := filepath.Join(t.TempDir(), "engine.log")
	os.WriteFile(logFile, nil, 0o644)
	go func() {
		for i := 0; i < 20; i++ {
			time.Sleep(20 * time.Millisecond)
			lf, _ := os.OpenFile(logFile, os.O_APPEND|os.O_WRONLY, 0)
			lf.WriteString("new line\n")
			lf.Close()
		}
	}()
	run := resumeRun(t, dir, f.URL, WithServerLog(logFile))
	if r := run.Manifest.Resumed; len(r) != 1 || r[0].FromLevel != 2 || r[0].Superseded != "" {
		t.Errorf("resumed %+v", r)
	}
	levels, _ := rundir.ReadTable[rundir.LevelRow](dir, rundir.TableLevels)
	if len(levels) != 3 || levels[2].LevelIndex != 2 || !levels[2].Complete {
		t.Errorf("levels %+v", levels)
	}
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp-") {
			t.Errorf("temporary file left: %s", path)
		}
		return nil
	})
	log, _ := os.ReadFile(filepath.Join(dir, rundir.ServerLogFile))
	if !bytes.HasPrefix(log, []byte("line one\nline tw\n")) {
		t.Errorf("server.log: %q", log)
	}
	lines, _ := rundir.ReadTable[rundir.ServerLogLineRow](dir, rundir.TableServerLogLines)
	if len(lines) > 0 && lines[0].Line != 3 {
		t.Errorf("the first new log line is numbered %d, want 3 (after the two lines there)", lines[0].Line)
	}
}

// Runs that cannot be resumed say why in one line naming the file.
func TestResumeRefuses(t *testing.T) {
	f := newFakeServer(t, nil)
	opts := []Option{WithLevels(1), WithRequestsPerLevel(2), WithWarmup(0), WithPromptTokens(Fixed(30)), WithOutputTokens(Fixed(2)), WithNoGPU(), WithMetricsInterval(0)}
	notRun := t.TempDir()
	probeRun := t.TempDir()
	rundir.WriteManifest(probeRun, &rundir.Manifest{FormatVersion: 1, Kinds: []string{rundir.KindProbe}})
	broken := t.TempDir()
	os.WriteFile(filepath.Join(broken, rundir.ManifestFile), []byte(`{"format_version": 1, "kinds": ["sweep"], "workload": {"levels": [1`), 0o644)
	corrupt, _, _, _, _ := recordRun(t, mustNew(t, f.URL, opts...), context.Background())
	m, _ := rundir.ReadManifest(corrupt)
	m.Complete = false
	rundir.WriteManifest(corrupt, m)
	parts, _ := rundir.TableParts(corrupt, rundir.TableLevels)
	os.WriteFile(parts[0], []byte("PAR1 garbage"), 0o644)
	for _, tt := range []struct{ dir, want string }{
		{notRun, "not a headroom run directory"},
		{probeRun, "not a sweep"},
		{broken, filepath.Join(broken, rundir.ManifestFile) + ": invalid manifest JSON"},
		{corrupt, parts[0]},
	} {
		_, err := mustNew(t, f.URL, opts...).Resume(context.Background(), tt.dir)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want one line with %q", tt.dir, err, tt.want)
		}
	}
}

// The API key and every secret of the server command stay off the disk and
// off the log, even when the server echoes them back: in error bodies, in
// the facts engine detection keeps (/version), in /metrics labels and in
// its own log.
func TestSecretsNeverWritten(t *testing.T) {
	const (
		key       = "sk-live-key-4242-never-on-disk"
		hfToken   = "hf_NeverOnDiskToken77"
		tokenLike = "Zq8vK1mX2pL7rT4wY9nB3cD6fG5hJ0sQ" // a random-looking value after an innocent flag
	)
	f := newFakeServer(t, func(f *fakeServer) { f.wantKey = key })
	mux := http.NewServeMux()
	mux.HandleFunc("/version", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"engine":"fake","version":"1.0","api_key":%q,"hf_token":%q}`, key, hfToken)
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "# TYPE fake_info gauge\nfake_info{key=%q,token=%q} 1\n", key, hfToken)
	})
	mux.Handle("/", http.HandlerFunc(f.handle))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	var logged bytes.Buffer
	var logMu sync.Mutex
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(&logged, format+"\n", args...)
	}
	// the server process passes the load to srv and prints its arguments
	addr := freeAddr(t)
	cmd := "echo HF_TOKEN=" + hfToken + "; " + fakeserver.Command(fakeserver.Options{Addr: addr, Proxy: srv.URL},
		"starting", "--api-key", key, "--hf-token", hfToken, "--served-model-name", tokenLike)
	s := mustNew(t, "http://"+addr, WithAPIKey(key), WithLevels(2), WithRequestsPerLevel(6), WithWarmup(0), WithPromptTokens(Fixed(30)),
		WithOutputTokens(Fixed(3)), WithMaxErrorRate(1), WithNoGPU(), WithMetricsInterval(30*time.Millisecond),
		WithServerCmd(cmd, 10*time.Second), WithLogf(logf))
	// every third answer (not the first, preparation's): "bad credentials: Bearer <key>"
	f.status, f.failEvery, f.echoAuth = 500, 3, true
	dir, run, reqs, _, err := recordRun(t, s, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var echoed bool
	for _, r := range reqs {
		echoed = echoed || strings.Contains(r.Error, "Bearer "+"<redacted>")
	}
	if !echoed || run.Manifest.Engine.Config["api_key"] != "<redacted>" {
		t.Fatalf("the server did not echo the key as the test intends: errors %v, config %v", reqs, run.Manifest.Engine.Config)
	}
	texts := runtest.Text(t, dir)
	texts["the sweep's own log"] = logged.String()
	for where, text := range texts {
		for _, secret := range []string{key, hfToken, tokenLike} {
			if strings.Contains(text, secret) {
				t.Errorf("%s contains %q", where, secret)
			}
		}
	}
	if log := texts[filepath.Join(dir, rundir.ServerLogFile)]; !strings.Contains(log, "starting --api-key <redacted> --hf-token <redacted>") {
		t.Errorf("server.log: %q", log)
	}
}

// A placeholder API key (vLLM's EMPTY, or "x") is not a secret worth
// mangling text for: the flags, the log and the manifest keep every "x".
func TestPlaceholderKeyManglesNothing(t *testing.T) {
	f := newFakeServer(t, func(f *fakeServer) { f.wantKey = "x" })
	addr := freeAddr(t)
	cmd := fakeserver.Command(fakeserver.Options{Addr: addr, Proxy: f.URL}, "serving", "--max-num-seqs", "8", "--api-key", "x")
	s := mustNew(t, "http://"+addr, WithAPIKey("x"), WithLevels(1), WithRequestsPerLevel(2), WithWarmup(0), WithPromptTokens(Fixed(20)),
		WithOutputTokens(Fixed(2)), WithNoGPU(), WithMetricsInterval(0), WithServerCmd(cmd, 10*time.Second))
	dir, run, reqs, _, err := recordRun(t, s, context.Background())
	if err != nil || len(reqs) != 2 || reqs[0].Status != rundir.StatusOK {
		t.Fatalf("err %v, requests %+v", err, reqs)
	}
	flags := strings.Join(run.Manifest.Engine.Flags, " ")
	if !strings.Contains(flags, "--max-num-seqs 8 --api-key <redacted>") {
		t.Errorf("flags: %q", flags)
	}
	if log := runtest.Text(t, dir)[filepath.Join(dir, rundir.ServerLogFile)]; !strings.Contains(log, "--max-num-seqs 8") {
		t.Errorf("server.log lost its x: %q", log)
	}
}

// Only string values are redacted: field names, numbers and times stay, so
// a secret that is also part of a field name cannot drop the field.
func TestRedactManifestOnlyTouchesValues(t *testing.T) {
	start := time.Date(2026, 11, 30, 4, 0, 0, 0, time.UTC)
	m := &rundir.Manifest{StartTime: start, Notes: []string{"key context_tokens echoed"},
		Engine: &rundir.Engine{Name: "vllm", Config: map[string]string{"max_model_len": "context_tokens"}, MaxContextTokens: 4096}}
	s := &Sweep{secrets: &server.Secrets{}}
	s.secrets.Add("context_tokens")
	s.redactManifest(m)
	if m.Notes[0] != "key <redacted> echoed" || m.Engine.Config["max_model_len"] != "<redacted>" {
		t.Errorf("not redacted: %q %v", m.Notes, m.Engine.Config)
	}
	if m.Engine.MaxContextTokens != 4096 || !m.StartTime.Equal(start) || m.Engine.Name != "vllm" {
		t.Errorf("other fields changed: %+v", m)
	}
}

// A sweep killed after its last level was on disk, before the manifest
// said complete: --resume marks it complete without a server.
func TestResumeWithEveryLevelOnDisk(t *testing.T) {
	f := newFakeServer(t, nil)
	dir, _, _, _, err := recordRun(t, mustNew(t, f.URL, WithLevels(1, 2), WithRequestsPerLevel(3), WithWarmup(0),
		WithPromptTokens(Fixed(30)), WithOutputTokens(Fixed(3)), WithNoGPU(), WithMetricsInterval(0)), context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m, _ := rundir.ReadManifest(dir)
	m.Complete, m.EndTime = false, time.Time{}
	rundir.WriteManifest(dir, m)
	f.Close() // no server any more
	run := resumeRun(t, dir, f.URL)
	if n := len(run.Manifest.Notes); n == 0 || run.Manifest.Notes[n-1] != "resume found all 2 levels on disk: the run was only marked complete" {
		t.Errorf("notes %q", run.Manifest.Notes)
	}
	reqs, _ := rundir.ReadTable[rundir.RequestRow](dir, rundir.TableRequests)
	if len(reqs) != 6 {
		t.Errorf("%d requests after the resume, want the 6 recorded", len(reqs))
	}
}
