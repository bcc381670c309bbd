package compare

import (
	"cmp"
	"github.com/headroom-llm/headroom/analyze"
	"math"
	"slices"

	"github.com/headroom-llm/headroom/stats"
)

// GroupComparison compares one candidate group with the baseline group.
type GroupComparison struct {
	Baseline  string `json:"baseline"`
	Candidate string `json:"candidate"`
	// NotComparable is set when the groups' runs differ in a key of
	// MustMatch: Differs lists the keys and values, and the deltas show
	// both sides with no test.
	NotComparable bool      `json:"not_comparable,omitempty"`
	Differs       []DiffRow `json:"not_comparable_keys,omitempty"`
	Deltas        []Delta   `json:"deltas"`
}

// Delta is one metric of a candidate group against the baseline: the two
// values, the relative change, and how sure the comparison is.
type Delta struct {
	// Metric is the name --fail-if uses: throughput, goodput, cost, or
	// ttft_p50, ttft_p99, tpot_p50, tpot_p99, e2e_p50, e2e_p99 at a level.
	Metric string `json:"metric"`
	// Load is the level of a latency; zero for the whole-run metrics.
	Load           analyze.LoadKey `json:"load,omitzero"`
	Concurrency    int             `json:"concurrency,omitempty"`
	RateRPS        float64         `json:"rate_rps,omitempty"`
	Unit           string          `json:"unit"` // tok/s, s or usd/Mtok
	HigherIsBetter bool            `json:"higher_is_better"`
	Baseline       float64         `json:"baseline"`
	Candidate      float64         `json:"candidate"`
	// Change is candidate/baseline − 1.
	Change float64 `json:"change"`
	// Over says what the values rest on: "requests" (pooled per-request
	// values of the group's runs at that level) or "runs" (one value per
	// run, averaged); N1 and N2 count them.
	Over string `json:"over"`
	N1   int    `json:"n1"`
	N2   int    `json:"n2"`
	// Test names the method; empty when no test could be made (then
	// NoTest says why). P is its two-sided p-value, Interval its interval
	// of candidate/baseline when it is a bootstrap.
	Test        string          `json:"test,omitempty"`
	P           *float64        `json:"p,omitempty"`
	Interval    *stats.Interval `json:"interval,omitempty"`
	Significant bool            `json:"significant"`
	// NoTest is why no test, or only a weak one, was made: a NoTest*
	// value, with its numbers (N1 and N2; MinP and Alpha for NoTestPFloor;
	// Percentile and Need for NoTestFewRequests).
	NoTest     string  `json:"no_test,omitempty"`
	MinP       float64 `json:"min_p,omitempty"`
	Alpha      float64 `json:"alpha,omitempty"`
	Percentile float64 `json:"percentile,omitempty"`
	Need       int     `json:"need,omitempty"`
}

// Why a delta has no test (Delta.NoTest).
const (
	// NoTestNotComparable: the groups differ in a key that must match.
	NoTestNotComparable = "not_comparable"
	// NoTestFewRuns: fewer than 2 runs on a side; a difference between
	// configurations needs repeated runs of each.
	NoTestFewRuns = "few_runs"
	// NoTestPFloor: with N1 and N2 runs the smallest possible p is MinP,
	// so nothing can be significant at Alpha (the test was made).
	NoTestPFloor = "p_floor"
	// NoTestFewRequests: a percentile needs Need requests a side.
	NoTestFewRequests = "few_requests"
	// NoTestNoBootstrap: no resamples set, or a zero latency.
	NoTestNoBootstrap = "no_bootstrap"
)

// Better reports whether the change is an improvement.
func (d Delta) Better() bool {
	if d.HigherIsBetter {
		return d.Change > 0
	}
	return d.Change < 0
}

type runMetric struct {
	name   string
	unit   string
	higher bool
	get    func(*SweepSummary) float64
}

var runMetrics = []runMetric{
	{"throughput", "tok/s", true, func(s *SweepSummary) float64 { return s.PeakOutputTokPerS }},
	{"goodput", "tok/s", true, func(s *SweepSummary) float64 { return s.SLOOutputTokPerS }},
	{"cost", "usd/Mtok", false, func(s *SweepSummary) float64 { return s.USDPerMTokOutput }},
}

type levelMetric struct {
	name    string
	p       float64
	samples func(*levelSamplesView) []float64
	value   func(Level) float64
}

type levelSamplesView struct{ ttft, tpot, e2e []float64 }

var levelMetrics = []levelMetric{
	{"ttft_p50", 50, func(v *levelSamplesView) []float64 { return v.ttft }, func(l Level) float64 { return l.TTFTP50S }},
	{"ttft_p99", 99, func(v *levelSamplesView) []float64 { return v.ttft }, func(l Level) float64 { return l.TTFTP99S }},
	{"tpot_p50", 50, func(v *levelSamplesView) []float64 { return v.tpot }, func(l Level) float64 { return l.TPOTP50S }},
	{"tpot_p99", 99, func(v *levelSamplesView) []float64 { return v.tpot }, func(l Level) float64 { return l.TPOTP99S }},
	{"e2e_p50", 50, func(v *levelSamplesView) []float64 { return v.e2e }, func(l Level) float64 { return l.E2EP50S }},
	{"e2e_p99", 99, func(v *levelSamplesView) []float64 { return v.e2e }, func(l Level) float64 { return l.E2EP99S }},
}

// MetricNames lists every metric a Delta (and a --fail-if rule) can name.
func MetricNames() []string {
	var out []string
	for _, m := range runMetrics {
		out = append(out, m.name)
	}
	for _, m := range levelMetrics {
		out = append(out, m.name)
	}
	return out
}

// compareGroups compares every candidate group with the baseline group.
func compareGroups(c *Comparison, ctx []map[string]string, opts Options) []GroupComparison {
	var base *Group
	for i := range c.Groups {
		if c.Groups[i].Baseline {
			base = &c.Groups[i]
		}
	}
	if base == nil {
		return nil
	}
	b := stats.Bootstrap{Resamples: opts.Settings.BootstrapResamples, Seed: opts.Settings.BootstrapSeed, Confidence: 1 - opts.Alpha}
	var out []GroupComparison
	for _, g := range c.Groups {
		if g.Baseline || !hasSweep(c, g) {
			continue
		}
		gc := GroupComparison{Baseline: base.Name, Candidate: g.Name}
		gc.Differs = comparability(c, ctx, base.Runs, g.Runs, allowedToDiffer(opts))
		gc.NotComparable = len(gc.Differs) > 0
		for _, m := range runMetrics {
			xs, ys := runValues(c, base.Runs, m.get), runValues(c, g.Runs, m.get)
			if len(xs) == 0 || len(ys) == 0 {
				continue
			}
			d := Delta{Metric: m.name, Unit: m.unit, HigherIsBetter: m.higher, Baseline: mean(xs), Candidate: mean(ys), Over: "runs"}
			if gc.NotComparable {
				d.N1, d.N2, d.NoTest = len(xs), len(ys), NoTestNotComparable
			} else {
				testRuns(&d, xs, ys, opts.Alpha)
			}
			gc.Deltas = append(gc.Deltas, finish(d))
		}
		for _, key := range commonLevels(c, base.Runs, g.Runs) {
			for _, m := range levelMetrics {
				if d, ok := compareLevel(c, base.Runs, g.Runs, key, m, b, opts.Alpha, gc.NotComparable); ok {
					gc.Deltas = append(gc.Deltas, finish(d))
				}
			}
		}
		out = append(out, gc)
	}
	return out
}

func finish(d Delta) Delta {
	if d.Baseline != 0 {
		d.Change = d.Candidate/d.Baseline - 1
	}
	return d
}

func runValues(c *Comparison, idx []int, get func(*SweepSummary) float64) []float64 {
	var xs []float64
	for _, i := range idx {
		if s := c.Runs[i].Sweep; s != nil {
			if v := get(s); v > 0 && !math.IsNaN(v) {
				xs = append(xs, v)
			}
		}
	}
	return xs
}

// testRuns tests per-run values (one per repeated run) with Mann-Whitney U.
func testRuns(d *Delta, xs, ys []float64, alpha float64) {
	d.N1, d.N2 = len(xs), len(ys)
	if len(xs) < 2 || len(ys) < 2 {
		d.NoTest = NoTestFewRuns
		return
	}
	mw, _ := stats.MannWhitneyU(xs, ys)
	d.Test, d.P = mw.Method, &mw.P
	d.Significant = mw.P < alpha
	if minP := minExactP(len(xs), len(ys)); minP >= alpha && !d.Significant {
		d.NoTest, d.MinP, d.Alpha = NoTestPFloor, minP, alpha
	}
}

// minExactP is the smallest two-sided exact Mann-Whitney p-value for
// samples of n1 and n2: 2 / C(n1+n2, n1).
func minExactP(n1, n2 int) float64 {
	c := 1.0
	for i := 1; i <= n1; i++ {
		c = c * float64(n2+i) / float64(i)
	}
	return math.Min(1, 2/c)
}

// commonLevels are the levels both groups measured, in load order.
func commonLevels(c *Comparison, a, b []int) []analyze.LoadKey {
	has := func(idx []int) map[analyze.LoadKey]bool {
		m := map[analyze.LoadKey]bool{}
		for _, i := range idx {
			if s := c.Runs[i].Sweep; s != nil {
				for _, l := range s.Levels {
					m[l.Load] = true
				}
			}
		}
		return m
	}
	ha, hb := has(a), has(b)
	var keys []analyze.LoadKey
	for k := range ha {
		if hb[k] {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(x, y analyze.LoadKey) int {
		return cmp.Or(cmp.Compare(x.Axis, y.Axis), cmp.Compare(x.RateRPS, y.RateRPS), cmp.Compare(x.Concurrency, y.Concurrency))
	})
	return keys
}

// compareLevel compares one latency percentile at one level. When every
// run involved kept its requests, the groups' requests at that level are
// pooled: the percentile is taken over the pool, p50 changes are tested
// with Mann-Whitney U and p99 changes with a bootstrap interval of the
// ratio. Otherwise (imports with per-level statistics only) the runs'
// level values are averaged and tested as per-run values.
//
// With untested set (the groups are not comparable), the values are
// computed and no test is made: NoTest says why.
func compareLevel(c *Comparison, a, b []int, key analyze.LoadKey, m levelMetric, boot stats.Bootstrap, alpha float64, untested bool) (Delta, bool) {
	d := Delta{Metric: m.name, Unit: "s", Load: key, Concurrency: key.Concurrency, RateRPS: key.RateRPS}
	pa, oka := pooled(c, a, key, m)
	pb, okb := pooled(c, b, key, m)
	if oka && okb {
		if len(pa) == 0 || len(pb) == 0 {
			return d, false
		}
		sa, sb := stats.Sorted(pa), stats.Sorted(pb)
		d.Baseline, d.Candidate = stats.Percentile(sa, m.p), stats.Percentile(sb, m.p)
		d.Over, d.N1, d.N2 = "requests", len(pa), len(pb)
		need := stats.MinSamples(m.p)
		switch {
		case untested:
			d.NoTest = NoTestNotComparable
		case len(pa) < need || len(pb) < need:
			d.NoTest, d.Percentile, d.Need = NoTestFewRequests, m.p, need
		case m.p == 50:
			mw, _ := stats.MannWhitneyUSorted(sa, sb) // sorted once, for the percentiles too
			d.Test, d.P, d.Significant = mw.Method+" on per-request values", &mw.P, mw.P < alpha
		default:
			iv, ok := boot.PercentileRatioSorted(sa, sb, m.p)
			if !ok {
				d.NoTest = NoTestNoBootstrap
				break
			}
			d.Test, d.Interval = iv.Method, &iv
			d.Significant = iv.Low > 1 || iv.High < 1
		}
		return d, d.Baseline > 0
	}
	xs, ys := levelValues(c, a, key, m), levelValues(c, b, key, m)
	if len(xs) == 0 || len(ys) == 0 {
		return d, false
	}
	d.Baseline, d.Candidate, d.Over = mean(xs), mean(ys), "runs"
	if untested {
		d.N1, d.N2, d.NoTest = len(xs), len(ys), NoTestNotComparable
		return d, true
	}
	testRuns(&d, xs, ys, alpha)
	return d, true
}

// pooled gathers the per-request values of a metric at a level from the
// runs in idx; ok is false when a run at that level has no per-request
// data.
func pooled(c *Comparison, idx []int, key analyze.LoadKey, m levelMetric) (vals []float64, ok bool) {
	ok = true
	for _, i := range idx {
		r := &c.Runs[i]
		if r.Sweep == nil {
			continue
		}
		at := false
		for _, l := range r.Sweep.Levels {
			if l.Load == key {
				at = true
			}
		}
		if !at {
			continue
		}
		found := false
		for _, s := range r.samples {
			if analyze.LoadKeyOf(r.Sweep.Axis, s.Concurrency, s.RateRPS) == key {
				v := &levelSamplesView{ttft: s.TTFTS, tpot: s.TPOTS, e2e: s.E2ES}
				vals = append(vals, m.samples(v)...)
				found = true
			}
		}
		if !found {
			ok = false
		}
	}
	return vals, ok
}

func levelValues(c *Comparison, idx []int, key analyze.LoadKey, m levelMetric) []float64 {
	var xs []float64
	for _, i := range idx {
		if s := c.Runs[i].Sweep; s != nil {
			for _, l := range s.Levels {
				if l.Load == key {
					if v := m.value(l); v > 0 {
						xs = append(xs, v)
					}
				}
			}
		}
	}
	return xs
}
