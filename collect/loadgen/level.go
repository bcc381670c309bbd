package loadgen

import (
	"math/rand/v2"
	"time"
)

// Level is one load level of a plan.
type Level struct {
	// Index numbers the level in the run (rows carry it); a resumed or
	// searched plan keeps each level's own index.
	Index int
	// Concurrency is the number of streams of a closed loop, or the cap on
	// requests in flight of an open loop (a request whose slot is not free
	// waits; its send lag shows it).
	Concurrency int
	// Arrivals makes the level open loop: request seq is sent at
	// Arrivals.At(seq) after the level's start. nil: closed loop.
	Arrivals Schedule
	// RateRPS is the open loop's nominal rate, recorded in the level row.
	RateRPS float64
	// Sessions makes the level a closed loop of conversations (the run's
	// Source must be a ConversationSource): Concurrency sessions in
	// progress at once, each sending its turns one after the other and
	// holding its slot through its think times; Warmup and Requests count
	// sessions, not requests; Duration bounds when sessions start. Arrivals
	// and SeqOf are not used.
	Sessions bool
	// Warmup requests come first (closed loop: min(Warmup, Concurrency)
	// streams; open loop: the first Warmup arrivals) and are marked warmup.
	Warmup int
	// Requests is the number of measured requests; with Duration > 0 it is
	// ignored and the measured phase sends for Duration.
	Requests int
	// Duration is how long the measured phase sends, instead of a count;
	// the requests in flight at its end are awaited.
	Duration time.Duration
	// StartAt, when set, is the wall-clock time the level starts at: the
	// generator waits for it (a level of a plan that several hosts run
	// starts at the same moment on each). A time already past starts the
	// level at once (the level row's start_ns shows how late). An open
	// loop's schedule counts from StartAt, unless that is more than a
	// second past.
	StartAt time.Time
	// SeqOf maps the level's own sequence numbers (0, 1, 2, … in sending
	// order, warm-up first) to the plan's, for a host that sends only its
	// share of a plan: the Source, the rows' seq and request ids, and
	// Arrivals see the plan's number. nil: the same numbers. It must be
	// increasing.
	SeqOf func(seq int) int
}

// planSeq is request seq's number in the plan.
func (l Level) planSeq(seq int) int {
	if l.SeqOf == nil {
		return seq
	}
	return l.SeqOf(seq)
}

// Schedule is an open loop's intended send times: At(seq) is request seq's
// offset from the level's start, non-decreasing in seq; false ends the
// schedule (a trace that has no more requests). At is called in sequence
// order from one goroutine.
type Schedule interface {
	At(seq int) (time.Duration, bool)
}

// Poisson is a Poisson arrival process of rate requests per second drawn
// from rng: exponential gaps, the same sequence for the same rng seed.
func Poisson(rate float64, rng *rand.Rand) Schedule {
	return &poisson{rate: rate, rng: rng}
}

type poisson struct {
	rate float64
	rng  *rand.Rand
	t    float64 // seconds, of the last offset drawn
	offs []time.Duration
}

func (p *poisson) At(seq int) (time.Duration, bool) {
	if seq < 0 {
		return 0, false
	}
	for len(p.offs) <= seq {
		p.t += p.rng.ExpFloat64() / p.rate
		p.offs = append(p.offs, time.Duration(p.t*float64(time.Second)))
	}
	return p.offs[seq], true
}

// Times is a schedule of given offsets (a trace's), sorted by the caller;
// the schedule ends after the last.
type Times []time.Duration

// At returns the seq-th offset.
func (t Times) At(seq int) (time.Duration, bool) {
	if seq < 0 || seq >= len(t) {
		return 0, false
	}
	return t[seq], true
}
