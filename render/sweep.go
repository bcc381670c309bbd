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
	"github.com/headroom-llm/headroom/stats"
)

// panelsRead says how to read the three panels.
const panelsRead = "Throughput climbs, then flattens: the flattening is the real operating ceiling. TPOT stays flat " +
	"while decode is memory-bound (extra users are nearly free), then rises at the knee. TTFT p99 pulling " +
	"away from p50 is queueing."

// sweepSection is a run's per-level numbers: the shape of the curve in
// words, the three panels (unless page one shows them) and the tables.
func sweepSection(id string, r *analyze.RunAnalysis, panels bool, method string) (section, error) {
	s := section{ID: id, Title: "Per level: throughput, latency, goodput, roofline gap, server"}
	sw := r.Sweep
	if len(sw.Levels) == 0 {
		s.Missing = "The sweep recorded no levels: it stopped before the first level finished. See the run's warnings."
		return s, nil
	}
	s.Sentences = append(s.Sentences, shapeSentences(sw)...)
	if panels {
		s.Read = panelsRead
		charts, err := sweepPanels(id, sw)
		if err != nil {
			return s, err
		}
		s.Charts, s.ChartRow = charts, true
	}
	s.Tables = append(s.Tables, throughputTable(sw), latencyTable(sw, method))
	if t, ok := replicasTable(sw); ok {
		s.Tables = append(s.Tables, t)
	}
	if t, ok := sessionsTable(sw); ok {
		s.Tables = append(s.Tables, t)
		s.Sentences = append(s.Sentences, sessionSentences(sw)...)
	}
	s.Notes = append(s.Notes, kneeNotes(sw)...)
	s.Notes = append(s.Notes, "Output tokens: "+tokenCountText(sw.TokenCount)+".")
	s.Notes = append(s.Notes, notesWhere(sw.Notes, unavailable)...)
	s.Notes = append(s.Notes, levelWarnings(axisOf(sw), sw.Levels, sourceMethod(sw))...)
	return s, nil
}

// sourceMethod is the percentile method of an imported tool's per-level
// statistics, when every level states the same one (NoteSourcePercentile):
// the latency table then names it, once, instead of headroom's own.
func sourceMethod(sw *analyze.SweepAnalysis) string {
	method := ""
	for _, l := range sw.Levels {
		i := slices.IndexFunc(l.Notes, func(n analyze.Note) bool { return n.Kind == analyze.NoteSourcePercentile })
		if i < 0 || (method != "" && l.Notes[i].Text != method) {
			return ""
		}
		method = l.Notes[i].Text
	}
	return method
}

// sweepPanels are the seed's three panels: throughput, TPOT and TTFT
// against the load, with the knees marked.
func sweepPanels(id string, sw *analyze.SweepAnalysis) ([]chart, error) {
	panels := []struct {
		name  string
		build func(*analyze.SweepAnalysis) (template.JS, string, error)
	}{
		{"throughput", throughputPanel},
		{"tpot", tpotPanel},
		{"ttft", ttftPanel},
	}
	var out []chart
	for _, p := range panels {
		opt, caption, err := p.build(sw)
		if err != nil {
			return nil, fmt.Errorf("%s panel: %w", p.name, err)
		}
		out = append(out, chart{ID: id + "-" + p.name, Caption: caption, Class: "panel", Option: opt})
	}
	return out, nil
}

// kneeNotes qualify the knees: what TPOT is compared with, and what the
// sweep did not reach.
func kneeNotes(sw *analyze.SweepAnalysis) []string {
	k := sw.Knees
	var out []string
	base := levelByIndex(sw, k.BaselineLevel)
	switch {
	case base != nil && k.BaselineIsLowestRate:
		out = append(out, "Open loop: TPOT is compared with the lowest arrival rate, "+loadName(base.Load)+".")
	case base != nil && k.BaselineNotC1:
		out = append(out, "The sweep has no concurrency-1 level with a TPOT; TPOT is compared with its lowest level, "+loadName(base.Load)+".")
	}
	if base != nil && k.TPOTKneeLevel < 0 {
		out = append(out, fmt.Sprintf("p50 TPOT never cleared %s× its %s value: the sweep did not reach the knee; raise the levels.", sig(k.TPOTKneeFactor), loadName(base.Load)))
	}
	if !k.Intervals && base != nil {
		out = append(out, "Without per-request data the TPOT knee is placed on the point estimates, not on intervals.")
	}
	if l := levelByIndex(sw, k.UnsustainedPeakLevel); l != nil {
		why := "the level did not complete"
		if l.Complete {
			why = percent(l.ErrorFraction) + " of its requests failed"
		}
		out = append(out, fmt.Sprintf("%s reached %s but is not sustained (%s); the peak is taken over sustained levels only.", loadName(l.Load), tokPerS(l.OutputTokPerS), why))
	}
	return out
}

// concurrencyAxisPatch puts the load on a log₂ axis, so the usual
// doubling levels are evenly spaced.
func concurrencyAxisPatch(o map[string]interface{}) {
	setAxis(o, "xAxis", map[string]interface{}{"logBase": 2, "minorSplitLine": map[string]interface{}{"show": false}})
}

// panelChart is one of the three panels: the load on a log₂ axis.
func panelChart(a loadAxis, yName string) *charts.Line {
	c := charts.NewLine()
	x, _ := valueAxis(a.title(), "log", 26)
	_, y := valueAxis(yName, "value", 46)
	c.SetGlobalOptions(append(baseOpts("58", "16"),
		charts.WithXAxisOpts(x), charts.WithYAxisOpts(y),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}))...)
	return c
}

// panelPatch finishes a panel: the load axis from the first level to the
// last (log₂, so doubling levels are evenly spaced), the y axis at the
// data (logarithmic when the values span more than 10×), and the marks as
// dashed lines labelled above the plot.
func panelPatch(sw *analyze.SweepAnalysis, marks []vmark, ys []float64) func(map[string]interface{}) {
	a := axisOf(sw)
	var xs []float64
	for _, l := range sw.Levels {
		if v := a.x(l); v > 0 {
			xs = append(xs, v)
		}
	}
	return func(o map[string]interface{}) {
		xr := axisRange{Log: true}
		if lo, hi, ok := dataRange(xs, true); ok {
			xr.Min, xr.Max = lo, hi
			if hi == lo {
				xr.Min, xr.Max = lo/2, hi*2
			}
			setAxis(o, "xAxis", map[string]interface{}{"min": round(xr.Min), "max": round(xr.Max)})
		}
		setAxis(o, "xAxis", map[string]interface{}{"logBase": 2, "minorSplitLine": map[string]interface{}{"show": false}})
		if spansDecade(ys) {
			yr, _ := logExtent(ys, 1.3)
			setAxis(o, "yAxis", map[string]interface{}{"type": "log", "min": yr.Min, "max": yr.Max,
				"axisLabel": map[string]interface{}{"color": "#222", "showMinLabel": false, "showMaxLabel": false}})
		} else {
			setAxis(o, "yAxis", map[string]interface{}{"scale": true})
		}
		ml, rows := vmarkLine(marks, xr, colorMark)
		if ml != nil {
			setSeries(o, 0, map[string]interface{}{"markLine": ml})
		}
		setGrid(o, map[string]interface{}{"top": 40 + rows*(markFont+4)})
	}
}

// mark is a vertical mark at a level, when there is one.
func (a loadAxis) vmark(level, conc int, rate float64, label string) []vmark {
	if level < 0 {
		return nil
	}
	x := float64(conc)
	if a.rate {
		x = rate
	}
	return []vmark{{X: x, Label: label}}
}

func throughputPanel(sw *analyze.SweepAnalysis) (template.JS, string, error) {
	a := axisOf(sw)
	c := panelChart(a, "Output tokens/s")
	var pts []opts.LineData
	var ys []float64
	for _, l := range sw.Levels {
		if l.OutputTokPerS > 0 {
			pts = append(pts, opts.LineData{Value: xy(a.x(l), l.OutputTokPerS)})
			ys = append(ys, l.OutputTokPerS)
		}
	}
	k := sw.Knees
	sopts := []charts.SeriesOpts{lineStyle(colorMeasured, "solid", 2), itemColor(colorMeasured), smoothOff}
	var marks []vmark
	op := sw.Operating.At
	marks = append(marks, a.vmark(op.LevelIndex, op.Concurrency, op.RateRPS, "operating point")...)
	marks = append(marks, a.vmark(k.PlateauLevel, k.PlateauConcurrency, k.PlateauRateRPS, "plateau")...)
	if k.PeakOutputTokPerS > 0 {
		marks = append(marks, a.vmark(k.PeakLevel, k.PeakConcurrency, k.PeakRateRPS, "peak "+sig(k.PeakOutputTokPerS))...)
	}
	if peak := a.mark(k.PeakLevel, k.PeakConcurrency, k.PeakRateRPS); peak != nil {
		// The peak is ringed; its value is in the mark's label above.
		sopts = append(sopts, charts.WithMarkPointNameCoordItemOpts(opts.MarkPointNameCoordItem{
			Name: "peak", Coordinate: []interface{}{peak, round(k.PeakOutputTokPerS)},
			Symbol: "emptyCircle", SymbolSize: 14, ItemStyle: &opts.ItemStyle{Color: colorMark, BorderColor: colorMark},
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
			Symbol: "triangle", SymbolSize: 12, ItemStyle: &opts.ItemStyle{Color: colorP99, BorderColor: colorP99},
			Label: &opts.Label{Show: opts.Bool(false)},
		}))
	}
	if unsustained > 0 {
		caption += " Red triangles: levels that are not sustained (too many failed requests, or cut short); the table says why."
	}
	c.AddSeries("Output tok/s", pts, sopts...)
	opt, err := optionJSON(c, panelPatch(sw, marks, ys))
	return opt, caption, err
}

// unsustainedText says why a level's throughput is not sustained.
func unsustainedText(l analyze.LevelStats) string {
	if !l.Complete {
		return "incomplete"
	}
	return "not sustained: " + percent(l.ErrorFraction) + " failed"
}

// latencySeries adds p50 and p99 series of one latency, in unit, and
// returns the values drawn.
func latencySeries(c *charts.Line, sw *analyze.SweepAnalysis, get func(analyze.LevelStats) *analyze.Latency, unit durationUnit, marks []charts.SeriesOpts) []float64 {
	a := axisOf(sw)
	var p50, p99 []opts.LineData
	var ys []float64
	for _, l := range sw.Levels {
		lat := get(l)
		if lat == nil {
			continue
		}
		if v, ok := lat.Quantile(50); ok {
			p50 = append(p50, opts.LineData{Value: xy(a.x(l), v*unit.scale)})
			ys = append(ys, v*unit.scale)
		}
		if v, ok := lat.Quantile(99); ok {
			p99 = append(p99, opts.LineData{Value: xy(a.x(l), v*unit.scale)})
			ys = append(ys, v*unit.scale)
		}
	}
	c.AddSeries("p50", p50, append([]charts.SeriesOpts{lineStyle(colorP50, "solid", 2), itemColor(colorP50), smoothOff}, marks...)...)
	c.AddSeries("p99", p99, lineStyle(colorP99, "dashed", 2), itemColor(colorP99), smoothOff)
	return ys
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

// latencyPanel plots a latency's p50 and p99 against the load in the
// latency's own unit, titled metric, with the TPOT knee marked (labelled
// knee) and area over the series; it returns the option and the plotted
// values.
func latencyPanel(sw *analyze.SweepAnalysis, get func(analyze.LevelStats) *analyze.Latency, metric, knee string, area []charts.SeriesOpts) (template.JS, []float64, error) {
	unit := latencyUnit(sw, get)
	a := axisOf(sw)
	c := panelChart(a, metric+" ("+unit.name+")")
	k := sw.Knees
	marks := a.vmark(k.TPOTKneeLevel, k.TPOTKneeConcurrency, k.TPOTKneeRateRPS, knee)
	ys := latencySeries(c, sw, get, unit, area)
	opt, err := optionJSON(c, panelPatch(sw, marks, ys))
	return opt, ys, err
}

func tpotPanel(sw *analyze.SweepAnalysis) (template.JS, string, error) {
	k := sw.Knees
	var area []charts.SeriesOpts
	if !axisOf(sw).rate && k.FlatToLevel >= 0 && k.FlatToConcurrency > k.FlatFromConcurrency && k.FlatFromConcurrency > 0 {
		area = append(area,
			charts.WithMarkAreaStyleOpts(opts.MarkAreaStyle{
				ItemStyle: &opts.ItemStyle{Color: "rgba(46,125,50,0.10)"},
				Label:     &opts.Label{Show: opts.Bool(true), Position: "insideTop", Color: colorSecond, FontSize: markFont},
			}),
			charts.WithMarkAreaData([]opts.MarkAreaData{{Name: "flat", XAxis: k.FlatFromConcurrency}, {XAxis: k.FlatToConcurrency}}))
	}
	opt, _, err := latencyPanel(sw, getTPOT, "TPOT", "knee", area)
	return opt, "Time per output token, p50 and p99; the flat region shaded, the knee (p50 > " +
		strconv.FormatFloat(k.TPOTKneeFactor, 'f', -1, 64) + "× baseline) marked.", err
}

func ttftPanel(sw *analyze.SweepAnalysis) (template.JS, string, error) {
	opt, ys, err := latencyPanel(sw, getTTFT, "TTFT", "TPOT knee", nil)
	caption := "Time to first token, p50 and p99: p99 pulling away from p50 is queueing."
	if spansDecade(ys) {
		caption = "Time to first token, p50 and p99, log scale: p99 pulling away from p50 is queueing."
	}
	return opt, caption, err
}

// throughputTable lists each level's requests and throughputs.
func throughputTable(sw *analyze.SweepAnalysis) table {
	t := table{
		Caption: "Per level: measured requests (warm-up excluded), errors and throughput over the measured window.",
		Head:    []string{"Concurrency", "Requests", "Errors", "Window (s)", "Requests/s", "Output tok/s", "95% interval", "Total tok/s", "Mean output tokens"},
		Right:   []bool{true, true, true, true, true, true, true, true, true},
		Fold:    []bool{false, false, false, true, true, false, false, true, true},
	}
	a := axisOf(sw)
	if a.rate {
		t.Head[0] = "Concurrency cap"
		t.Head = append([]string{a.head()}, t.Head...)
		t.Right = append(t.Right, true)
		t.Fold = append([]bool{false}, t.Fold...)
		t.Fold[1] = true
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
			if l.Concurrency == 0 {
				row[0] = "none" // an open loop without a cap (imported runs)
			}
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
// latency. The p50 and p99 of TTFT and TPOT (and, open loop, TTFT from the
// schedule) are the table; the other percentiles, ITL and E2E are folded.
// A percentile that rests on too few requests is starred, and one
// footnote says so for the whole table.
func latencyTable(sw *analyze.SweepAnalysis, method string) table {
	type col struct {
		name string
		get  func(analyze.LevelStats) *analyze.Latency
		ps   []float64
		main []float64 // the percentiles shown unfolded
	}
	cols := []col{
		{"TTFT", getTTFT, reportedPercentiles(sw, getTTFT), []float64{50, 99}},
		{"TPOT", getTPOT, reportedPercentiles(sw, getTPOT), []float64{50, 99}},
		{"ITL", getITL, []float64{50, 99}, nil},
		{"E2E", getE2E, []float64{50, 99}, nil},
	}
	fromSchedule := false
	for _, l := range sw.Levels {
		fromSchedule = fromSchedule || l.SendWait != nil
	}
	if fromSchedule {
		cols = append(cols,
			col{"wait for a slot", func(l analyze.LevelStats) *analyze.Latency { return l.SendWait }, []float64{50, 99}, nil},
			col{"TTFT from schedule", func(l analyze.LevelStats) *analyze.Latency { return l.TTFTFromIntended }, []float64{50, 99}, []float64{99}},
			col{"E2E from schedule", func(l analyze.LevelStats) *analyze.Latency { return l.E2EFromIntended }, []float64{50, 99}, nil})
	}
	a := axisOf(sw)
	t := table{Head: []string{a.head()}, Right: []bool{true}, Fold: []bool{false}}
	units := make([]durationUnit, len(cols))
	for i, c := range cols {
		units[i] = latencyUnit(sw, c.get)
		for _, p := range c.ps {
			t.Head = append(t.Head, fmt.Sprintf("%s p%s (%s)", c.name, trimFloat(p), units[i].name))
			t.Right = append(t.Right, true)
			t.Fold = append(t.Fold, !slices.Contains(c.main, p))
		}
	}
	thin := map[float64]bool{}
	var thinN []int
	for _, l := range sw.Levels {
		row := []string{a.cell(l.Concurrency, l.RateRPS)}
		levelThin, levelN := false, 0
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
								thin[p], levelThin = true, true
								levelN = max(levelN, lat.N)
							}
						}
					}
				}
				row = append(row, cell)
			}
		}
		if levelThin { // the level's requests: TTFT's count, else (no first token seen) the thin latency's
			if l.TTFT != nil {
				levelN = l.TTFT.N
			}
			thinN = append(thinN, levelN)
		}
		t.Rows = append(t.Rows, row)
	}
	source := sourceMethod(sw)
	if source != "" {
		method = "as the source computed them: " + source
	}
	t.Caption = "Per level: latency percentiles of successful measured requests."
	if method != "" {
		t.Caption = "Per level: latency percentiles of successful measured requests (" + method + ")."
	}
	if fromSchedule {
		t.Notes = append(t.Notes, "Open loop: \"from schedule\" is measured from each request's intended send time, so the wait for a free slot under the concurrency cap (the server's backlog) counts, as a user arriving then would feel it.")
	}
	if len(thin) > 0 {
		t.Notes = append(t.Notes, thinFootnote(thin, thinN, source == ""))
	}
	return t
}

// thinFootnote says once for a table which percentiles rest on too few
// requests to be a tail estimate, and how many requests would do. Taken by
// nearest rank (headroom's own), such a percentile is the largest value
// seen; a tool's interpolated one is not.
func thinFootnote(thin map[float64]bool, ns []int, nearestRank bool) string {
	var need []string
	most := 0
	for _, p := range slices.Sorted(maps.Keys(thin)) {
		m := stats.MinSamples(p)
		need = append(need, fmt.Sprintf("p%s needs %d", trimFloat(p), m))
		most = max(most, m)
	}
	lo, hi := slices.Min(ns), slices.Max(ns)
	had := fmt.Sprintf("%d", lo)
	if hi != lo {
		had = fmt.Sprintf("%d to %d", lo, hi)
	}
	largest := ""
	if nearestRank {
		largest = ": it is the largest value seen"
	}
	return fmt.Sprintf("* rests on too few requests to be a tail estimate (%s; the starred levels had %s)%s. Measure at least %d requests per level for every tail.",
		strings.Join(need, ", "), had, largest, most)
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

// levelWarnings lists each distinct level warning once, naming its levels;
// the source's percentile method is left out when the latency table names
// it (sourceMethod).
func levelWarnings(a loadAxis, levels []analyze.LevelStats, tableMethod string) []string {
	var order []string
	at := map[string][]string{}
	for _, l := range levels {
		for _, n := range l.Notes {
			if n.Kind == analyze.NoteSourcePercentile && n.Text == tableMethod {
				continue
			}
			w := noteText(n)
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
