package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// Progress is a snapshot of the level in progress.
type Progress struct {
	LevelIndex  int
	Levels      int
	Concurrency int     // closed loop; the cap in open loop
	RateRPS     float64 // open loop
	Phase       string  // "warmup", "measure", "done"
	Done        int     // finished requests of the phase
	Total       int     // requests of the phase; 0 when the level runs for a duration
	Errors      int     // failed requests of the phase
	Elapsed     time.Duration
	Duration    time.Duration // of the phase, when the level runs for a duration
	Chunks      int64         // text chunks received in the phase
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
	// sweep stopped (for rundir.Run.Finish).
	Stopped *rundir.Stopped
	// Levels that finished.
	Levels []rundir.LevelRow
}

// level is one load level.
type level struct {
	index       int
	concurrency int     // closed loop, or the cap
	rate        float64 // open loop
}

func (s *Sweep) levels() []level {
	var ls []level
	if len(s.cfg.rates) > 0 {
		for i, r := range s.cfg.rates {
			ls = append(ls, level{index: i, concurrency: s.cfg.maxConc, rate: r})
		}
		return ls
	}
	for i, c := range s.cfg.levels {
		ls = append(ls, level{index: i, concurrency: c})
	}
	return ls
}

// warmupCount is the number of warm-up requests of a level.
func (s *Sweep) warmupCount(l level) int {
	if s.cfg.warmup >= 0 {
		return s.cfg.warmup
	}
	if l.rate > 0 {
		return int(math.Ceil(l.rate)) // one second of arrivals
	}
	return l.concurrency
}

// measuredCount is the number of measured requests (0 with a duration).
func (s *Sweep) measuredCount(l level) int {
	switch {
	case s.cfg.durationPerLevel > 0:
		return 0
	case s.cfg.requestsPerLevel > 0:
		return s.cfg.requestsPerLevel
	case l.rate > 0:
		return max(DefaultMinRequestsPerLevel, int(math.Ceil(16*l.rate)))
	}
	return max(DefaultMinRequestsPerLevel, 4*l.concurrency)
}

// Run prepares the sweep if needed, runs every level and hands the rows to
// rec. Cancelling ctx stops within a moment: requests in flight are
// cancelled and recorded as such, the level is closed, and Result.Stopped
// says where. The error is ctx's, ErrMaxErrorRate, or a failure to prepare
// or record.
func (s *Sweep) Run(ctx context.Context, rec Recorder) (*Result, error) {
	res := &Result{}
	if err := s.Prepare(ctx); err != nil {
		if ctx.Err() != nil {
			res.Stopped = &rundir.Stopped{Reason: "interrupted", Phase: "prepare", Error: err.Error()}
		} else {
			res.Stopped = &rundir.Stopped{Reason: "error", Phase: "prepare", Error: err.Error()}
		}
		return res, err
	}
	sampleCtx, stopSampling := context.WithCancel(context.Background())
	samplerDone := make(chan struct{})
	go func() {
		defer close(samplerDone)
		s.sampleClient(sampleCtx, rec)
	}()
	defer func() {
		stopSampling()
		<-samplerDone
	}()

	levels := s.levels()
	for _, l := range levels[min(s.startLevel, len(levels)):] {
		row, err := s.runLevel(ctx, l, len(levels), rec)
		if recErr := rec.LevelDone(row); recErr != nil && err == nil {
			err = fmt.Errorf("sweep: recording level %d: %w", l.index, recErr)
		}
		if row.Complete {
			res.Levels = append(res.Levels, row)
		}
		if err != nil {
			li := l.index
			switch {
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
	return res, nil
}

// levelState counts a phase's requests for progress and the error limit.
type levelState struct {
	s        *Sweep
	l        level
	levels   int
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
}

func (st *levelState) report() {
	if st.s.cfg.progress == nil {
		return
	}
	st.s.cfg.progress(Progress{
		LevelIndex: st.l.index, Levels: st.levels, Concurrency: st.l.concurrency, RateRPS: st.l.rate,
		Phase: st.phase, Done: int(st.done.Load()), Total: st.total, Errors: int(st.errors.Load()),
		Elapsed: time.Since(st.start), Duration: st.duration, Chunks: st.chunks.Load(),
	})
}

// finished records one request and applies the error limit.
func (st *levelState) finished(rec Recorder, row rundir.RequestRow, tokens []rundir.TokenRow) {
	rec.Request(row, tokens)
	st.s.out.add(&row)
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
		if limit := st.s.cfg.maxErrorRate; limit < 1 && n >= 10 && float64(e)/float64(n) > limit {
			st.stop(fmt.Errorf("%w: %d of %d requests failed at level %d (limit %.0f%%; last: %s)",
				ErrMaxErrorRate, e, n, st.l.index, limit*100, row.Error))
		}
	}
	st.report()
}

func (s *Sweep) runLevel(ctx context.Context, l level, levels int, rec Recorder) (rundir.LevelRow, error) {
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	st := &levelState{s: s, l: l, levels: levels, stop: cancel}
	row := rundir.LevelRow{LevelIndex: int32(l.index), Concurrency: int64(l.concurrency), RateRPS: l.rate}
	start := time.Now()
	row.StartNS = s.clock.ns(start)
	warm, measured := s.warmupCount(l), s.measuredCount(l)

	var warmupEnd time.Time
	if l.rate > 0 {
		warmupEnd = s.openLoop(lctx, st, rec, warm, measured)
	} else {
		st.phase, st.start, st.total = "warmup", time.Now(), warm
		seq := 0
		if warm > 0 {
			st.report()
			seq = s.closedLoop(lctx, st, rec, 0, warm, 0, min(warm, l.concurrency), true)
		}
		warmupEnd = time.Now()
		st.phase, st.start, st.total, st.duration = "measure", time.Now(), measured, s.cfg.durationPerLevel
		st.done.Store(0)
		st.errors.Store(0)
		st.chunks.Store(0)
		st.report()
		if lctx.Err() == nil {
			s.closedLoop(lctx, st, rec, seq, measured, s.cfg.durationPerLevel, l.concurrency, false)
		}
	}
	row.WarmupEndNS = s.clock.ns(warmupEnd)
	row.EndNS = s.clock.nowNS()
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
func (s *Sweep) closedLoop(ctx context.Context, st *levelState, rec Recorder, seq, n int, d time.Duration, conc int, warmup bool) int {
	var next atomic.Int64
	next.Store(int64(seq))
	last := int64(seq + n)
	start := time.Now()
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			free := time.Now() // when this stream's slot became free
			for ctx.Err() == nil {
				if d > 0 && time.Since(start) >= d {
					return
				}
				i := next.Add(1) - 1
				if d == 0 && i >= last {
					return
				}
				spec := s.spec(st.l.index, st.l.concurrency, int(i), warmup)
				// Closed loop: the send lag is the time from a free slot to
				// the next send (client overhead between requests).
				s.noteSendLag(time.Since(free))
				row, tokens := s.do(ctx, spec)
				st.finished(rec, row, tokens)
				if spec.retryAfter > 0 && (d > 0 || next.Load() < last) {
					// The server asked this client to wait: the slot does,
					// as a well-behaved client would (only when it has a next
					// request, never past the level's end or an interruption).
					// The failed request is not sent again; its row keeps the
					// answer.
					wait := spec.retryAfter
					if d > 0 {
						wait = min(wait, max(d-time.Since(start), 0))
					}
					sleepCtx(ctx, wait)
				}
				free = time.Now()
			}
		}()
	}
	wg.Wait()
	if d > 0 {
		return int(next.Load())
	}
	return int(min(next.Load(), last))
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

// arrivals returns the intended send offsets of an open-loop level: a
// Poisson process of the given rate from an RNG seeded by (seed, level).
func arrivals(seed int64, li int, rate float64) func() time.Duration {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(li)<<40|0xa771))
	var t float64
	return func() time.Duration {
		t += rng.ExpFloat64() / rate
		return time.Duration(t * float64(time.Second))
	}
}

// openLoop sends requests at their intended times (Poisson arrivals), at
// most st.l.concurrency at once: a request whose slot is not free waits,
// and its send lag shows it. The first warm requests are warm-up. It returns
// the end of the warm-up (the intended time of the first measured request).
func (s *Sweep) openLoop(ctx context.Context, st *levelState, rec Recorder, warm, measured int) time.Time {
	l := st.l
	next := arrivals(s.cfg.seed, l.index, l.rate)
	sem := make(chan struct{}, l.concurrency)
	start := time.Now()
	st.phase, st.start, st.total, st.duration = "measure", start, warm+measured, s.cfg.durationPerLevel
	if s.cfg.durationPerLevel > 0 {
		st.total = 0
	}
	st.report()
	warmupEnd := start
	var wg sync.WaitGroup
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for seq := 0; ctx.Err() == nil; seq++ {
		intended := start.Add(next())
		if seq == warm {
			warmupEnd = intended
		}
		if s.cfg.durationPerLevel > 0 {
			if seq >= warm && intended.Sub(warmupEnd) >= s.cfg.durationPerLevel {
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
		spec := s.spec(l.index, l.concurrency, seq, seq < warm)
		spec.intended, spec.slotFree = intended, time.Now()
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			row, tokens := s.do(ctx, spec)
			st.finished(rec, row, tokens)
		}()
	}
	if warm == 0 {
		warmupEnd = start
	}
	wg.Wait()
	return warmupEnd
}
