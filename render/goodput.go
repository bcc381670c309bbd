package render

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/headroom-llm/headroom/analyze"
)

// goodputSection shows each level against the SLO.
func goodputSection(id string, r *analyze.RunAnalysis) (section, error) {
	s := section{
		ID:    id,
		Title: "Goodput under the SLO",
		Read: "A level's goodput is its throughput when its p99 TTFT and p99 TPOT are inside the SLO; the " +
			"first level outside the SLO is where usable capacity stopped, whatever the throughput column says.",
	}
	if r.Sweep == nil {
		s.Missing = noSweep("goodput")
		return s, nil
	}
	g := r.Sweep.Goodput
	if g == nil {
		s.Missing = "Goodput was not judged."
		return s, nil
	}
	note := g.SLO.Spec
	if g.SLOSource == analyze.SLODefault {
		note = "the default (MLPerf's server scenario): give --slo for your own"
	}
	if g.TTFTFrom == analyze.TTFTFromIntended {
		note += "; TTFT and E2E from each request's intended send time, so a wait for a free slot counts"
	}
	s.Facts = []fact{{Label: "SLO", Value: sloText(g.SLO), Note: note}}
	a := axisOf(r.Sweep)
	if g.OperatingLevel >= 0 {
		s.Facts = append(s.Facts, fact{Label: "Highest level inside the SLO", Value: a.name(g.OperatingConcurrency, g.OperatingRateRPS)},
			fact{Label: "Goodput there", Value: tokPerS(g.OperatingOutputTokPerS)})
	} else {
		s.Facts = append(s.Facts, fact{Label: "Highest level inside the SLO", Value: "none: even the first level fails the SLO"})
	}
	if g.FirstFailingLevel >= 0 {
		rate := 0.0
		if l := levelByIndex(r.Sweep, g.FirstFailingLevel); l != nil {
			rate = l.RateRPS
		}
		s.Facts = append(s.Facts, fact{Label: "First level outside the SLO", Value: a.name(g.FirstFailingConcurrency, rate)})
	}
	opt, err := goodputChart(r.Sweep)
	if err != nil {
		return s, err
	}
	s.Charts = []chart{{ID: id + "-chart", Caption: "Output throughput and goodput (throughput of levels inside the SLO) per level.", Class: "wide", Option: opt}}

	t := table{
		Head:  []string{a.head(), "Inside the SLO", "Bounds exceeded", "Output tok/s", "Goodput tok/s", "Requests meeting every bound", "Their tok/s"},
		Right: []bool{true, false, false, true, true, true, true},
	}
	tput := map[int]float64{} // by level index
	for _, l := range r.Sweep.Levels {
		tput[l.LevelIndex] = l.OutputTokPerS
	}
	for _, l := range g.Levels {
		pass := "no"
		switch {
		case !l.Known:
			pass = "unknown"
		case l.Pass:
			pass = "yes"
		}
		meet, meetTput := "–", "–"
		if l.PerRequestKnown {
			meet, meetTput = percent(l.RequestsMeetingFraction), sig(l.MeetingOutputTokPerS)
		}
		t.Rows = append(t.Rows, []string{
			a.cell(l.Concurrency, l.RateRPS), pass, exceeded(l), orDash(tput[l.LevelIndex], sig),
			sig(l.GoodputOutputTokPerS), meet, meetTput,
		})
	}
	s.Tables = append(s.Tables, t)
	for _, li := range g.PassAgainLevels {
		if l := levelByIndex(r.Sweep, li); l != nil {
			s.Notes = append(s.Notes, fmt.Sprintf("%s meets the SLO again after a lower level failed; the operating point stays below the first failure.", l.Load))
		}
	}
	return s, nil
}

// exceeded lists a level's bounds outside the SLO.
func exceeded(l analyze.LevelGoodput) string {
	var out []string
	for _, b := range l.Bounds {
		name := b.Metric + " p" + strconv.FormatFloat(b.Percentile, 'f', -1, 64)
		switch {
		case !b.Known:
			out = append(out, name+" not available")
		case b.ValueS > b.MaxS:
			out = append(out, fmt.Sprintf("%s %s > %s", name, limit(b.ValueS), limit(b.MaxS)))
		}
	}
	if l.Unsustained {
		out = append(out, "not sustained (errors or incomplete)")
	}
	return strings.Join(out, "; ")
}

// goodputChart draws throughput and goodput as bars per level, and the
// share of requests meeting the SLO as a line on a second axis.
func goodputChart(sw *analyze.SweepAnalysis) (template.JS, error) {
	g := sw.Goodput
	c := charts.NewBar()
	var cats []string
	var tput, good []opts.BarData
	var meet []opts.LineData
	perRequest := false
	a := axisOf(sw)
	byLevel := map[int]analyze.LevelGoodput{}
	for _, l := range g.Levels {
		byLevel[l.LevelIndex] = l
	}
	for _, l := range sw.Levels {
		cats = append(cats, a.cell(l.Concurrency, l.RateRPS))
		tput = append(tput, opts.BarData{Value: round(l.OutputTokPerS)})
		lg := byLevel[l.LevelIndex]
		good = append(good, opts.BarData{Value: round(lg.GoodputOutputTokPerS)})
		if lg.PerRequestKnown {
			perRequest = true
		}
		meet = append(meet, opts.LineData{Value: round(100 * lg.RequestsMeetingFraction)})
	}
	x, _ := valueAxis(a.head(), "category", 26)
	_, y := valueAxis("Output tokens/s", "value", 52)
	c.SetGlobalOptions(append(baseOpts("72", "64"), charts.WithXAxisOpts(x), charts.WithYAxisOpts(y),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}))...)
	c.SetXAxis(cats)
	c.AddSeries("Output tok/s", tput, itemColor("#9db3d8"))
	c.AddSeries("Goodput tok/s", good, itemColor(colorSecond))
	if perRequest {
		_, y2 := valueAxis("Requests meeting the SLO (%)", "value", 40)
		y2.Min, y2.Max = 0, 100
		c.ExtendYAxis(y2)
		line := charts.NewLine()
		line.AddSeries("Requests meeting the SLO (%)", meet, lineStyle(colorP99, "dashed", 2), itemColor(colorP99),
			charts.WithLineChartOpts(opts.LineChart{YAxisIndex: 1, Symbol: "circle"}))
		c.Overlap(line)
	}
	return optionJSON(c, nil)
}
