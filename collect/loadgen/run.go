package loadgen

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// Progress is a snapshot of the level in progress.
type Progress struct {
	LevelIndex  int
	Levels      int     // in the plan; 0 when unknown (RunLevel)
	Concurrency int     // closed loop; the cap in open loop
	RateRPS     float64 // open loop
	Phase       string  // "warmup", "measure", "done"
	Done        int     // finished requests of the phase
	Total       int     // requests of the phase; 0 when the level runs for a duration
	Errors      int     // failed requests of the phase
	Elapsed     time.Duration
	Duration    time.Duration // of the phase, when the level runs for a duration
	Chunks      int64         // text chunks received in the phase
	// Sessions, in a level of conversations: those finished in the phase,
	// and the phase's number (0 when it runs for a duration). Done and
	// Errors count requests (turns); Total is 0.
	Sessions, SessionsTotal int
}

// ChunksPerS is the phase's rate of received text chunks.
func (p Progress) ChunksPerS() float64 {
	if p.Elapsed <= 0 {
		return 0
	}
	return float64(p.Chunks) / p.Elapsed.Seconds()
}

// Result says how a Run ended.
type Result struct {
	// Stopped is nil when every level ran; otherwise why and where the
	// run stopped (for rundir.Run.Finish).
	Stopped *rundir.Stopped
	// Levels that finished.
	Levels []rundir.LevelRow
}

// Planner decides a run's levels one at a time (an SLO search, a sweep that
// stops once the server saturates). Next is called before each level with
// the rows of the levels run so far, each after its Sink.LevelDone, and
// returns the next level, or false to end the run. Levels that did not
// complete end the run before Next is asked again.
type Planner interface {
	Next(done []rundir.LevelRow) (Level, bool)
}

// Plan is a fixed list of levels, run in order: the simplest Planner.
type Plan []Level

// Next returns the level after the ones done.
func (p Plan) Next(done []rundir.LevelRow) (Level, bool) {
	if len(done) >= len(p) {
		return Level{}, false
	}
	return p[len(done)], true
}

// Len is the number of levels, for progress.
func (p Plan) Len() int { return len(p) }

// Run runs the plan's levels in order, sampling the client alongside, and
// hands every row to sink. Cancelling ctx stops within a moment: requests in
// flight are cancelled and recorded as such, the level is closed, and
// Result.Stopped says where ("interrupted"; or "error" with the cause when
// ctx was cancelled with one, context.WithCancelCause). The error is ctx's,
// that cause, ErrMaxErrorRate, or the sink's.
func (g *Generator) Run(ctx context.Context, plan []Level, src Source, sink Sink) (*Result, error) {
	return g.RunPlanner(ctx, Plan(plan), src, sink)
}

// RunPlanner runs the levels p decides, as Run does a fixed plan. A planner
// with a Len() int method gives progress its number of levels.
func (g *Generator) RunPlanner(ctx context.Context, p Planner, src Source, sink Sink) (*Result, error) {
	res := &Result{}
	sampleCtx, stopSampling := context.WithCancel(context.Background())
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		g.SampleClient(sampleCtx, sink)
	}()
	defer func() {
		stopSampling()
		<-samplerDone
	}()
	levels := 0
	if n, ok := p.(interface{ Len() int }); ok {
		levels = n.Len()
	}
	for {
		l, ok := p.Next(res.Levels)
		if !ok {
			return res, nil
		}
		row, err := g.runLevel(ctx, l, levels, src, sink)
		// The level's kept-alive connections are closed before its rows are
		// written: at a concurrency near the open-files limit they hold the
		// descriptors the part files need.
		g.CloseIdleConnections()
		if recErr := sink.LevelDone(row); recErr != nil && err == nil {
			err = fmt.Errorf("recording level %d: %w", l.Index, recErr)
		}
		if row.Complete {
			res.Levels = append(res.Levels, row)
		}
		if err != nil {
			li := l.Index
			switch {
			case ctx.Err() != nil && stoppedFor(ctx) != nil:
				// The caller stopped the run for a reason of its own (the
				// server it started exited): an error, not an interruption.
				err = stoppedFor(ctx)
				res.Stopped = &rundir.Stopped{Reason: "error", Phase: "sweep", Level: &li, Error: err.Error()}
			case ctx.Err() != nil:
				res.Stopped = &rundir.Stopped{Reason: "interrupted", Phase: "sweep", Level: &li}
				err = ctx.Err()
			case errors.Is(err, ErrMaxErrorRate):
				res.Stopped = &rundir.Stopped{Reason: "max-error-rate", Phase: "sweep", Level: &li, Error: err.Error()}
			default:
				res.Stopped = &rundir.Stopped{Reason: "error", Phase: "sweep", Level: &li, Error: err.Error()}
			}
			return res, err
		}
	}
}

// stoppedFor is the cause a context was cancelled with
// (context.WithCancelCause), when it is not plain cancellation or a deadline.
func stoppedFor(ctx context.Context) error {
	cause := context.Cause(ctx)
	if cause == nil || errors.Is(cause, context.Canceled) || errors.Is(cause, context.DeadlineExceeded) {
		return nil
	}
	return cause
}

// RunLevel runs one level and returns its row, for a caller that decides
// the next level from the last (a search for the highest rate that meets an
// SLO). It does not call sink.LevelDone nor sample the client: the caller
// records the row, and runs SampleClient alongside.
func (g *Generator) RunLevel(ctx context.Context, l Level, src Source, sink Sink) (rundir.LevelRow, error) {
	return g.runLevel(ctx, l, 0, src, sink)
}

// levelState counts a phase's requests for progress and the error limit.
type levelState struct {
	g        *Generator
	l        Level
	levels   int
	src      Source
	sink     Sink
	phase    string
	start    time.Time
	total    int
	duration time.Duration
	done     atomic.Int64
	errors   atomic.Int64
	chunks   atomic.Int64
	mErrors  atomic.Int64 // measured-phase errors
	mDone    atomic.Int64
	stop     func(error) // cancels the level with a cause
	// sessions finished in the phase, and the phase's number of sessions
	// (a level of conversations)
	sessionsDone  atomic.Int64
	sessionsTotal int
}

func (st *levelState) report() {
	if st.g.cfg.Progress == nil {
		return
	}
	st.g.cfg.Progress(Progress{
		LevelIndex: st.l.Index, Levels: st.levels, Concurrency: st.l.Concurrency, RateRPS: st.l.RateRPS,
		Phase: st.phase, Done: int(st.done.Load()), Total: st.total, Errors: int(st.errors.Load()),
		Elapsed: time.Since(st.start), Duration: st.duration, Chunks: st.chunks.Load(),
		Sessions: int(st.sessionsDone.Load()), SessionsTotal: st.sessionsTotal,
	})
}

// attempt makes request seq of the level from the source.
func (st *levelState) attempt(seq int, warmup bool) *attempt {
	seq = st.l.planSeq(seq)
	r := st.src.Next(st.l, seq, warmup)
	if r.ID == "" {
		r.ID = fmt.Sprintf("%d-%d", st.l.Index, seq)
	}
	return &attempt{Request: r, level: st.l.Index, concurrency: st.l.Concurrency, seq: seq, warmup: warmup, target: -1}
}

// finished records one request and applies the error limit.
func (st *levelState) finished(row rundir.RequestRow, tokens []rundir.TokenRow) {
	st.sink.Request(row, tokens)
	st.done.Add(1)
	st.chunks.Add(int64(len(tokens)))
	failed := row.Status != rundir.StatusOK && row.Status != rundir.StatusCanceled
	if failed {
		st.errors.Add(1)
	}
	if !row.Warmup && row.Status != rundir.StatusCanceled {
		n := st.mDone.Add(1)
		e := st.mErrors.Load()
		if failed {
			e = st.mErrors.Add(1)
		}
		if limit := st.g.cfg.MaxErrorRate; limit < 1 && n >= 10 && float64(e)/float64(n) > limit {
			st.stop(fmt.Errorf("%w: %d of %d requests failed at level %d (limit %.0f%%; last: %s)",
				ErrMaxErrorRate, e, n, st.l.Index, limit*100, row.Error))
		}
	}
	st.report()
}

func (g *Generator) runLevel(ctx context.Context, l Level, levels int, src Source, sink Sink) (rundir.LevelRow, error) {
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	st := &levelState{g: g, l: l, levels: levels, src: src, sink: sink, stop: cancel}
	row := rundir.LevelRow{LevelIndex: int32(l.Index), Concurrency: int64(l.Concurrency), RateRPS: l.RateRPS}
	if !l.StartAt.IsZero() {
		sleepCtx(lctx, time.Until(l.StartAt))
	}
	start := time.Now()
	row.StartNS = g.clock.NS(start)
	warm, measured := max(l.Warmup, 0), max(l.Requests, 0)

	var warmupEnd time.Time
	if l.Sessions {
		warmupEnd = g.sessions(lctx, st, warm, measured)
	} else if l.Arrivals != nil {
		warmupEnd = g.openLoop(lctx, st, warm, measured)
	} else {
		st.phase, st.start, st.total = "warmup", time.Now(), warm
		seq := 0
		if warm > 0 {
			st.report()
			seq = g.closedLoop(lctx, st, 0, warm, 0, min(warm, l.Concurrency), true)
		}
		warmupEnd = time.Now()
		st.phase, st.start, st.total, st.duration = "measure", time.Now(), measured, l.Duration
		st.done.Store(0)
		st.errors.Store(0)
		st.chunks.Store(0)
		st.report()
		if lctx.Err() == nil {
			g.closedLoop(lctx, st, seq, measured, l.Duration, l.Concurrency, false)
		}
	}
	row.WarmupEndNS = g.clock.NS(warmupEnd)
	row.EndNS = g.clock.NowNS()
	row.Requests = st.mDone.Load()
	row.Errors = st.mErrors.Load()
	st.phase = "done"
	st.report()
	if err := context.Cause(lctx); err != nil {
		return row, err
	}
	row.Complete = true
	return row, nil
}

// closedLoop keeps conc requests in flight until n requests were sent (or
// d elapsed, when d > 0), starting at sequence number seq. It returns the
// next sequence number.
func (g *Generator) closedLoop(ctx context.Context, st *levelState, seq, n int, d time.Duration, conc int, warmup bool) int {
	c := newCounter(seq, n, d)
	return c.run(conc, func() {
		free := time.Now() // when this stream's slot became free
		for {
			i, ok := c.take(ctx)
			if !ok {
				return
			}
			a := st.attempt(i, warmup)
			// Closed loop: the send lag is the time from a free slot to
			// the next send (client overhead between requests).
			g.noteSendLag(time.Since(free))
			row, tokens := g.do(ctx, a)
			st.finished(row, tokens)
			if a.retryAfter > 0 && c.more() {
				// The server asked this client to wait: the slot does,
				// as a well-behaved client would (only when it has a next
				// request, never past the level's end or an interruption).
				// The failed request is not sent again; its row keeps the
				// answer.
				wait := a.retryAfter
				if d > 0 {
					wait = min(wait, max(d-time.Since(c.start), 0))
				}
				sleepCtx(ctx, wait)
			}
			free = time.Now()
		}
	})
}

// counter hands the numbers first, first+1, … to the workers of a closed
// loop until n were taken, or until d elapsed when d > 0.
type counter struct {
	next  atomic.Int64
	last  int64
	start time.Time
	d     time.Duration
}

func newCounter(first, n int, d time.Duration) *counter {
	c := &counter{last: int64(first + n), start: time.Now(), d: d}
	c.next.Store(int64(first))
	return c
}

// take returns the next number; false once the loop is over or ctx ended.
func (c *counter) take(ctx context.Context) (int, bool) {
	if ctx.Err() != nil || c.d > 0 && time.Since(c.start) >= c.d {
		return 0, false
	}
	i := c.next.Add(1) - 1
	if c.d == 0 && i >= c.last {
		return 0, false
	}
	return int(i), true
}

// more reports whether a number may be left to take.
func (c *counter) more() bool { return c.d > 0 || c.next.Load() < c.last }

// run runs conc workers to the end and returns the number after the last
// one taken.
func (c *counter) run(conc int, worker func()) int {
	var wg sync.WaitGroup
	for range conc {
		wg.Go(worker)
	}
	wg.Wait()
	if c.d > 0 {
		return int(c.next.Load())
	}
	return int(min(c.next.Load(), c.last))
}

// sleepCtx waits d or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// openLoop sends requests at their intended times, at most
// st.l.Concurrency at once: a request whose slot is not free waits, and its
// send lag shows it. The first warm requests are warm-up. It returns the end
// of the warm-up (the intended time of the first measured request).
func (g *Generator) openLoop(ctx context.Context, st *levelState, warm, measured int) time.Time {
	l := st.l
	sem := make(chan struct{}, max(l.Concurrency, 1))
	start := time.Now()
	if !l.StartAt.IsZero() && start.Sub(l.StartAt) < time.Second {
		// A plan shared by several hosts: every host's schedule counts
		// from the same moment.
		start = l.StartAt
	}
	st.phase, st.start, st.total, st.duration = "measure", start, warm+measured, l.Duration
	if l.Duration > 0 {
		st.total = 0
	}
	st.report()
	warmupEnd := start
	var wg sync.WaitGroup
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for seq := 0; ctx.Err() == nil; seq++ {
		off, ok := l.Arrivals.At(l.planSeq(seq))
		if !ok {
			break
		}
		intended := start.Add(off)
		if seq == warm {
			warmupEnd = intended
		}
		if l.Duration > 0 {
			if seq >= warm && intended.Sub(warmupEnd) >= l.Duration {
				break
			}
		} else if seq >= warm+measured {
			break
		}
		if wait := time.Until(intended); wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
			case <-timer.C:
			}
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		a := st.attempt(seq, seq < warm)
		a.intended, a.slotFree = intended, time.Now()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			row, tokens := g.do(ctx, a)
			st.finished(row, tokens)
		}()
	}
	if warm == 0 {
		warmupEnd = start
	}
	wg.Wait()
	return warmupEnd
}

// sessions runs a level of conversations: warm sessions on at most
// min(warm, Concurrency) streams, then measured ones. It returns the end of
// the warm-up.
func (g *Generator) sessions(ctx context.Context, st *levelState, warm, measured int) time.Time {
	src, ok := st.src.(ConversationSource)
	if !ok {
		st.stop(errors.New("loadgen: a level of sessions needs a ConversationSource"))
		return time.Now()
	}
	l := st.l
	var seq atomic.Int64
	st.phase, st.start, st.total, st.sessionsTotal = "warmup", time.Now(), 0, warm
	n := 0
	if warm > 0 {
		st.report()
		n = g.sessionLoop(ctx, st, src, &seq, 0, warm, 0, min(warm, l.Concurrency), true)
	}
	warmupEnd := time.Now()
	st.phase, st.start, st.total, st.duration = "measure", time.Now(), 0, l.Duration
	st.sessionsTotal = measured
	if l.Duration > 0 {
		st.sessionsTotal = 0
	}
	st.done.Store(0)
	st.errors.Store(0)
	st.chunks.Store(0)
	st.sessionsDone.Store(0)
	st.report()
	if ctx.Err() == nil {
		g.sessionLoop(ctx, st, src, &seq, n, measured, l.Duration, l.Concurrency, false)
	}
	return warmupEnd
}
