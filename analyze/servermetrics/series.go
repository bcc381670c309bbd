package servermetrics

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/headroom-llm/headroom/promtext"
)

// DefaultQuantiles are the quantiles Extract computes when Options leave
// them unset.
var DefaultQuantiles = []float64{0.5, 0.9, 0.99}

// Options control Extract.
type Options struct {
	// Engine selects the table row; "" detects it from metric prefixes.
	Engine string
	// Quantiles to compute from histograms; nil means DefaultQuantiles.
	Quantiles []float64
}

// Point is a value at a scrape time.
type Point struct {
	TimeNS int64
	Value  float64
}

// Series is one gauge or counter series: one metric with one label set.
type Series struct {
	Quantity Quantity
	Metric   string
	Labels   string
	Kind     Kind
	Points   []Point // sorted by time; gauges scaled into the quantity's unit
}

// RatePoint is the increase of a counter between two consecutive scrapes.
type RatePoint struct {
	StartNS, EndNS int64
	Increase       float64 // counter increase; after a reset, the new value
	PerSecond      float64 // Increase divided by the interval
	Reset          bool    // the counter went down (engine restart)
}

// RateSeries is a counter turned into per-interval increases.
type RateSeries struct {
	Quantity Quantity
	Metric   string
	Labels   string
	Points   []RatePoint
}

// QuantilePoint holds the quantiles of the observations made between two
// consecutive scrapes.
type QuantilePoint struct {
	StartNS, EndNS int64
	Count          float64   // observations in the interval
	Sum            float64   // their sum (NaN when _sum is missing)
	Values         []float64 // one per Result.Quantiles; NaN when Count is 0
}

// QuantileSeries is a histogram turned into per-interval quantiles.
type QuantileSeries struct {
	Quantity Quantity
	Metric   string
	Labels   string // without "le"
	Points   []QuantilePoint
}

// Result is what Extract found.
type Result struct {
	Engine     string
	Quantiles  []float64
	Gauges     []Series
	Counters   []Series // cumulative values as exposed
	Rates      []RateSeries
	Histograms []QuantileSeries
	Warnings   []Warning
}

// Warning is a problem Extract found in the samples, as data: render says
// it in words.
type Warning struct {
	Kind string `json:"kind"` // a Warn* value
	// Metric is the series' name (a histogram's family), Labels its label
	// set as encoded in the table.
	Metric string `json:"metric"`
	Labels string `json:"labels"`
	// Quantity and Value: WarnAboveOne's fraction and the value it had.
	Quantity Quantity `json:"quantity,omitempty"`
	Value    float64  `json:"value,omitempty"`
	// LE is WarnBadLE's bucket bound as written.
	LE string `json:"le,omitempty"`
	// FromNS and ToNS: WarnBoundsChanged's two scrapes.
	FromNS int64 `json:"from_ns,omitempty"`
	ToNS   int64 `json:"to_ns,omitempty"`
}

// Warning kinds.
const (
	WarnAboveOne      = "above_one"      // a fraction above 1: the table's scale may be wrong (percent, not fraction)
	WarnBadLE         = "bad_le"         // a bucket whose le is not a number
	WarnBoundsChanged = "bounds_changed" // bucket bounds changed between two scrapes: that interval is skipped
	WarnNoInfBucket   = "no_inf_bucket"  // a histogram without a +Inf bucket: its quantiles are NaN
)

// Extract finds the engine's quantities in samples and turns them into
// series: gauges as they are (scaled), counters as cumulative series and
// per-interval rates, histograms as per-interval quantiles (see
// BucketQuantile). Samples need not be sorted.
func Extract(samples []Sample, opts Options) (*Result, error) {
	engine := opts.Engine
	if engine == "" {
		engine = DetectEngine(samples)
		if engine == "" {
			var prefixes []string
			for _, e := range Engines {
				prefixes = append(prefixes, e.Prefix)
			}
			return nil, fmt.Errorf("servermetrics: no known engine metric prefix in %d samples (want one of %s)", len(samples), strings.Join(prefixes, ", "))
		}
	}
	row, ok := Lookup(engine)
	if !ok {
		return nil, fmt.Errorf("servermetrics: no metric table for engine %q", engine)
	}
	qs := opts.Quantiles
	if qs == nil {
		qs = DefaultQuantiles
	}
	byName := map[string][]Sample{}
	for _, s := range samples {
		if n := row.canonicalName(s.Name); n != "" && n != s.Name {
			s.Name = n
		}
		byName[s.Name] = append(byName[s.Name], s)
	}
	res := &Result{Engine: engine, Quantiles: append([]float64(nil), qs...)}

	quantities := make([]Quantity, 0, len(row.Quantities))
	for q := range row.Quantities {
		quantities = append(quantities, q)
	}
	sort.Slice(quantities, func(i, j int) bool { return quantities[i] < quantities[j] })

	for _, q := range quantities {
		for _, src := range row.Quantities[q] {
			found := false
			switch src.Kind {
			case Gauge:
				if ss := byName[src.Name]; len(ss) > 0 {
					found = true
					scale := src.Scale
					if scale == 0 {
						scale = 1
					}
					for _, se := range groupByLabels(ss, q, src.Name, Gauge) {
						for i := range se.Points {
							se.Points[i].Value *= scale
						}
						if q == KVUsage || q == CPUKVUsage || q == PrefixHitRate {
							for _, p := range se.Points {
								if p.Value > 1.0001 {
									res.Warnings = append(res.Warnings, Warning{Kind: WarnAboveOne, Metric: src.Name, Labels: se.Labels, Quantity: q, Value: p.Value})
									break
								}
							}
						}
						res.Gauges = append(res.Gauges, se)
					}
				}
			case Counter:
				if ss := byName[src.Name]; len(ss) > 0 {
					found = true
					for _, se := range groupByLabels(ss, q, src.Name, Counter) {
						res.Counters = append(res.Counters, se)
						res.Rates = append(res.Rates, rates(se))
					}
				}
			case Histogram:
				if ss := byName[src.Name+"_bucket"]; len(ss) > 0 {
					found = true
					hs, warns := histogramQuantiles(q, src.Name, ss, byName[src.Name+"_sum"], qs)
					res.Histograms = append(res.Histograms, hs...)
					res.Warnings = append(res.Warnings, warns...)
				}
			}
			if found {
				break
			}
		}
	}
	return res, nil
}

// groupByLabels splits samples of one metric into series by label set.
func groupByLabels(ss []Sample, q Quantity, metric string, kind Kind) []Series {
	idx := map[string]int{}
	var out []Series
	for _, s := range ss {
		i, ok := idx[s.Labels]
		if !ok {
			i = len(out)
			idx[s.Labels] = i
			out = append(out, Series{Quantity: q, Metric: metric, Labels: s.Labels, Kind: kind})
		}
		out[i].Points = append(out[i].Points, Point{s.TimeNS, s.Value})
	}
	for i := range out {
		sortPoints(out[i].Points)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Labels < out[j].Labels })
	return out
}

func sortPoints(p []Point) {
	sort.SliceStable(p, func(i, j int) bool { return p[i].TimeNS < p[j].TimeNS })
}

// rates turns a cumulative counter into per-interval increases. A counter
// that goes down was reset (the engine restarted); the increase over that
// interval is taken to be the new value, as Prometheus' rate() does.
func rates(se Series) RateSeries {
	out := RateSeries{Quantity: se.Quantity, Metric: se.Metric, Labels: se.Labels}
	for i := 1; i < len(se.Points); i++ {
		a, b := se.Points[i-1], se.Points[i]
		if b.TimeNS <= a.TimeNS {
			continue
		}
		inc, reset := b.Value-a.Value, false
		if inc < 0 {
			inc, reset = b.Value, true
		}
		dt := float64(b.TimeNS-a.TimeNS) / 1e9
		out.Points = append(out.Points, RatePoint{StartNS: a.TimeNS, EndNS: b.TimeNS, Increase: inc, PerSecond: inc / dt, Reset: reset})
	}
	return out
}

// histogramQuantiles turns cumulative bucket samples into per-interval
// quantiles: for each pair of consecutive scrapes, each bucket's increase
// (its count at the later scrape minus its count at the earlier one) is a
// histogram of the observations made in between, and BucketQuantile reads
// quantiles from it. A bucket that went down means a reset; the interval
// then uses the later counts alone.
func histogramQuantiles(q Quantity, family string, buckets, sums []Sample, qs []float64) ([]QuantileSeries, []Warning) {
	type scrape struct {
		t       int64
		buckets []Bucket
	}
	type group struct {
		labels  string
		scrapes map[int64]*scrape
	}
	groups := map[string]*group{}
	var warns []Warning
	// Every scrape repeats the same bucket label sets: each is split once.
	type split struct{ rest, le string }
	splits := map[string]split{}
	for _, s := range buckets {
		sp, ok := splits[s.Labels]
		if !ok {
			sp.rest, sp.le = withoutLabel(s.Labels, promtext.BucketLabel)
			splits[s.Labels] = sp
		}
		rest, le := sp.rest, sp.le
		bound, err := strconv.ParseFloat(le, 64)
		if err != nil {
			warns = append(warns, Warning{Kind: WarnBadLE, Metric: family, Labels: s.Labels, LE: le})
			continue
		}
		gr := groups[rest]
		if gr == nil {
			gr = &group{labels: rest, scrapes: map[int64]*scrape{}}
			groups[rest] = gr
		}
		sc := gr.scrapes[s.TimeNS]
		if sc == nil {
			sc = &scrape{t: s.TimeNS}
			gr.scrapes[s.TimeNS] = sc
		}
		sc.buckets = append(sc.buckets, Bucket{UpperBound: bound, Count: s.Value})
	}
	sumAt := map[string]map[int64]float64{}
	for _, s := range sums {
		if sumAt[s.Labels] == nil {
			sumAt[s.Labels] = map[int64]float64{}
		}
		sumAt[s.Labels][s.TimeNS] = s.Value
	}
	keys := make([]string, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var out []QuantileSeries
	for _, k := range keys {
		gr := groups[k]
		scrapes := make([]*scrape, 0, len(gr.scrapes))
		for _, sc := range gr.scrapes {
			sort.Slice(sc.buckets, func(i, j int) bool { return sc.buckets[i].UpperBound < sc.buckets[j].UpperBound })
			scrapes = append(scrapes, sc)
		}
		sort.Slice(scrapes, func(i, j int) bool { return scrapes[i].t < scrapes[j].t })
		qsr := QuantileSeries{Quantity: q, Metric: family, Labels: gr.labels}
		for i := 1; i < len(scrapes); i++ {
			a, b := scrapes[i-1], scrapes[i]
			diff, ok := bucketDiff(a.buckets, b.buckets)
			if !ok {
				warns = append(warns, Warning{Kind: WarnBoundsChanged, Metric: family, Labels: gr.labels, FromNS: a.t, ToNS: b.t})
				continue
			}
			p := QuantilePoint{StartNS: a.t, EndNS: b.t, Sum: math.NaN()}
			if len(diff) > 0 {
				p.Count = diff[len(diff)-1].Count
			}
			if sa, ok1 := sumAt[gr.labels][a.t]; ok1 {
				if sb, ok2 := sumAt[gr.labels][b.t]; ok2 {
					p.Sum = sb - sa
					if p.Sum < 0 {
						p.Sum = sb
					}
				}
			}
			for _, qq := range qs {
				p.Values = append(p.Values, BucketQuantile(qq, diff))
			}
			qsr.Points = append(qsr.Points, p)
		}
		if len(scrapes) > 0 && !math.IsInf(scrapes[0].buckets[len(scrapes[0].buckets)-1].UpperBound, 1) {
			warns = append(warns, Warning{Kind: WarnNoInfBucket, Metric: family, Labels: gr.labels})
		}
		out = append(out, qsr)
	}
	return out, warns
}

// bucketDiff subtracts two sorted cumulative bucket lists with the same
// bounds. If any bucket went down the later list is returned as is (a
// counter reset).
func bucketDiff(a, b []Bucket) ([]Bucket, bool) {
	if len(a) != len(b) {
		return nil, false
	}
	out := make([]Bucket, len(b))
	reset := false
	for i := range b {
		if a[i].UpperBound != b[i].UpperBound {
			return nil, false
		}
		d := b[i].Count - a[i].Count
		if d < 0 {
			reset = true
		}
		out[i] = Bucket{UpperBound: b[i].UpperBound, Count: d}
	}
	if reset {
		copy(out, b)
	}
	return out, true
}
