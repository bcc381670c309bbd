package render

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math"
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
// golden file stable.
func round(v float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	f, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
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

// markLabel is the label style of knee, ridge and cap markers.
func markLabel(pos string) *opts.Label {
	return &opts.Label{Show: opts.Bool(true), Position: pos, Color: colorMark, Formatter: "{b}"}
}

func markLineStyle() *opts.LineStyle {
	return &opts.LineStyle{Color: colorMark, Type: "dashed", Width: 1.5}
}

var noSymbols = []string{"none", "none"}

// smoothOff keeps lines straight between measured points: no
// interpolation suggests values that were not measured.
var smoothOff = charts.WithLineChartOpts(opts.LineChart{Smooth: opts.Bool(false), ShowSymbol: opts.Bool(true), Symbol: "circle", SymbolSize: 6})
