package sweep

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/headroom-llm/headroom/collect/loadgen"
	"github.com/headroom-llm/headroom/rundir"
	"github.com/headroom-llm/headroom/slo"
	"github.com/headroom-llm/headroom/stats"
)

// levelData is what the adaptive drivers keep of each level's measured
// requests: their latencies as the SLO judges them, and the tokens of the
// successful ones.
type levelData struct {
	reqs   []slo.Request
	tokens int64
}

// levelLog collects levelData as requests finish (from the sweep's sink).
type levelLog struct {
	mu     sync.Mutex
	levels map[int]*levelData
}

func (g *levelLog) add(row *rundir.RequestRow, tokens []rundir.TokenRow) {
	if row.Warmup {
		return
	}
	q := slo.RequestOf(row, tokens)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.levels == nil {
		g.levels = map[int]*levelData{}
	}
	d := g.levels[int(row.LevelIndex)]
	if d == nil {
		d = &levelData{}
		g.levels[int(row.LevelIndex)] = d
	}
	d.reqs = append(d.reqs, q)
	if q.OK {
		n := row.ClientChunks
		if row.ServerCompletionTokens != nil {
			n = *row.ServerCompletionTokens
		}
		d.tokens += n
	}
}

func (g *levelLog) get(li int) levelData {
	g.mu.Lock()
	defer g.mu.Unlock()
	if d := g.levels[li]; d != nil {
		return *d
	}
	return levelData{}
}

// outputTokPerS is a level's output throughput over its measured window,
// as the report computes it.
func (d levelData) outputTokPerS(row rundir.LevelRow) float64 {
	if w := float64(row.EndNS-row.WarmupEndNS) / 1e9; w > 0 {
		return float64(d.tokens) / w
	}
	return 0
}

// FindMax configures a search for the highest load that meets an SLO
// (WithFindMax).
type FindMax struct {
	SLO *slo.SLO
	// Start is the first load probed (0: concurrency 1, or the rate given).
	Start float64
	// Limit is the highest load probed (0: DefaultFindMaxLimit for
	// concurrency, 1024 × Start for a rate).
	Limit float64
	// Precision ends the bisection when the interval is at most this
	// fraction of its lower end; 0 bisects concurrency to adjacent
	// integers (a rate needs a positive precision).
	Precision float64
}

// Search defaults.
const (
	DefaultFindMaxLimit     = 1024 // concurrency
	DefaultFindMaxPrecision = 0.1
	// findMaxRateFloor: a rate search whose start fails halves the rate
	// down to Start/64 before it gives up.
	findMaxRateFloor = 64
	// maxSearchLevels spaces the prompt numbers of a search's levels (a
	// bisection from 1 to DefaultFindMaxLimit takes about 20).
	maxSearchLevels = 1024
)

// search is the planner of --find-max: it doubles the load until a level
// fails the SLO (or the limit passes), then bisects between the highest
// passing and the lowest failing load. The judgement is package slo's,
// the same as the report's operating point.
type search struct {
	s    *Sweep
	cfg  FindMax
	rate bool

	mu  sync.Mutex
	rec rundir.Search
}

func newSearch(s *Sweep, cfg FindMax) *search {
	se := &search{s: s, cfg: cfg, rate: len(s.cfg.rates) > 0}
	se.rec = rundir.Search{SLO: cfg.SLO.Spec, Axis: "concurrency", Start: cfg.Start, Limit: cfg.Limit,
		Precision: cfg.Precision, MaxLevel: -1, FailLevel: -1}
	if se.rate {
		se.rec.Axis = "rate_rps"
	}
	return se
}

// record is the search as it stands, for the manifest.
func (se *search) record() *rundir.Search {
	se.mu.Lock()
	defer se.mu.Unlock()
	r := se.rec
	r.Probes = slices.Clone(r.Probes)
	return &r
}

// loads are the loads probed so far, in order.
func (se *search) loads() []float64 {
	se.mu.Lock()
	defer se.mu.Unlock()
	out := make([]float64, len(se.rec.Probes))
	for i, p := range se.rec.Probes {
		out[i] = float64(p.Concurrency)
		if se.rate {
			out[i] = p.RateRPS
		}
	}
	return out
}

func (se *search) Next(done []rundir.LevelRow) (loadgen.Level, bool) {
	se.mu.Lock()
	defer se.mu.Unlock()
	if n := len(done); n > len(se.rec.Probes) {
		se.judge(done[n-1])
	}
	x, ok := se.next()
	if !ok {
		se.rec.Done = true
		se.rec.Reliable = se.reliable()
		return loadgen.Level{}, false
	}
	return se.s.levelAt(len(done), x), true
}

// judge adds the verdict of a finished level.
func (se *search) judge(row rundir.LevelRow) {
	d := se.s.levelLog.get(int(row.LevelIndex))
	v := se.cfg.SLO.Judge(slo.Level{Requests: d.reqs, Complete: row.Complete}, slo.DefaultMaxErrorFraction)
	p := rundir.SearchProbe{LevelIndex: int(row.LevelIndex), Concurrency: int(row.Concurrency), RateRPS: row.RateRPS,
		Pass: v.Pass, Sustained: v.Sustained, Requests: v.Requests, Errors: v.Errors, OutputTokPerS: d.outputTokPerS(row)}
	for _, b := range v.Bounds {
		p.Bounds = append(p.Bounds, rundir.SearchBound{Metric: b.Metric, Percentile: b.Percentile, MaxS: b.MaxS,
			ValueS: b.ValueS, N: b.N, Known: b.Known, Reliable: b.Reliable, Pass: b.Pass})
	}
	se.rec.Probes = append(se.rec.Probes, p)
	x := float64(p.Concurrency)
	if se.rate {
		x = p.RateRPS
	}
	if v.Pass && x > se.rec.Max && (se.rec.Fail == 0 || x < se.rec.Fail) {
		se.rec.Max, se.rec.MaxLevel = x, p.LevelIndex
	}
	if !v.Pass && (se.rec.Fail == 0 || x < se.rec.Fail) {
		se.rec.Fail, se.rec.FailLevel = x, p.LevelIndex
	}
}

// next is the load to probe next; false when the search is over.
func (se *search) next() (float64, bool) {
	r := &se.rec
	lo, hi := r.Max, r.Fail
	switch {
	case len(r.Probes) == 0:
		return r.Start, true
	case hi == 0: // every probe passed: raise
		last := se.lastLoad()
		if last >= r.Limit {
			r.Capped = true
			return 0, false
		}
		return se.round(min(2*last, r.Limit)), true
	case lo == 0: // nothing passed yet: lower
		if se.rate {
			if hi/2 < r.Start/findMaxRateFloor {
				return 0, false
			}
			return hi / 2, true
		}
		if hi <= 1 {
			return 0, false
		}
		return math.Floor(hi / 2), true
	}
	width := hi - lo
	if (!se.rate && width <= 1) || width <= r.Precision*lo {
		return 0, false
	}
	return se.round((lo + hi) / 2), true
}

func (se *search) lastLoad() float64 {
	p := se.rec.Probes[len(se.rec.Probes)-1]
	if se.rate {
		return p.RateRPS
	}
	return float64(p.Concurrency)
}

func (se *search) round(x float64) float64 {
	if se.rate {
		return x
	}
	return math.Floor(x)
}

// reliable: every bound at both sides rests on enough requests.
func (se *search) reliable() bool {
	ok := se.rec.MaxLevel >= 0 || se.rec.FailLevel >= 0
	for _, p := range se.rec.Probes {
		if p.LevelIndex != se.rec.MaxLevel && p.LevelIndex != se.rec.FailLevel {
			continue
		}
		for _, b := range p.Bounds {
			ok = ok && b.Reliable
		}
	}
	return ok
}

// levelAt is the level of the given index at load x: a concurrency, or an
// arrival rate under the concurrency cap.
func (s *Sweep) levelAt(index int, x float64) loadgen.Level {
	l := loadgen.Level{Index: index, Concurrency: int(x)}
	if len(s.cfg.rates) > 0 {
		l = loadgen.Level{Index: index, Concurrency: s.cfg.maxConc, RateRPS: x, Arrivals: s.arrivals(index, x)}
	}
	l.Warmup, l.Requests, l.Duration = s.warmupCount(l), s.measuredCount(l), s.cfg.durationPerLevel
	if s.cfg.sessions != nil {
		l.Sessions, l.Warmup, l.Requests = true, s.warmupSessions(l.Concurrency), s.sessionCount(l.Concurrency)
	}
	return l
}

// Saturation: the sweep stops raising the load once the last two levels
// each gained less than SaturationGainPerDoubling of output throughput per
// doubling of the load over the best level before them (the report's
// plateau threshold, analysis setting plateau_gain_per_doubling), while
// median TTFT rose at each of the last two steps beyond its 95 % interval.
// Measured against the best earlier level, one noisy level neither hides
// a plateau nor fakes one.
const SaturationGainPerDoubling = 0.10

// saturating runs a fixed plan and stops it once the server is saturated.
type saturating struct {
	s    *Sweep
	plan loadgen.Plan

	mu  sync.Mutex
	sat *rundir.Saturation
}

func (p *saturating) Len() int { return len(p.plan) }

func (p *saturating) Next(done []rundir.LevelRow) (loadgen.Level, bool) {
	// Judged only while there is a level left to skip.
	if n := len(done); n >= 3 && n < len(p.plan) {
		if sat := p.s.saturation(done); sat != nil {
			for _, l := range p.plan[n:] {
				sat.Skipped = append(sat.Skipped, loadOf(l))
			}
			p.mu.Lock()
			p.sat = sat
			p.mu.Unlock()
			return loadgen.Level{}, false
		}
	}
	return p.plan.Next(done)
}

func (p *saturating) saturated() *rundir.Saturation {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sat
}

func loadOf(l loadgen.Level) float64 {
	if l.RateRPS > 0 {
		return l.RateRPS
	}
	return float64(l.Concurrency)
}

func rowLoad(r rundir.LevelRow) float64 {
	if r.RateRPS > 0 {
		return r.RateRPS
	}
	return float64(r.Concurrency)
}

// saturation judges the levels run so far, in order of rising load; nil
// when the server is not (yet) saturated.
func (s *Sweep) saturation(rows []rundir.LevelRow) *rundir.Saturation {
	sat := s.saturationOf(rows)
	if sat == nil || len(sat.GainPerDoubling) != 2 {
		return nil
	}
	for i := 1; i < 3; i++ {
		if sat.GainPerDoubling[i-1] >= SaturationGainPerDoubling || sat.TTFTP50LowS[i] <= sat.TTFTP50HighS[i-1] {
			return nil
		}
	}
	return sat
}

// saturationOf measures what saturation is judged on: the last three
// levels' throughput and median TTFT with its interval, and the last two
// levels' gain per doubling of the load over the best level before them;
// nil when the loads do not rise, there are fewer than three levels, or a
// level has no TTFT.
func (s *Sweep) saturationOf(rows []rundir.LevelRow) *rundir.Saturation {
	n := len(rows)
	if n < 3 {
		return nil
	}
	sat := &rundir.Saturation{GainLimit: SaturationGainPerDoubling, PeakLevel: -1}
	tput := make([]float64, n)
	for i, r := range rows {
		if i > 0 && rowLoad(r) <= rowLoad(rows[i-1]) {
			return nil // not a rising load
		}
		tput[i] = s.levelLog.get(int(r.LevelIndex)).outputTokPerS(r)
	}
	b := stats.Bootstrap{Resamples: 1000, Seed: 1, Confidence: 0.95}
	for _, r := range rows[n-3:] {
		d := s.levelLog.get(int(r.LevelIndex))
		var ttft []float64
		for _, q := range d.reqs {
			if q.OK && !math.IsNaN(q.TTFTS) {
				ttft = append(ttft, q.TTFTS)
			}
		}
		iv, ok := b.Percentile(ttft, 50)
		if !ok {
			return nil
		}
		sat.Levels = append(sat.Levels, int(r.LevelIndex))
		sat.OutputTokPerS = append(sat.OutputTokPerS, d.outputTokPerS(r))
		sat.TTFTP50S = append(sat.TTFTP50S, iv.Estimate)
		sat.TTFTP50LowS = append(sat.TTFTP50LowS, iv.Low)
		sat.TTFTP50HighS = append(sat.TTFTP50HighS, iv.High)
	}
	peak := 0
	for i := range n - 2 {
		if tput[i] > tput[peak] {
			peak = i
		}
	}
	if tput[peak] <= 0 {
		return sat
	}
	sat.PeakLevel, sat.PeakOutputTokPerS = int(rows[peak].LevelIndex), tput[peak]
	for _, i := range []int{n - 2, n - 1} {
		d := math.Log2(rowLoad(rows[i]) / rowLoad(rows[peak]))
		sat.GainPerDoubling = append(sat.GainPerDoubling, math.Pow(tput[i]/tput[peak], 1/d)-1)
	}
	last := rows[n-1]
	sat.LevelIndex, sat.Concurrency, sat.RateRPS = int(last.LevelIndex), int(last.Concurrency), last.RateRPS
	return sat
}

// planner is what the sweep's levels come from: the fixed plan, or the
// search or the saturation stop over it.
func (s *Sweep) planner() (loadgen.Planner, error) {
	switch {
	case s.search != nil:
		if s.startLevel > 0 {
			return nil, fmt.Errorf("a search (--find-max) cannot be resumed: run it again")
		}
		return s.search, nil
	case s.saturating != nil:
		s.saturating.plan = s.plan()[min(s.startLevel, len(s.plan())):]
		return s.saturating, nil
	}
	plan := s.ownPlan()
	return loadgen.Plan(plan[min(s.startLevel, len(plan)):]), nil
}
