package render

import (
	"fmt"
	"html/template"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/headroom-llm/headroom/analyze"
)

// sweepSection is the seed's three panels: throughput, TPOT and TTFT
// against concurrency, with the knees marked, and the per-level tables.
func sweepSection(id string, rep *analyze.Report, r *analyze.RunAnalysis) (section, error) {
	s := section{
		ID:    id,
		Title: "Throughput, TPOT and TTFT against concurrency",
		Read: "Throughput climbs, then flattens: the flattening is the real operating ceiling. TPOT stays flat " +
			"while decode is memory-bound (extra users are nearly free), then rises at the knee. TTFT p99 pulling " +
			"away from p50 is queueing.",
	}
	sw := r.Sweep
	if sw == nil {
		s.Missing = noSweep("throughput, TPOT or TTFT curve")
		return s, nil
	}
	if len(sw.Levels) == 0 {
		s.Missing = "The sweep recorded no levels: it stopped before the first level finished. See the run's warnings."
		return s, nil
	}
	s.Sentences = append(s.Sentences, kneeSentences(sw, axisOf(sw))...)

	panels := []struct {
		name  string
		build func(*analyze.SweepAnalysis) (template.JS, string, error)
	}{
		{"throughput", throughputPanel},
		{"tpot", tpotPanel},
		{"ttft", ttftPanel},
	}
	for _, p := range panels {
		opt, caption, err := p.build(sw)
		if err != nil {
			return s, fmt.Errorf("%s panel: %w", p.name, err)
		}
		s.Charts = append(s.Charts, chart{ID: id + "-" + p.name, Caption: caption, Class: "panel", Option: opt})
	}
	s.ChartRow = true
	s.Tables = append(s.Tables, throughputTable(sw), latencyTable(sw, rep.PercentileMethod))
	s.Notes = append(s.Notes, kneeNotes(sw)...)
	if sw.TokenCount != "" {
		s.Notes = append(s.Notes, "Output tokens: "+sw.TokenCount+".")
	}
	for _, m := range sw.Missing {
		s.Notes = append(s.Notes, "Not available: "+m+".")
	}
	s.Notes = append(s.Notes, levelWarnings(axisOf(sw), sw.Levels)...)
	return s, nil
}

// kneeSentences states the knees the analyzer found, in words.
func kneeSentences(sw *analyze.SweepAnalysis, a loadAxis) []string {
	k := sw.Knees
	var out []string
	factor := strconv.FormatFloat(k.TPOTKneeFactor, 'f', -1, 64)
	if k.PeakLevel >= 0 && k.PeakOutputTokPerS > 0 {
		out = append(out, fmt.Sprintf("Peak sustained output throughput: %s at %s.", tokPerS(k.PeakOutputTokPerS), a.name(k.PeakConcurrency, k.PeakRateRPS)))
	}
	if k.BaselineLevel >= 0 && k.BaselineTPOTP50S > 0 {
		base := fmt.Sprintf("%s p50 TPOT at concurrency %d", dur(k.BaselineTPOTP50S), k.BaselineConcurrency)
		if k.TPOTKneeLevel >= 0 {
			out = append(out, fmt.Sprintf("TPOT knee at %s: the first level whose p50 TPOT over the %s clears %s× with its whole 95%% interval (%s, %s–%s).",
				a.name(k.TPOTKneeConcurrency, k.TPOTKneeRateRPS), base, factor, times(k.TPOTKneeRatio), times(k.TPOTKneeRatioLow), times(k.TPOTKneeRatioHigh)))
		} else {
			out = append(out, fmt.Sprintf("No TPOT knee: at no level does p50 TPOT clear %s× the %s beyond its interval; the sweep did not saturate decode.", factor, base))
		}
	}
	if k.FlatToLevel >= 0 {
		out = append(out, fmt.Sprintf("Flat TPOT up to %s (at most %s× the baseline): extra users there are nearly free.",
			a.name(k.FlatToConcurrency, k.FlatToRateRPS), sig(k.FlatTPOTMaxRatio)))
	}
	if k.PlateauLevel >= 0 {
		out = append(out, fmt.Sprintf("Throughput plateau after %s: later levels gain less than %s per doubling.",
			a.name(k.PlateauConcurrency, k.PlateauRateRPS), percent(k.PlateauGainPerDoubling)))
	}
	if op := sw.Operating; op.At.Valid() || op.FirstFailing.Valid() {
		out = append(out, sentence("Operating point: "+operatingText(op)))
	}
	return out
}

// kneeNotes qualify the knees: what TPOT is compared with, and what the
// sweep did not reach.
func kneeNotes(sw *analyze.SweepAnalysis) []string {
	k := sw.Knees
	var out []string
	base := levelByIndex(sw, k.BaselineLevel)
	switch {
	case base != nil && k.BaselineIsLowestRate:
		out = append(out, "Open loop: TPOT is compared with the lowest arrival rate, "+base.Load+".")
	case base != nil && k.BaselineNotC1:
		out = append(out, "The sweep has no concurrency-1 level with a TPOT; TPOT is compared with its lowest level, "+base.Load+".")
	}
	if base != nil && k.TPOTKneeLevel < 0 {
		out = append(out, fmt.Sprintf("p50 TPOT never cleared %s× its %s value: the sweep did not reach the knee; raise the levels.", sig(k.TPOTKneeFactor), base.Load))
	}
	if !k.Intervals && base != nil {
		out = append(out, "Without per-request data the TPOT knee is placed on the point estimates, not on intervals.")
	}
	if l := levelByIndex(sw, k.UnsustainedPeakLevel); l != nil {
		why := "the level did not complete"
		if l.Complete {
			why = percent(l.ErrorFraction) + " of its requests failed"
		}
		out = append(out, fmt.Sprintf("%s reached %s but is not sustained (%s); the peak is taken over sustained levels only.", l.Load, tokPerS(l.OutputTokPerS), why))
	}
	return out
}

// concurrencyAxis is the shared x axis of the three panels: log₂, so the
// usual doubling levels are evenly spaced.
func concurrencyAxisPatch(o map[string]interface{}) {
	setAxis(o, "xAxis", map[string]interface{}{"logBase": 2, "minorSplitLine": map[string]interface{}{"show": false}})
}

func panelChart(a loadAxis, yName string) *charts.Line {
	c := charts.NewLine()
	x, _ := valueAxis(a.title(), "log", 26)
	_, y := valueAxis(yName, "value", 46)
	c.SetGlobalOptions(append(baseOpts("58", "16"),
		charts.WithXAxisOpts(x), charts.WithYAxisOpts(y),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}))...)
	return c
}

// kneeMarks marks a concurrency with a labelled vertical dashed line.
func kneeMarks(marks ...opts.MarkLineNameXAxisItem) []charts.SeriesOpts {
	var keep []opts.MarkLineNameXAxisItem
	for _, m := range marks {
		if m.XAxis != nil {
			keep = append(keep, m)
		}
	}
	if len(keep) == 0 {
		return nil
	}
	return []charts.SeriesOpts{
		charts.WithMarkLineStyleOpts(opts.MarkLineStyle{Symbol: noSymbols, Label: markLabel("insideEndTop"), LineStyle: markLineStyle()}),
		charts.WithMarkLineNameXAxisItemOpts(keep...),
	}
}

func throughputPanel(sw *analyze.SweepAnalysis) (template.JS, string, error) {
	a := axisOf(sw)
	c := panelChart(a, "Output tokens/s")
	var pts []opts.LineData
	for _, l := range sw.Levels {
		if l.OutputTokPerS > 0 {
			pts = append(pts, opts.LineData{Value: xy(a.x(l), l.OutputTokPerS)})
		}
	}
	k := sw.Knees
	sopts := []charts.SeriesOpts{lineStyle(colorMeasured, "solid", 2), itemColor(colorMeasured), smoothOff}
	plateau := "plateau"
	if k.PlateauLevel == k.PeakLevel {
		plateau = "plateau, peak"
	}
	sopts = append(sopts, kneeMarks(
		opts.MarkLineNameXAxisItem{Name: plateau, XAxis: a.mark(k.PlateauLevel, k.PlateauConcurrency, k.PlateauRateRPS)},
		opts.MarkLineNameXAxisItem{Name: "operating point", XAxis: a.mark(sw.Operating.At.LevelIndex, sw.Operating.At.Concurrency, sw.Operating.At.RateRPS)},
	)...)
	if peak := a.mark(k.PeakLevel, k.PeakConcurrency, k.PeakRateRPS); peak != nil {
		// The peak is ringed; its value is in the table and the headline.
		sopts = append(sopts, charts.WithMarkPointNameCoordItemOpts(opts.MarkPointNameCoordItem{
			Name: "peak " + sig(k.PeakOutputTokPerS), Coordinate: []interface{}{peak, round(k.PeakOutputTokPerS)},
			Symbol: "emptyCircle", SymbolSize: 16, ItemStyle: &opts.ItemStyle{Color: colorMark, BorderColor: colorMark},
			Label: &opts.Label{Show: opts.Bool(false)},
		}))
	}
	caption := "Output throughput (tokens/s) against the load; the peak, the plateau and the operating point marked."
	var unsustained int
	for _, l := range sw.Levels {
		if l.Sustained || l.OutputTokPerS <= 0 {
			continue
		}
		// A level with too many failures is not throughput the server
		// sustains: a red triangle says so on the curve itself.
		unsustained++
		sopts = append(sopts, charts.WithMarkPointNameCoordItemOpts(opts.MarkPointNameCoordItem{
			Name: unsustainedText(l), Coordinate: []interface{}{a.x(l), round(l.OutputTokPerS)},
			Symbol: "triangle", SymbolSize: 14, ItemStyle: &opts.ItemStyle{Color: colorP99, BorderColor: colorP99},
			Label: &opts.Label{Show: opts.Bool(true), Position: "bottom", Color: colorP99, Formatter: unsustainedText(l)},
		}))
	}
	if unsustained > 0 {
		caption += " Red triangles: levels that are not sustained (too many failed requests, or cut short)."
	}
	c.AddSeries("Output tok/s", pts, sopts...)
	opt, err := optionJSON(c, concurrencyAxisPatch)
	return opt, caption, err
}

// unsustainedText says why a level's throughput is not sustained.
func unsustainedText(l analyze.LevelStats) string {
	if !l.Complete {
		return "incomplete"
	}
	return "not sustained: " + percent(l.ErrorFraction) + " failed"
}

// latencySeries adds p50 and p99 series of one latency, in unit.
func latencySeries(c *charts.Line, sw *analyze.SweepAnalysis, get func(analyze.LevelStats) *analyze.Latency, unit durationUnit, marks []charts.SeriesOpts) {
	a := axisOf(sw)
	var p50, p99 []opts.LineData
	for _, l := range sw.Levels {
		lat := get(l)
		if lat == nil {
			continue
		}
		if v, ok := lat.Quantile(50); ok {
			p50 = append(p50, opts.LineData{Value: xy(a.x(l), v*unit.scale)})
		}
		if v, ok := lat.Quantile(99); ok {
			p99 = append(p99, opts.LineData{Value: xy(a.x(l), v*unit.scale)})
		}
	}
	c.AddSeries("p50", p50, append([]charts.SeriesOpts{lineStyle(colorP50, "solid", 2), itemColor(colorP50), smoothOff}, marks...)...)
	c.AddSeries("p99", p99, lineStyle(colorP99, "dashed", 2), itemColor(colorP99), smoothOff)
}

// latencyUnit picks one unit for a latency across all levels.
func latencyUnit(sw *analyze.SweepAnalysis, get func(analyze.LevelStats) *analyze.Latency) durationUnit {
	var vals []float64
	for _, l := range sw.Levels {
		if lat := get(l); lat != nil {
			for _, q := range lat.Percentiles {
				vals = append(vals, q.ValueS)
			}
		}
	}
	return durationScale(vals...)
}

func getTPOT(l analyze.LevelStats) *analyze.Latency { return l.TPOT }
func getTTFT(l analyze.LevelStats) *analyze.Latency { return l.TTFT }
func getITL(l analyze.LevelStats) *analyze.Latency  { return l.ITL }
func getE2E(l analyze.LevelStats) *analyze.Latency  { return l.E2E }

func tpotPanel(sw *analyze.SweepAnalysis) (template.JS, string, error) {
	unit := latencyUnit(sw, getTPOT)
	a := axisOf(sw)
	c := panelChart(a, "TPOT ("+unit.name+")")
	k := sw.Knees
	marks := kneeMarks(opts.MarkLineNameXAxisItem{Name: "knee", XAxis: a.mark(k.TPOTKneeLevel, k.TPOTKneeConcurrency, k.TPOTKneeRateRPS)})
	if !a.rate && k.FlatToLevel >= 0 && k.FlatToConcurrency > k.FlatFromConcurrency && k.FlatFromConcurrency > 0 {
		marks = append(marks,
			charts.WithMarkAreaStyleOpts(opts.MarkAreaStyle{
				ItemStyle: &opts.ItemStyle{Color: "rgba(46,125,50,0.10)"},
				Label:     &opts.Label{Show: opts.Bool(true), Position: "insideTop", Color: colorSecond},
			}),
			charts.WithMarkAreaData([]opts.MarkAreaData{{Name: "flat", XAxis: k.FlatFromConcurrency}, {XAxis: k.FlatToConcurrency}}))
	}
	latencySeries(c, sw, getTPOT, unit, marks)
	opt, err := optionJSON(c, concurrencyAxisPatch)
	return opt, "Time per output token, p50 and p99; the flat region shaded, the knee (p50 > " +
		strconv.FormatFloat(k.TPOTKneeFactor, 'f', -1, 64) + "× baseline) marked.", err
}

func ttftPanel(sw *analyze.SweepAnalysis) (template.JS, string, error) {
	unit := latencyUnit(sw, getTTFT)
	a := axisOf(sw)
	c := panelChart(a, "TTFT ("+unit.name+")")
	k := sw.Knees
	marks := kneeMarks(opts.MarkLineNameXAxisItem{Name: "TPOT knee", XAxis: a.mark(k.TPOTKneeLevel, k.TPOTKneeConcurrency, k.TPOTKneeRateRPS)})
	latencySeries(c, sw, getTTFT, unit, marks)
	opt, err := optionJSON(c, concurrencyAxisPatch)
	return opt, "Time to first token, p50 and p99: p99 pulling away from p50 is queueing.", err
}

// throughputTable lists each level's requests and throughputs.
func throughputTable(sw *analyze.SweepAnalysis) table {
	t := table{
		Caption: "Per level: measured requests (warm-up excluded), errors and throughput over the measured window.",
		Head:    []string{"Concurrency", "Requests", "Errors", "Window (s)", "Requests/s", "Output tok/s", "95% interval", "Total tok/s", "Mean output tokens"},
		Right:   []bool{true, true, true, true, true, true, true, true, true},
	}
	a := axisOf(sw)
	if a.rate {
		t.Head[0] = "Concurrency cap"
		t.Head = append([]string{a.head()}, t.Head...)
		t.Right = append(t.Right, true)
	}
	for _, l := range sw.Levels {
		errs := integer(l.Errors)
		if l.Errors > 0 {
			errs += " (" + percent(l.ErrorFraction) + errorClasses(l.ErrorsByClass) + ")"
		}
		iv := "–"
		if c := l.Confidence.OutputTokPerS; c != nil {
			iv = sig(c.Low) + "–" + sig(c.High)
		}
		row := []string{
			integer(l.Concurrency), integer(l.Requests), errs, orDash(l.WindowS, sig), orDash(l.RequestsPerS, sig),
			orDash(l.OutputTokPerS, sig), iv, orDash(l.TotalTokPerS, sig), orDash(l.MeanOutputTokens, sig),
		}
		if a.rate {
			row = append([]string{a.cell(l.Concurrency, l.RateRPS)}, row...)
		}
		if !l.Sustained {
			row[0] += " (" + unsustainedText(l) + ")"
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func errorClasses(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return ": " + strings.Join(parts, ", ")
}

// latencyTable lists each level's latency percentiles, one unit per
// latency. A percentile that rests on too few requests is starred.
func latencyTable(sw *analyze.SweepAnalysis, method string) table {
	type col struct {
		name string
		get  func(analyze.LevelStats) *analyze.Latency
		ps   []float64
	}
	cols := []col{
		{"TTFT", getTTFT, reportedPercentiles(sw, getTTFT)},
		{"TPOT", getTPOT, reportedPercentiles(sw, getTPOT)},
		{"ITL", getITL, []float64{50, 99}},
		{"E2E", getE2E, []float64{50, 99}},
	}
	fromSchedule := false
	for _, l := range sw.Levels {
		fromSchedule = fromSchedule || l.SendWait != nil
	}
	if fromSchedule {
		cols = append(cols,
			col{"wait for a slot", func(l analyze.LevelStats) *analyze.Latency { return l.SendWait }, []float64{50, 99}},
			col{"TTFT from schedule", func(l analyze.LevelStats) *analyze.Latency { return l.TTFTFromIntended }, []float64{50, 99}},
			col{"E2E from schedule", func(l analyze.LevelStats) *analyze.Latency { return l.E2EFromIntended }, []float64{50, 99}})
	}
	a := axisOf(sw)
	t := table{Head: []string{a.head()}, Right: []bool{true}}
	units := make([]durationUnit, len(cols))
	for i, c := range cols {
		units[i] = latencyUnit(sw, c.get)
		for _, p := range c.ps {
			t.Head = append(t.Head, fmt.Sprintf("%s p%s (%s)", c.name, strconv.FormatFloat(p, 'f', -1, 64), units[i].name))
			t.Right = append(t.Right, true)
		}
	}
	starred := false
	for _, l := range sw.Levels {
		row := []string{a.cell(l.Concurrency, l.RateRPS)}
		for i, c := range cols {
			lat := c.get(l)
			for _, p := range c.ps {
				cell := "–"
				if lat != nil {
					for _, q := range lat.Percentiles {
						if q.Percentile == p {
							cell = units[i].in(q.ValueS)
							if !q.Reliable {
								cell += "*"
								starred = true
							}
						}
					}
				}
				row = append(row, cell)
			}
		}
		t.Rows = append(t.Rows, row)
	}
	t.Caption = "Per level: latency percentiles of successful measured requests."
	if method != "" {
		t.Caption = "Per level: latency percentiles of successful measured requests (" + method + ")."
	}
	if fromSchedule {
		t.Caption += " Open loop: \"from schedule\" is measured from each request's intended send time, so the wait for a free slot under the concurrency cap (the server's backlog) counts, as a user arriving then would feel it."
	}
	if starred {
		t.Caption += " * rests on too few requests to be a tail estimate: it is the largest value seen."
	}
	return t
}

// reportedPercentiles is the percentiles any level reports for a latency.
func reportedPercentiles(sw *analyze.SweepAnalysis, get func(analyze.LevelStats) *analyze.Latency) []float64 {
	seen := map[float64]bool{}
	var ps []float64
	for _, l := range sw.Levels {
		if lat := get(l); lat != nil {
			for _, q := range lat.Percentiles {
				if !seen[q.Percentile] {
					seen[q.Percentile] = true
					ps = append(ps, q.Percentile)
				}
			}
		}
	}
	if len(ps) == 0 {
		return []float64{50, 99}
	}
	return ps
}

// levelWarnings lists each distinct level warning once, naming its levels.
func levelWarnings(a loadAxis, levels []analyze.LevelStats) []string {
	var order []string
	at := map[string][]string{}
	for _, l := range levels {
		for _, w := range l.Warnings {
			if _, ok := at[w]; !ok {
				order = append(order, w)
			}
			at[w] = append(at[w], a.cell(l.Concurrency, l.RateRPS))
		}
	}
	var out []string
	for _, w := range order {
		out = append(out, fmt.Sprintf("%s %s: %s.", a.head(), strings.Join(at[w], ", "), strings.TrimSuffix(w, ".")))
	}
	return out
}

func orDash(v float64, f func(float64) string) string {
	if v == 0 {
		return "–"
	}
	return f(v)
}
