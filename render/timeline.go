package render

import (
	"fmt"
	"html/template"
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

// timelineSection shows the server's KV-cache usage and queue over time.
func timelineSection(id string, r *analyze.RunAnalysis) (section, error) {
	s := section{
		ID:    id,
		Title: "KV cache and queue over time",
		Read: "The server's KV-cache usage, running and waiting requests through the sweep, with each level's " +
			"start marked and its warm-up shaded. A cache near 100% at the knee points to the KV-cache wall; a " +
			"growing queue to queueing.",
	}
	if r.Sweep == nil {
		s.Missing = noSweep("server metrics timeline")
		return s, nil
	}
	want := []string{analyze.SeriesKVUsage, analyze.SeriesRunning, analyze.SeriesWaiting, analyze.SeriesPreemptions}
	opt, ok, err := timelineChart(r.Sweep.Timeline, want, "%", "Requests")
	if err != nil {
		return s, err
	}
	if ok {
		s.Charts = []chart{{ID: id + "-chart", Caption: "KV-cache usage (left, %) and running, waiting requests and preemptions (right) over the sweep.", Class: "wide", Option: opt}}
	} else {
		s.Missing = "No KV-cache or queue series was recorded: the sweep did not scrape the server's /metrics and its log has no periodic stats (or the engine exports neither)."
	}
	t := table{
		Caption: "Per level (whole level, warm-up included): what the server's metrics and log said.",
		Head:    []string{"Concurrency", "KV-cache usage max", "Running max", "Waiting max", "Preemptions", "Log lines", "Log errors"},
		Right:   []bool{true, true, true, true, true, true, true},
	}
	known := false
	for _, l := range r.Sweep.Levels {
		sv := l.Server
		known = known || sv.KVUsageKnown || sv.WaitingKnown || sv.RunningKnown || sv.PreemptionsKnown || sv.LogLines > 0
		t.Rows = append(t.Rows, []string{
			integer(l.Concurrency),
			knownOr(sv.KVUsageKnown, percent(sv.KVUsageMaxFraction)),
			knownOr(sv.RunningKnown, sig(sv.RunningMax)),
			knownOr(sv.WaitingKnown, sig(sv.WaitingMax)),
			knownOr(sv.PreemptionsKnown, integer(sv.Preemptions)),
			integer(sv.LogLines), integer(sv.LogErrors),
		})
	}
	if known {
		s.Tables = append(s.Tables, t)
		if !ok {
			s.Missing += " The table has what the log said."
		}
	}
	return s, nil
}

// telemetrySection shows the GPU's utilisation, power, clock and
// temperature over the sweep.
func telemetrySection(id string, r *analyze.RunAnalysis) (section, error) {
	s := section{
		ID:    id,
		Title: "GPU telemetry",
		Read:  "GPU utilisation, power, SM clock and temperature through the sweep (NVML). Falling clocks at high power or temperature mean throttling.",
	}
	if r.Sweep == nil {
		s.Missing = noSweep("GPU telemetry")
		return s, nil
	}
	tl := r.Sweep.Timeline
	opt1, ok1, err := timelineChart(tl, []string{analyze.SeriesGPUUtil, analyze.SeriesGPUPower}, "%", "W")
	if err != nil {
		return s, err
	}
	opt2, ok2, err := timelineChart(tl, []string{analyze.SeriesGPUSMClock, analyze.SeriesGPUTemp}, "MHz", "°C")
	if err != nil {
		return s, err
	}
	if ok1 {
		s.Charts = append(s.Charts, chart{ID: id + "-util", Caption: "GPU utilisation (left, %) and power (right, W).", Class: "half", Option: opt1})
	}
	if ok2 {
		s.Charts = append(s.Charts, chart{ID: id + "-clock", Caption: "SM clock (left, MHz) and temperature (right, °C).", Class: "half", Option: opt2})
	}
	s.ChartRow = len(s.Charts) == 2
	if !ok1 && !ok2 {
		s.Missing = "No GPU telemetry was recorded (NVML was not available to the sweep, or it ran on another machine than the GPU)."
	}
	t := table{
		Caption: "Per level: mean GPU utilisation and power (summed over GPUs), and throttle reasons seen.",
		Head:    []string{"Concurrency", "GPU utilisation", "Power (W)", "Throttling"},
		Right:   []bool{true, true, true, false},
	}
	known := false
	for _, l := range r.Sweep.Levels {
		sv := l.Server
		known = known || sv.GPUKnown
		t.Rows = append(t.Rows, []string{
			integer(l.Concurrency), knownOr(sv.GPUKnown, sig(sv.GPUUtilMeanPct)+"%"), knownOr(sv.GPUKnown, sig(sv.GPUPowerMeanW)),
			orText(sv.GPUThrottle, knownOr(sv.GPUKnown, "none")),
		})
	}
	if known {
		s.Tables = append(s.Tables, t)
	}
	return s, nil
}

// timelineChart draws the named series of the timeline over time, with
// the levels marked; ok is false when none of them has points.
func timelineChart(tl *analyze.Timeline, names []string, leftUnit, rightUnit string) (template.JS, bool, error) {
	if tl == nil {
		return "", false, nil
	}
	c := charts.NewLine()
	x, _ := valueAxis("Time since the sweep started (s)", "value", 26)
	_, y := valueAxis(leftUnit, "value", 44)
	_, y2 := valueAxis(rightUnit, "value", 44)
	y2.SplitLine = &opts.SplitLine{Show: opts.Bool(false)}
	c.SetGlobalOptions(append(baseOpts("64", "64"), charts.WithXAxisOpts(x), charts.WithYAxisOpts(y),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "axis"}))...)
	c.ExtendYAxis(y2)
	drawn := 0
	for _, name := range names {
		st, known := timelineStyles[name]
		if !known {
			continue
		}
		for _, ts := range tl.Series {
			if ts.Name != name || len(ts.Points) == 0 {
				continue
			}
			label := st.label
			if name == analyze.SeriesGPUUtil || name == analyze.SeriesGPUPower || name == analyze.SeriesGPUSMClock || name == analyze.SeriesGPUTemp {
				label = fmt.Sprintf("GPU %d %s", ts.Device, st.label)
			}
			var pts []opts.LineData
			for _, p := range ts.Points {
				pts = append(pts, opts.LineData{Value: xy(p.TS, p.V*st.scale)})
			}
			sopts := []charts.SeriesOpts{
				lineStyle(st.color, st.dash, 1.5), itemColor(st.color),
				charts.WithLineChartOpts(opts.LineChart{YAxisIndex: st.axis, ShowSymbol: opts.Bool(false), Symbol: "none"}),
			}
			if drawn == 0 {
				sopts = append(sopts, levelMarks(tl)...)
			}
			c.AddSeries(label, pts, sopts...)
			drawn++
		}
	}
	if drawn == 0 {
		return "", false, nil
	}
	opt, err := optionJSON(c, nil)
	return opt, true, err
}

// levelMarks marks each level's start with a line labelled by its
// concurrency, and shades its warm-up.
func levelMarks(tl *analyze.Timeline) []charts.SeriesOpts {
	var lines []opts.MarkLineNameXAxisItem
	var areas [][]opts.MarkAreaData
	for _, l := range tl.Levels {
		name := l.Load // "c=8" or "4 req/s", as the analyzer names the level
		if name == "" {
			name = "c=" + strconv.Itoa(l.Concurrency)
		}
		lines = append(lines, opts.MarkLineNameXAxisItem{Name: name, XAxis: round(l.StartS)})
		if l.WarmupEndS > l.StartS {
			areas = append(areas, []opts.MarkAreaData{{XAxis: round(l.StartS)}, {XAxis: round(l.WarmupEndS)}})
		}
	}
	out := []charts.SeriesOpts{
		charts.WithMarkLineStyleOpts(opts.MarkLineStyle{Symbol: noSymbols, Label: &opts.Label{Show: opts.Bool(true), Position: "insideEndTop", Color: "#444", Formatter: "{b}"},
			LineStyle: &opts.LineStyle{Color: "#888", Type: "dotted", Width: 1}}),
		charts.WithMarkLineNameXAxisItemOpts(lines...),
	}
	if len(areas) > 0 {
		out = append(out,
			charts.WithMarkAreaStyleOpts(opts.MarkAreaStyle{ItemStyle: &opts.ItemStyle{Color: "rgba(0,0,0,0.06)"}}),
			charts.WithMarkAreaData(areas...))
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
