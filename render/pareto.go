package render

import (
	"fmt"
	"sort"
	"strings"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/analyze/compare"
)

const paretoRead = "Each level as what the box delivers (output tokens per second per GPU, up) against what one user gets " +
	"(output tokens per second of one stream, 1 / median TPOT, right). The line joins the frontier: the levels no other " +
	"level beats, being at least as fast per user and delivering more per GPU. A level off the line is a worse choice " +
	"than one on it on both counts; between levels on the line the choice is the trade itself."

// paretoSeries is one run's points on a Pareto chart.
type paretoSeries struct {
	name   string
	color  string
	points []analyze.ParetoPoint
}

// paretoChart draws the points of each series and one frontier line over
// them all (the points' Frontier marks).
func paretoChart(id, caption, yName string, series []paretoSeries) (chart, error) {
	sc := charts.NewScatter()
	x, _ := valueAxis("Output tok/s per user (1 / median TPOT)", "value", 30)
	_, y := valueAxis(yName, "value", 52)
	sc.SetGlobalOptions(append(baseOpts("72", "24"), charts.WithXAxisOpts(x), charts.WithYAxisOpts(y),
		charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item"}))...)
	var frontier []analyze.ParetoPoint
	for _, s := range series {
		var data []opts.ScatterData
		for _, p := range s.points {
			size := 7
			if p.Frontier {
				size = 11
				frontier = append(frontier, p)
			}
			name := loadName(p.Load)
			if p.Label != "" {
				name = p.Label + " " + name
			}
			if !p.Sustained {
				name += " (not sustained)"
			}
			data = append(data, opts.ScatterData{Name: name, Value: xy(p.TokPerSPerUser, p.OutputTokPerSPerGPU), SymbolSize: size})
		}
		sc.AddSeries(s.name, data, itemColor(s.color))
	}
	sort.SliceStable(frontier, func(a, b int) bool { return frontier[a].TokPerSPerUser < frontier[b].TokPerSPerUser })
	line := charts.NewLine()
	var ld []opts.LineData
	for _, p := range frontier {
		ld = append(ld, opts.LineData{Value: xy(p.TokPerSPerUser, p.OutputTokPerSPerGPU)})
	}
	line.AddSeries("frontier", ld, lineStyle(colorBound, "solid", 1.5), itemColor(colorBound),
		charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false), Symbol: "none"}))
	sc.Overlap(line)
	opt, err := optionJSON(sc, nil)
	if err != nil {
		return chart{}, fmt.Errorf("pareto chart: %w", err)
	}
	return chart{ID: id, Caption: caption, Class: "half", Option: opt}, nil
}

// paretoTable lists the points, the frontier marked; withRun adds the
// run's label (a comparison).
func paretoTable(caption, perHead string, points []analyze.ParetoPoint, withRun bool) table {
	t := table{Caption: caption}
	if withRun {
		t.Head, t.Right = append(t.Head, "Run"), append(t.Right, false)
	}
	t.Head = append(t.Head, "Level", "Tok/s per user", perHead, "Frontier", "Output tok/s ÷ concurrency")
	t.Right = append(t.Right, false, true, true, false, true)
	t.Fold = make([]bool, len(t.Head))
	t.Fold[len(t.Fold)-1] = true // vllm bench sweep's figure, a click away
	for _, p := range points {
		var row []string
		if withRun {
			row = append(row, p.Label)
		}
		on := "–"
		switch {
		case p.Frontier:
			on = "yes"
		case !p.Sustained:
			on = "not sustained"
		}
		row = append(row, loadName(p.Load), sig(p.TokPerSPerUser), sig(p.OutputTokPerSPerGPU), on, orDash(p.OutputTokPerSPerConcurrency, sig))
		t.Rows = append(t.Rows, row)
	}
	return t
}

// perGPUHead names the y axis: per GPU, or per host for a run without GPU.
func perGPUHead(gpus int) string {
	if gpus == 0 {
		return "Output tok/s per host"
	}
	return "Output tok/s per GPU"
}

// paretoSection is a run's Pareto view, in its details.
func paretoSection(id string, r *analyze.RunAnalysis) (section, error) {
	s := section{ID: id, Title: "Throughput per GPU against speed per user", Read: paretoRead}
	if r.Sweep == nil || r.Sweep.Pareto == nil {
		s.Missing = "No level has both a throughput and a median TPOT to place."
		return s, nil
	}
	p := r.Sweep.Pareto
	var on, off []string
	for _, pt := range p.Points {
		switch {
		case pt.Frontier:
			on = append(on, loadName(pt.Load))
		case !pt.Sustained:
			off = append(off, loadName(pt.Load)+" (not sustained)")
		default:
			off = append(off, loadName(pt.Load))
		}
	}
	sent := "On the frontier: " + strings.Join(on, ", ")
	if len(off) > 0 {
		sent += "; off it: " + strings.Join(off, ", ")
	}
	s.Sentences = append(s.Sentences, sentence(sent))
	head := perGPUHead(p.GPUs)
	per := fmt.Sprintf("divided by %d GPU(s)", p.GPUs)
	if p.GPUs == 0 {
		per = "the run used no GPU, so per host"
	}
	c, err := paretoChart(id+"-chart", "Output tok/s per GPU against tok/s per user, one point per level, the frontier joined ("+per+"; "+contextLine(r, nil)+").", head, []paretoSeries{{name: "levels", color: colorMeasured, points: p.Points}})
	if err != nil {
		return s, err
	}
	s.Charts = append(s.Charts, c)
	t := paretoTable("Each level's place ("+per+"). Tok/s per user is 1 / median TPOT; output tok/s ÷ concurrency is vllm bench sweep's tokens per user (closed loop): it counts the wait for the first token, which 1 / TPOT does not.", head, p.Points, false)
	if ec, ok := energyOf(r); ok {
		joinEnergy(&t, ec, r.Sweep.Levels, p.Points)
	}
	s.Tables = append(s.Tables, t)
	return s, nil
}

// joinEnergy adds the energy columns to a run's Pareto table, row by row
// (a point's level), with dashes for a level without energy.
func joinEnergy(t *table, ec energyColumns, levels []analyze.LevelStats, points []analyze.ParetoPoint) {
	t.Head = append(t.Head, ec.head...)
	t.Fold = append(t.Fold, ec.fold...)
	for range ec.head {
		t.Right = append(t.Right, true)
	}
	byIndex := map[int]*analyze.LevelStats{}
	for i := range levels {
		byIndex[levels[i].LevelIndex] = &levels[i]
	}
	for i, pt := range points {
		var cells []string
		if l := byIndex[pt.LevelIndex]; l != nil {
			cells = ec.cells(l)
		}
		for len(cells) < len(ec.head) {
			cells = append(cells, "–")
		}
		t.Rows[i] = append(t.Rows[i], cells...)
	}
	t.Notes = append(t.Notes, ec.notes...)
}

// paretoRunsCharted is how many runs the comparison's Pareto chart draws
// point by point; beyond it the chart draws the frontier only, so an
// archive of thousands of runs keeps a page a browser opens.
const paretoRunsCharted = 12

// paretoAcrossSection is the comparison's Pareto view: every run's levels
// on one chart, the frontier across them joined and listed.
func paretoAcrossSection(c *compare.Comparison, names []string) (section, error) {
	s := section{ID: "pareto", Title: "Throughput per GPU against speed per user, across runs", Read: paretoRead +
		" Across runs, the frontier says which run's setting to choose at each speed per user."}
	if len(c.Pareto) == 0 {
		s.Missing = "No run has a level with both a throughput and a median TPOT to place."
		return s, nil
	}
	byRun := map[int][]analyze.ParetoPoint{}
	var frontier []analyze.ParetoPoint
	for _, p := range c.Pareto {
		byRun[p.Run] = append(byRun[p.Run], p)
		if p.Frontier {
			frontier = append(frontier, p)
		}
	}
	sort.SliceStable(frontier, func(a, b int) bool { return frontier[a].TokPerSPerUser > frontier[b].TokPerSPerUser })
	var series []paretoSeries
	caption := "Output tok/s per GPU (per host for a run without GPU) against tok/s per user, one colour per run, the frontier across runs joined."
	if len(byRun) <= paretoRunsCharted {
		for i := range c.Runs {
			if ps := byRun[i]; len(ps) > 0 {
				series = append(series, paretoSeries{name: names[i], color: palette[len(series)%len(palette)], points: ps})
			}
		}
	} else {
		series = []paretoSeries{{name: "frontier levels", color: colorMeasured, points: frontier}}
		caption = fmt.Sprintf("The frontier across %d runs: output tok/s per GPU (per host for a run without GPU) against tok/s per user; with more than %d runs only the frontier's levels are drawn.", len(byRun), paretoRunsCharted)
	}
	var on []string
	for _, p := range frontier {
		on = append(on, names[p.Run]+" "+loadName(p.Load))
	}
	s.Sentences = append(s.Sentences, sentence("On the frontier, from the fastest per user: "+strings.Join(on, ", ")))
	ch, err := paretoChart("cmp-pareto", caption, "Output tok/s per GPU", series)
	if err != nil {
		return s, err
	}
	s.Charts = append(s.Charts, ch)
	for i := range frontier {
		frontier[i].Label = names[frontier[i].Run]
	}
	s.Tables = append(s.Tables, paretoTable("The levels on the frontier across runs, from the fastest per user (tok/s per user is 1 / median TPOT).", "Output tok/s per GPU", frontier, true))
	return s, nil
}
