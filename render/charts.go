package render

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"sort"
	"strconv"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/headroom-llm/headroom/templates"
)

// Charts are built with go-echarts, but only for their option: the page
// inlines ECharts itself and draws each chart from its option JSON with
// templates/report.js, so nothing refers to go-echarts' asset host and
// the page makes no request to any other host.

const echartsVersion = templates.EChartsVersion

// Colours: dark enough to print, distinct in grey scale by dash as well.
const (
	colorMeasured = "#1f4e9c" // blue: what was measured
	colorBound    = "#333333" // near black: the roofline bound
	colorP50      = "#1f4e9c"
	colorP99      = "#c0392b" // red: the tail
	colorMark     = "#b35900" // orange: knees, ridge, caps
	colorSecond   = "#2e7d32" // green: a second quantity
)

// rectChart is what a go-echarts chart with x and y axes offers us.
type rectChart interface {
	Validate()
	JSON() map[string]interface{}
}

// optionJSON returns the chart's option as JSON for a <script
// type="application/json"> element. encoding/json escapes <, > and &, so no
// string in the option can close the element. patch, when not nil, adds
// the ECharts options go-echarts has no field for.
func optionJSON(c rectChart, patch func(map[string]interface{})) (template.JS, error) {
	c.Validate()
	obj := c.JSON()
	// go-echarts adds an empty toolbox and title; the page has its own
	// captions and prints, so drop them.
	delete(obj, "toolbox")
	delete(obj, "title")
	if patch != nil {
		// Round-trip through JSON so patches work on plain maps.
		raw, err := json.Marshal(obj)
		if err != nil {
			return "", fmt.Errorf("chart option: %w", err)
		}
		obj = map[string]interface{}{}
		if err := json.Unmarshal(raw, &obj); err != nil {
			return "", fmt.Errorf("chart option: %w", err)
		}
		patch(obj)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return "", fmt.Errorf("chart option: %w", err)
	}
	return template.JS(raw), nil
}

// setAxis sets keys of the first x or y axis ("xAxis", "yAxis") of a
// patched option.
func setAxis(obj map[string]interface{}, axis string, kv map[string]interface{}) {
	list, _ := obj[axis].([]interface{})
	if len(list) == 0 {
		return
	}
	a, _ := list[0].(map[string]interface{})
	if a == nil {
		return
	}
	for k, v := range kv {
		a[k] = v
	}
}

// baseOpts are the options every chart shares: no animation (the page is
// printed and screenshotted, and must be complete at once), a legend on
// top, a tooltip, a white background.
func baseOpts(gridLeft, gridRight string) []charts.GlobalOpts {
	return []charts.GlobalOpts{
		charts.WithAnimation(false),
		charts.WithInitializationOpts(opts.Initialization{BackgroundColor: "#ffffff"}),
		charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "0", Type: "plain"}),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item"}),
		charts.WithGridOpts(opts.Grid{Left: gridLeft, Right: gridRight, Top: "52", Bottom: "52"}),
	}
}

// valueAxis is a numeric axis with its name centred along it.
func valueAxis(name, typ string, gap int) (opts.XAxis, opts.YAxis) {
	split := &opts.SplitLine{Show: opts.Bool(true), LineStyle: &opts.LineStyle{Color: "#e4e4e4"}}
	label := &opts.AxisLabel{Color: "#222"}
	return opts.XAxis{Name: name, Type: typ, NameLocation: "middle", NameGap: gap, SplitLine: split, AxisLabel: label},
		opts.YAxis{Name: name, Type: typ, NameLocation: "middle", NameGap: gap, SplitLine: split, AxisLabel: label}
}

// round keeps four significant digits, so option JSON stays short and its
// golden file stable. An axis end or mark computed from a value near the
// float limit (1e308 tokens/s from a corrupt import) can overflow to ±Inf,
// which JSON cannot hold: it is kept at the largest float instead.
func round(v float64) float64 {
	if math.IsInf(v, 0) {
		return math.Copysign(math.MaxFloat64, v)
	}
	if v == 0 || math.IsNaN(v) {
		return v
	}
	f, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
	if err != nil { // rounding up overflowed (1.7977e308 → 1.798e308): keep the value
		return v
	}
	return f
}

// xy is one [x, y] data point.
func xy(x, y float64) []interface{} { return []interface{}{round(x), round(y)} }

// lineStyle is a line of a colour and dash ("solid", "dashed", "dotted").
func lineStyle(color, dash string, width float32) charts.SeriesOpts {
	return charts.WithLineStyleOpts(opts.LineStyle{Color: color, Type: dash, Width: width})
}

func itemColor(color string) charts.SeriesOpts {
	return charts.WithItemStyleOpts(opts.ItemStyle{Color: color})
}

// smoothOff keeps lines straight between measured points: no
// interpolation suggests values that were not measured.
var smoothOff = charts.WithLineChartOpts(opts.LineChart{Smooth: opts.Bool(false), ShowSymbol: opts.Bool(true), Symbol: "circle", SymbolSize: 6})

// Labels on a chart must not meet each other, a line or a marker, at any
// width the page is read at; the browser test checks it. The marks placed
// here are laid out for the narrowest plot (a panel on a 390 px phone).

// narrowPlotPX is the width of the plot area of the narrowest chart the
// page draws (a panel on a 390 px screen), and charPX the width of one
// character of a mark label there (11 px sans-serif).
const (
	narrowPlotPX = 230
	charPX       = 6.5
	markFont     = 11
)

// vmark is a vertical mark: a dashed line at X labelled above the plot.
type vmark struct {
	X     float64
	Label string
}

// axisRange is a numeric axis' extent and whether it is logarithmic.
type axisRange struct {
	Min, Max float64
	Log      bool
}

// frac is where v falls on the axis, 0 at Min and 1 at Max.
func (a axisRange) frac(v float64) float64 {
	if a.Log {
		if v <= 0 || a.Min <= 0 {
			return 0
		}
		return math.Log(v/a.Min) / math.Log(a.Max/a.Min)
	}
	if a.Max == a.Min {
		return 0
	}
	return (v - a.Min) / (a.Max - a.Min)
}

// vmarkLine is the markLine option of vertical marks: each label sits
// above the plot, on the first of up to three rows where it meets no
// other label at the narrowest width; a label at the axis' start begins
// at its line and one at its end finishes there, so neither runs over the
// axis labels. Marks at the same place share one label. It returns the
// rows used, for the grid's top margin.
func vmarkLine(marks []vmark, x axisRange, color string) (map[string]interface{}, int) {
	if len(marks) == 0 {
		return nil, 0
	}
	sort.SliceStable(marks, func(i, j int) bool { return marks[i].X < marks[j].X })
	var merged []vmark
	for _, m := range marks {
		if n := len(merged); n > 0 && merged[n-1].X == m.X {
			merged[n-1].Label += ", " + m.Label
			continue
		}
		merged = append(merged, m)
	}
	type span struct{ lo, hi float64 }
	rows := [][]span{}
	var data []interface{}
	used := 0
	for _, m := range merged {
		w := charPX * float64(len([]rune(m.Label)))
		at := x.frac(m.X) * narrowPlotPX
		align := "center"
		lo, hi := at-w/2, at+w/2
		switch {
		case lo < 0:
			align, lo, hi = "left", at, at+w
		case hi > narrowPlotPX:
			align, lo, hi = "right", at-w, at
		}
		row := 0
		for ; row < len(rows); row++ {
			free := true
			for _, s := range rows[row] {
				if lo < s.hi+6 && s.lo < hi+6 {
					free = false
				}
			}
			if free {
				break
			}
		}
		if row == len(rows) {
			rows = append(rows, nil)
		}
		rows[row] = append(rows[row], span{lo, hi})
		used = max(used, row+1)
		data = append(data, map[string]interface{}{
			"name": m.Label, "xAxis": round(m.X),
			"label": map[string]interface{}{"show": true, "position": "end", "formatter": "{b}", "color": color, "fontSize": markFont,
				"align": align, "distance": 4 + row*(markFont+4)},
		})
	}
	return map[string]interface{}{
		"silent": true, "symbol": []string{"none", "none"}, "animation": false,
		"lineStyle": map[string]interface{}{"color": color, "type": "dashed", "width": 1.5},
		"data":      data,
	}, used
}

// setSeries sets keys of the i-th series of a patched option.
func setSeries(obj map[string]interface{}, i int, kv map[string]interface{}) {
	list, _ := obj["series"].([]interface{})
	if i >= len(list) {
		return
	}
	s, _ := list[i].(map[string]interface{})
	for k, v := range kv {
		s[k] = v
	}
}

// setGrid sets keys of the grid of a patched option.
func setGrid(obj map[string]interface{}, kv map[string]interface{}) {
	var g map[string]interface{}
	switch v := obj["grid"].(type) {
	case []interface{}:
		if len(v) > 0 {
			g, _ = v[0].(map[string]interface{})
		}
	case map[string]interface{}:
		g = v
	}
	if g == nil {
		g = map[string]interface{}{}
		obj["grid"] = g
	}
	for k, v := range kv {
		g[k] = v
	}
}

// setAxisN sets keys of the n-th x or y axis of a patched option.
func setAxisN(obj map[string]interface{}, axis string, n int, kv map[string]interface{}) {
	list, _ := obj[axis].([]interface{})
	if n >= len(list) {
		return
	}
	a, _ := list[n].(map[string]interface{})
	for k, v := range kv {
		a[k] = v
	}
}

// dataRange is the extent of values, ignoring zeros on a log axis.
func dataRange(vals []float64, log bool) (lo, hi float64, ok bool) {
	for _, v := range vals {
		if math.IsNaN(v) || math.IsInf(v, 0) || (log && v <= 0) {
			continue
		}
		if !ok {
			lo, hi, ok = v, v, true
			continue
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	return lo, hi, ok
}

// spansDecade says whether values span more than 10×: such an axis is
// drawn logarithmic, so small values are not flattened against zero.
func spansDecade(vals []float64) bool {
	lo, hi, ok := dataRange(vals, true)
	return ok && hi > 10*lo
}

// logExtent is a log axis that starts and ends at the data, with a margin
// of pad (a factor) either side.
func logExtent(vals []float64, pad float64) (axisRange, bool) {
	lo, hi, ok := dataRange(vals, true)
	if !ok {
		return axisRange{}, false
	}
	return axisRange{Min: round(lo / pad), Max: round(hi * pad), Log: true}, true
}

// lttb keeps n of the points by largest-triangle-three-buckets (Steinarsson
// 2013, as vegeta plots latencies): the first and last point, and from
// each bucket between the point making the largest triangle with the
// point kept before it and the next bucket's mean. Peaks and dips survive,
// so the shape of a dense series stays while the chart draws few points;
// the raw values stay in the tables and the run's Parquet files.
func lttb(xs, ys []float64, n int) (ox, oy []float64) {
	if n >= len(xs) || n < 3 {
		return xs, ys
	}
	ox, oy = append(ox, xs[0]), append(oy, ys[0])
	every := float64(len(xs)-2) / float64(n-2)
	a := 0
	for i := 0; i < n-2; i++ {
		lo := int(float64(i)*every) + 1
		hi := min(int(float64(i+1)*every)+1, len(xs)-1)
		// The next bucket's mean.
		nlo, nhi := hi, min(int(float64(i+2)*every)+1, len(xs))
		var mx, my float64
		for j := nlo; j < nhi; j++ {
			mx += xs[j]
			my += ys[j]
		}
		if k := float64(nhi - nlo); k > 0 {
			mx, my = mx/k, my/k
		} else {
			mx, my = xs[len(xs)-1], ys[len(ys)-1]
		}
		best, pick := -1.0, lo
		for j := lo; j < hi; j++ {
			area := math.Abs((xs[a]-mx)*(ys[j]-ys[a]) - (xs[a]-xs[j])*(my-ys[a]))
			if area > best {
				best, pick = area, j
			}
		}
		ox, oy = append(ox, xs[pick]), append(oy, ys[pick])
		a = pick
	}
	return append(ox, xs[len(xs)-1]), append(oy, ys[len(ys)-1])
}
