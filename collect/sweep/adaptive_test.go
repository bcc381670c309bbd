package sweep

import (
	"fmt"
	"math"
	"testing"

	"github.com/headroom-llm/headroom/rundir"
	"github.com/headroom-llm/headroom/slo"
	"github.com/headroom-llm/headroom/stats"
)

// simulate drives a search without a server: a level at load x passes the
// SLO ttft_p99=100ms when pass(x), with 100 requests of TTFT 50 ms or
// 200 ms. It returns the search's record.
func simulate(t *testing.T, s *Sweep, pass func(x float64) bool) *rundir.Search {
	t.Helper()
	se := s.search
	var done []rundir.LevelRow
	for range 64 {
		l, ok := se.Next(done)
		if !ok {
			return se.record()
		}
		x := loadOf(l)
		ttft := 0.2
		if pass(x) {
			ttft = 0.05
		}
		for range 100 {
			s.levelLog.add(&rundir.RequestRow{LevelIndex: int32(l.Index), Status: rundir.StatusOK, SendNS: 1, IntendedSendNS: 1,
				FirstTokenNS: ptr(1 + int64(ttft*1e9)), EndNS: 2e9, ClientChunks: 4}, nil)
		}
		done = append(done, rundir.LevelRow{LevelIndex: int32(l.Index), Concurrency: int64(l.Concurrency), RateRPS: l.RateRPS,
			WarmupEndNS: 0, EndNS: 1e9, Complete: true})
	}
	t.Fatal("the search did not end in 64 levels")
	return nil
}

func ptr[T any](v T) *T { return &v }

// The search finds every boundary from 1 to 300 in concurrency exactly
// (precision 0), with the evidence of both sides: the doubling phase and
// then a bisection, in at most 2·log2(limit) levels, each probed once.
func TestSearchFindsBoundary(t *testing.T) {
	s1, _ := slo.Parse("ttft_p99=100ms")
	for _, boundary := range []float64{1, 2, 3, 5, 8, 13, 64, 100, 255, 300} {
		s := mustNew(t, "http://127.0.0.1:1", WithFindMax(FindMax{SLO: s1, Limit: 512}))
		r := simulate(t, s, func(x float64) bool { return x <= boundary })
		if !r.Done || r.Max != boundary || r.Fail != boundary+1 || r.Capped || !r.Reliable {
			t.Errorf("boundary %v: found max %v fail %v (capped %v, reliable %v)", boundary, r.Max, r.Fail, r.Capped, r.Reliable)
		}
		seen := map[int]bool{}
		for i, p := range r.Probes {
			if seen[p.Concurrency] || p.LevelIndex != i {
				t.Errorf("boundary %v: probe %d %+v repeats a load or skips an index", boundary, i, p)
			}
			seen[p.Concurrency] = true
			if want := float64(p.Concurrency) <= boundary; p.Pass != want || len(p.Bounds) != 1 || p.Bounds[0].Pass != want {
				t.Errorf("boundary %v: probe %+v", boundary, p)
			}
		}
		if max := 2 * int(math.Ceil(math.Log2(512))); len(r.Probes) > max {
			t.Errorf("boundary %v: %d probes, more than %d", boundary, len(r.Probes), max)
		}
	}
}

// The limits: a start that fails searches down; nothing passing ends at
// concurrency 1 with no maximum; everything passing ends at the limit,
// capped; a precision stops the bisection early with an interval that
// holds the boundary; a rate search halves and bisects rates.
func TestSearchEnds(t *testing.T) {
	s1, _ := slo.Parse("ttft_p99=100ms")
	s := mustNew(t, "http://127.0.0.1:1", WithFindMax(FindMax{SLO: s1, Start: 16, Limit: 64}))
	if r := simulate(t, s, func(x float64) bool { return x <= 5 }); r.Max != 5 || r.Fail != 6 || r.Probes[0].Concurrency != 16 {
		t.Errorf("start above the boundary: %+v", r)
	}
	s = mustNew(t, "http://127.0.0.1:1", WithFindMax(FindMax{SLO: s1, Start: 4}))
	if r := simulate(t, s, func(float64) bool { return false }); r.Max != 0 || r.MaxLevel != -1 || r.Fail != 1 || r.Capped {
		t.Errorf("nothing passes: %+v", r)
	}
	s = mustNew(t, "http://127.0.0.1:1", WithFindMax(FindMax{SLO: s1, Limit: 48}))
	if r := simulate(t, s, func(float64) bool { return true }); r.Max != 48 || !r.Capped || r.FailLevel != -1 || len(r.Probes) != 7 {
		t.Errorf("everything passes: %+v", r)
	}
	s = mustNew(t, "http://127.0.0.1:1", WithFindMax(FindMax{SLO: s1, Precision: 0.25}))
	r := simulate(t, s, func(x float64) bool { return x <= 100 })
	if !(r.Max <= 100 && r.Fail > 100 && r.Fail-r.Max <= 0.25*r.Max) || len(r.Probes) > 10 {
		t.Errorf("precision 0.25: [%v, %v) in %d probes", r.Max, r.Fail, len(r.Probes))
	}
	s = mustNew(t, "http://127.0.0.1:1", WithRates(64, 8), WithFindMax(FindMax{SLO: s1, Precision: 0.05}))
	r = simulate(t, s, func(x float64) bool { return x <= 2.7 })
	if r.Axis != "rate_rps" || !(r.Max <= 2.7 && r.Fail > 2.7 && r.Fail-r.Max <= 0.05*r.Max) || r.Probes[0].RateRPS != 8 {
		t.Errorf("rate search: %+v", r)
	}
	for _, p := range r.Probes {
		if p.Concurrency != 64 {
			t.Errorf("rate probe %+v: cap not kept", p)
		}
	}
}

func TestSearchOptions(t *testing.T) {
	s1, _ := slo.Parse("ttft_p99=1s")
	for _, opts := range [][]Option{
		{WithFindMax(FindMax{})},
		{WithFindMax(FindMax{SLO: s1, Start: 1.5})},
		{WithFindMax(FindMax{SLO: s1, Start: 8, Limit: 4})},
		{WithFindMax(FindMax{SLO: s1, Precision: 1})},
		{WithRates(0, 1, 2), WithFindMax(FindMax{SLO: s1, Precision: 0.1})},
		{WithRates(0, 1), WithFindMax(FindMax{SLO: s1})},
		{WithFindMax(FindMax{SLO: s1}), WithStopWhenSaturated(true)},
	} {
		if _, err := New("http://127.0.0.1:1", opts...); err == nil {
			t.Errorf("%d options accepted", len(opts))
		}
	}
	if DefaultMinRequestsPerLevel != stats.MinSamples(99) {
		t.Errorf("default minimum of %d requests per level, a p99 needs %d", DefaultMinRequestsPerLevel, stats.MinSamples(99))
	}
}

// Saturation: the last two levels gain less than 10 % per doubling over
// the best level before them, and median TTFT rises beyond its interval at
// both steps; one of the two alone is not saturation, and a noisy middle
// level neither hides nor fakes it.
func TestSaturation(t *testing.T) {
	s := mustNew(t, "http://127.0.0.1:1", WithLevels(1, 2, 4, 8))
	next := 0
	level := func(conc int64, tokensPerS float64, ttft float64) rundir.LevelRow {
		li := next
		next++
		for i := range 100 {
			d := ttft * (1 + 0.1*float64(i%10-5)/5) // ±10 % spread
			s.levelLog.add(&rundir.RequestRow{LevelIndex: int32(li), Status: rundir.StatusOK, SendNS: 1, IntendedSendNS: 1,
				FirstTokenNS: ptr(1 + int64(d*1e9)), EndNS: 2e9, ClientChunks: int64(tokensPerS / 100)}, nil)
		}
		return rundir.LevelRow{LevelIndex: int32(li), Concurrency: conc, EndNS: 1e9, Complete: true}
	}
	cases := []struct {
		name      string
		tokens    []float64
		ttft      []float64
		saturated bool
	}{
		{"flat and TTFT rising", []float64{1000, 1050, 1060}, []float64{0.05, 0.1, 0.2}, true},
		{"still gaining", []float64{1000, 1500, 2200}, []float64{0.05, 0.1, 0.2}, false},
		{"flat, TTFT flat", []float64{1000, 1000, 1000}, []float64{0.05, 0.05, 0.051}, false},
		{"gain, then one flat level", []float64{1000, 1800, 1850}, []float64{0.05, 0.1, 0.2}, false},
		{"a noisy low level in the plateau", []float64{1000, 1900, 1400, 2000}, []float64{0.01, 0.02, 0.1, 0.3}, true},
		{"a noisy high level, then growth", []float64{1000, 1900, 1500, 3000, 5000}, []float64{0.01, 0.02, 0.1, 0.3, 0.6}, false},
	}
	for _, c := range cases {
		var rows []rundir.LevelRow
		for i := range c.tokens {
			rows = append(rows, level(int64(1)<<i, c.tokens[i], c.ttft[i]))
		}
		sat := s.saturation(rows)
		if (sat != nil) != c.saturated {
			t.Errorf("%s: saturated %+v (measured %+v)", c.name, sat, s.saturationOf(rows))
		}
		last := int(rows[len(rows)-1].LevelIndex)
		if sat != nil && (sat.LevelIndex != last || len(sat.GainPerDoubling) != 2 || fmt.Sprint(sat.Levels) != fmt.Sprint([]int{last - 2, last - 1, last})) {
			t.Errorf("%s: %+v", c.name, sat)
		}
	}
}
