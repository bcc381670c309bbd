package render

import (
	"fmt"
	"html/template"
	"math"
	"strconv"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/headroom-llm/headroom/analyze"
)

// seriesStyle is how one timeline quantity is drawn.
type seriesStyle struct {
	label string
	color string
	dash  string
	axis  int     // 0 left, 1 right
	scale float64 // display value = value × scale
	unit  string
}

var timelineStyles = map[string]seriesStyle{
	analyze.SeriesKVUsage:     {"KV-cache usage", colorP99, "solid", 0, 100, "%"},
	analyze.SeriesRunning:     {"Running requests", colorMeasured, "solid", 1, 1, "requests"},
	analyze.SeriesWaiting:     {"Waiting requests", colorMark, "dashed", 1, 1, "requests"},
	analyze.SeriesPreemptions: {"Preemptions", "#6a1b9a", "dotted", 1, 1, "count"},
	analyze.SeriesGPUUtil:     {"GPU utilisation", colorMeasured, "solid", 0, 1, "%"},
	analyze.SeriesGPUPower:    {"Power", colorP99, "solid", 1, 1, "W"},
	analyze.SeriesGPUSMClock:  {"SM clock", colorSecond, "solid", 0, 1, "MHz"},
	analyze.SeriesGPUTemp:     {"Temperature", colorMark, "dashed", 1, 1, "°C"},
	analyze.SeriesClientCPU:   {"Client CPU", "#555555", "dotted", 0, 100, "%"},
}

// overTimeSection shows the server's KV-cache usage and queue and the
// GPU's utilisation, power, clock and temperature through the sweep, with
// one table per level of what they said.
func overTimeSection(id string, r *analyze.RunAnalysis) (section, error) {
	s := section{
		ID:    id,
		Title: "Server and GPU over the sweep",
		Read: "Time is measured from the start of the sweep's first level; each level's start is marked. A KV cache " +
			"near 100% at the knee points to the KV-cache wall, a growing queue to queueing, falling clocks at high " +
			"power or temperature to throttling.",
	}
	tl := r.Sweep.Timeline
	kv, okKV, err := timelineChart(tl, []string{analyze.SeriesKVUsage, analyze.SeriesRunning, analyze.SeriesWaiting, analyze.SeriesPreemptions}, "%", "Requests")
	if err != nil {
		return s, err
	}
	util, okUtil, err := timelineChart(tl, []string{analyze.SeriesGPUUtil, analyze.SeriesGPUPower}, "%", "W")
	if err != nil {
		return s, err
	}
	clock, okClock, err := timelineChart(tl, []string{analyze.SeriesGPUSMClock, analyze.SeriesGPUTemp}, "MHz", "°C")
	if err != nil {
		return s, err
	}
	if okKV {
		s.Charts = append(s.Charts, chart{ID: id + "-chart", Caption: "KV-cache usage (left, %) and running, waiting requests and preemptions (right).", Class: "panel", Option: kv})
	}
	if okUtil {
		s.Charts = append(s.Charts, chart{ID: id + "-util", Caption: "GPU utilisation (left, %) and power (right, W).", Class: "panel", Option: util})
	}
	if okClock {
		s.Charts = append(s.Charts, chart{ID: id + "-clock", Caption: "SM clock (left, MHz) and temperature (right, °C).", Class: "panel", Option: clock})
	}
	s.ChartRow = len(s.Charts) > 1
	if !okKV {
		s.Notes = append(s.Notes, "No KV-cache or queue series was recorded: the sweep did not scrape the server's /metrics and its log has no periodic stats (or the engine exports neither).")
	}
	if !okUtil && !okClock {
		s.Notes = append(s.Notes, "No GPU telemetry was recorded (NVML was not available to the sweep, or it ran on another machine than the GPU).")
	}
	a := axisOf(r.Sweep)
	t := table{
		Caption: "Per level (whole level, warm-up included): what the server's metrics and log and the GPU said.",
		Head: []string{a.head(), "KV-cache usage max", "Running max", "Waiting max", "Preemptions", "GPU utilisation", "Power (W)", "Throttling",
			"Log lines", "Log errors"},
		Right: []bool{true, true, true, true, true, true, true, false, true, true},
		Fold:  []bool{false, false, false, false, false, false, true, true, true, true},
	}
	known := false
	for _, l := range r.Sweep.Levels {
		sv := l.Server
		known = known || sv.KVUsageKnown || sv.WaitingKnown || sv.RunningKnown || sv.PreemptionsKnown || sv.LogLines > 0 || sv.GPUKnown
		t.Rows = append(t.Rows, []string{
			a.cell(l.Concurrency, l.RateRPS),
			knownOr(sv.KVUsageKnown, percent(sv.KVUsageMaxFraction)),
			knownOr(sv.RunningKnown, sig(sv.RunningMax)),
			knownOr(sv.WaitingKnown, sig(sv.WaitingMax)),
			knownOr(sv.PreemptionsKnown, integer(sv.Preemptions)),
			knownOr(sv.GPUKnown, sig(sv.GPUUtilMeanPct)+"%"), knownOr(sv.GPUKnown, sig(sv.GPUPowerMeanW)),
			orText(sv.GPUThrottle, knownOr(sv.GPUKnown, "none")),
			integer(sv.LogLines), integer(sv.LogErrors),
		})
	}
	if known {
		s.Tables = append(s.Tables, t)
	}
	if len(s.Charts) == 0 && !known {
		s.Missing = "Nothing was recorded over time: no server metrics, no server log, no GPU telemetry."
	}
	return s, nil
}

// timelinePoints is how many points a time series is drawn with, per
// series: about one per two pixels of a wide chart.
const timelinePoints = 400

// timelineChart draws the named series of the timeline over time from the
// sweep's start, with the levels marked; ok is false when none of them has
// points. Dense series are thinned by LTTB for drawing.
func timelineChart(tl *analyze.Timeline, names []string, leftUnit, rightUnit string) (template.JS, bool, error) {
	if tl == nil {
		return "", false, nil
	}
	c := charts.NewLine()
	x, _ := valueAxis("Time since the sweep started (s)", "value", 26)
	_, y := valueAxis(leftUnit, "value", 44)
	_, y2 := valueAxis(rightUnit, "value", 44)
	y2.SplitLine = &opts.SplitLine{Show: opts.Bool(false)}
	// The right axis' name stands 44 px out, rotated: a line of text more
	// (about 14 px) and some slack for the browser's font, or its edge is
	// cut off (it was, by 2 px, in Chromium 156).
	c.SetGlobalOptions(append(baseOpts("56", "66"), charts.WithXAxisOpts(x), charts.WithYAxisOpts(y),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}))...)
	c.ExtendYAxis(y2)
	end := 0.0
	for _, l := range tl.Levels {
		end = max(end, l.EndS)
	}
	drawn := 0
	for _, name := range names {
		st, known := timelineStyles[name]
		if !known {
			continue
		}
		for _, ts := range tl.Series {
			if ts.Name != name {
				continue
			}
			var xs, ys []float64
			for _, p := range ts.Points {
				// Samples before the first level (the idle GPU while the
				// sweep started) are in the run's table, not the chart.
				if p.TS >= 0 && (end == 0 || p.TS <= end) {
					xs, ys = append(xs, p.TS), append(ys, p.V*st.scale)
				}
			}
			if len(xs) == 0 {
				continue
			}
			xs, ys = lttb(xs, ys, timelinePoints)
			label := st.label
			if len(tl.Series) > 0 && gpuSeries[name] {
				label = fmt.Sprintf("%s (GPU %d)", st.label, ts.Device)
			}
			var pts []opts.LineData
			for i := range xs {
				pts = append(pts, opts.LineData{Value: xy(xs[i], ys[i])})
			}
			c.AddSeries(label, pts,
				lineStyle(st.color, st.dash, 1.2), itemColor(st.color),
				charts.WithLineChartOpts(opts.LineChart{YAxisIndex: st.axis, ShowSymbol: opts.Bool(false), Symbol: "none"}))
			drawn++
		}
	}
	if drawn == 0 {
		return "", false, nil
	}
	marks := levelMarks(tl, end)
	opt, err := optionJSON(c, func(o map[string]interface{}) {
		setAxis(o, "xAxis", map[string]interface{}{"min": 0, "max": round(end)})
		// The second axis' 0 would sit on the time axis' last label.
		setAxisN(o, "yAxis", 1, map[string]interface{}{"axisLabel": map[string]interface{}{"showMinLabel": false, "color": "#222"}})
		ml, rows := vmarkLine(marks, axisRange{Min: 0, Max: end}, "#444")
		if ml != nil {
			ml["lineStyle"] = map[string]interface{}{"color": "#888", "type": "dotted", "width": 1}
			setSeries(o, 0, map[string]interface{}{"markLine": ml})
		}
		setGrid(o, map[string]interface{}{"top": 40 + rows*(markFont+4)})
	})
	return opt, true, err
}

// gpuSeries are the series measured per GPU, named with the device.
var gpuSeries = map[string]bool{analyze.SeriesGPUUtil: true, analyze.SeriesGPUPower: true, analyze.SeriesGPUSMClock: true, analyze.SeriesGPUTemp: true}

// levelMarks marks each level's start, labelled by its load; a level that
// starts too close to the last labelled one for its label to fit at the
// narrowest width keeps its line but not its label.
func levelMarks(tl *analyze.Timeline, end float64) []vmark {
	var out []vmark
	last := math.Inf(-1)
	for _, l := range tl.Levels {
		name := loadName(l.Load)
		if name == "" {
			name = "c=" + strconv.Itoa(l.Concurrency)
		}
		at := 0.0
		if end > 0 {
			at = l.StartS / end * narrowPlotPX
		}
		w := charPX * float64(len([]rune(name)))
		if at-last < w+8 {
			name = ""
		} else {
			last = at
		}
		out = append(out, vmark{X: l.StartS, Label: name})
	}
	return out
}

func knownOr(known bool, v string) string {
	if !known {
		return "–"
	}
	return v
}

func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
