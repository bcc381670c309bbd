package render

// The comparison page: `headroom compare` writes compare.md and
// compare.html from the compare package's model, with the same building
// blocks (sections, tables, charts) and the same formatting as the report.

import (
	"bytes"
	"fmt"
	htmltemplate "html/template"
	"io"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/go-echarts/go-echarts/v2/charts"
	"github.com/go-echarts/go-echarts/v2/opts"
	"github.com/headroom-llm/headroom/analyze"

	"github.com/headroom-llm/headroom/analyze/compare"
	"github.com/headroom-llm/headroom/internal/uniq"
	"github.com/headroom-llm/headroom/rundir"
	"github.com/headroom-llm/headroom/templates"
)

// MaxOverlaidRuns is the most runs drawn as separate series and listed as
// separate columns; with more, the charts and tables show one series per
// group (the mean over its runs) so the page stays readable.
const MaxOverlaidRuns = 12

// MaxListedRuns is the most runs listed one per row; comparison.json and
// runs.parquet hold every run.
const MaxListedRuns = 200

// comparePage is the comparison laid out for display.
type comparePage struct {
	Title          string
	Generated      string
	Version        string
	EChartsVersion string
	Summary        []string
	Warnings       []string
	Sections       []section
}

var compareMDTemplate = template.Must(template.New("compare.md.tmpl").Funcs(mdFuncs).ParseFS(templates.FS, "compare.md.tmpl"))

var compareHTMLTemplate = htmltemplate.Must(htmltemplate.New("compare.html.tmpl").ParseFS(templates.FS, "compare.html.tmpl"))

// CompareMarkdown writes the comparison as Markdown.
func CompareMarkdown(w io.Writer, c *compare.Comparison) error {
	p, err := buildComparePage(c)
	if err != nil {
		return err
	}
	return compareMarkdown(w, p)
}

// CompareHTML writes the comparison as one self-contained HTML page.
func CompareHTML(w io.Writer, c *compare.Comparison) error {
	p, err := buildComparePage(c)
	if err != nil {
		return err
	}
	return compareHTML(w, p)
}

func compareMarkdown(w io.Writer, p *comparePage) error {
	var b bytes.Buffer
	if err := compareMDTemplate.Execute(&b, p); err != nil {
		return err
	}
	_, err := w.Write(squeezeBlankLines(b.Bytes()))
	return err
}

func compareHTML(w io.Writer, p *comparePage) error {
	return compareHTMLTemplate.Execute(w, struct {
		*comparePage
		CSS       htmltemplate.CSS
		EChartsJS htmltemplate.JS
		PageJS    htmltemplate.JS
	}{p, htmltemplate.CSS(pageCSS), htmltemplate.JS(templates.EChartsJS), htmltemplate.JS(pageJS)})
}

// CompareFiles writes compare.md and compare.html into dir, per format
// ("md", "html" or "both"), and returns the paths written.
func CompareFiles(dir string, c *compare.Comparison, format string) ([]string, error) {
	p, err := buildComparePage(c)
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	var out []string
	write := func(name string, f func(io.Writer, *comparePage) error) error {
		var b bytes.Buffer
		if err := f(&b, p); err != nil {
			return fmt.Errorf("render %s: %w", name, err)
		}
		path := filepath.Join(dir, name)
		if err := rundir.WriteOutput(path, b.Bytes()); err != nil {
			return err
		}
		out = append(out, path)
		return nil
	}
	if format == "md" || format == "both" {
		if err := write("compare.md", compareMarkdown); err != nil {
			return nil, err
		}
	}
	if format == "html" || format == "both" {
		if err := write("compare.html", compareHTML); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func buildComparePage(c *compare.Comparison) (*comparePage, error) {
	p := &comparePage{
		Title: c.Title, Generated: stamp(c.GeneratedAt), Version: c.HeadroomVersion, EChartsVersion: echartsVersion,
		Warnings: compareWarnings(c.Warnings),
	}
	base := ""
	for _, g := range c.Groups {
		if g.Baseline {
			base = g.Name
		}
	}
	p.Summary = append(p.Summary, fmt.Sprintf("%s compared in %s, grouped by %s; the baseline is %q.",
		plural(len(c.Runs), "run", "runs"), plural(len(c.Groups), "group", "groups"), c.GroupBy, base))
	if n := len(c.LeftOut); n > 0 {
		p.Summary = append(p.Summary, fmt.Sprintf("%s left out: failed or measured nothing (listed under Runs compared, with why).", plural(n, "run", "runs")))
	}
	for _, gc := range c.Comparisons {
		if gc.NotComparable {
			p.Summary = append(p.Summary, fmt.Sprintf("%s against %s: %s; no test is made across them.", gc.Candidate, gc.Baseline, notComparableText(gc.Differs)))
		}
	}
	names := seriesNames(c)
	panels, err := panelsSection(c, names)
	if err != nil {
		return nil, err
	}
	roof, err := rooflinesSection(c, names)
	if err != nil {
		return nil, err
	}
	pareto, err := paretoAcrossSection(c, names)
	if err != nil {
		return nil, err
	}
	p.Sections = []section{
		runsSection(c),
		headlineNumbersSection(c),
		diffSection(c, names),
		panels,
		roof,
		differencesSection(c),
		gateSection(c),
		pareto,
		compareMethodSection(c),
	}
	for i := range p.Sections {
		for j := range p.Sections[i].Tables {
			p.Sections[i].Tables[j].normalize()
		}
	}
	return p, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return integer(n) + " " + many
}

// seriesNames names each run in charts and columns: its label, with the
// directory's name added when labels repeat.
func seriesNames(c *compare.Comparison) []string {
	count := map[string]int{}
	for _, r := range c.Runs {
		count[r.Label]++
	}
	names := make([]string, len(c.Runs))
	for i, r := range c.Runs {
		names[i] = r.Label
		if count[r.Label] > 1 {
			names[i] = r.Label + " · " + filepath.Base(r.Dir)
		}
	}
	return names
}

func runsSection(c *compare.Comparison) section {
	s := section{ID: "runs", Title: "Runs compared",
		Read: "Every run, the group it falls in (runs in one group are repeats of one configuration), when it ran and on what."}
	t := table{Head: []string{"#", "Run", "Group", "Started", "Duration", "GPU", "Engine", "Model", "Source"}, Right: []bool{true, false, false, false, true}}
	for i, r := range c.Runs {
		if i == MaxListedRuns {
			s.Notes = append(s.Notes, fmt.Sprintf("%d more runs are not listed; comparison.json and runs.parquet (--index) hold every run.", len(c.Runs)-MaxListedRuns))
			break
		}
		src := "headroom"
		if r.SourceTool != "" {
			src = "import: " + r.SourceTool
		}
		t.Rows = append(t.Rows, []string{strconv.Itoa(i + 1), r.Label, r.Group, stamp(r.Start), durationText(r.DurationS),
			orText(gpuCount(r.GPUName, r.GPUCount), "–"), orText(r.Engine, "–"), orText(r.Model, "–"), src})
	}
	s.Tables = append(s.Tables, t)
	if len(c.LeftOut) > 0 {
		lt := table{Caption: "Runs left out: they failed or measured nothing, so they have no numbers to compare and form no group.",
			Head: []string{"Run", "Started", "Why"}}
		for i, l := range c.LeftOut {
			if i == MaxListedRuns {
				s.Notes = append(s.Notes, fmt.Sprintf("%d more runs left out are not listed; comparison.json holds every one.", len(c.LeftOut)-MaxListedRuns))
				break
			}
			lt.Rows = append(lt.Rows, []string{l.Label, stamp(l.Run.Start), LeftOutWhy(l)})
		}
		s.Tables = append(s.Tables, lt)
	}
	return s
}

func durationText(s float64) string {
	if s <= 0 {
		return "–"
	}
	return dur(s)
}

func headlineNumbersSection(c *compare.Comparison) section {
	s := section{ID: "headline", Title: "Headline numbers",
		Read: "Per run: peak sustained output throughput and the load reaching it, the TPOT knee (p50 TPOT past the knee factor), " +
			"the throughput plateau, the recommended concurrency cap, goodput under the SLO, cost per million output tokens " +
			"at the honest operating point, and the wall the run hit (the diagnosis of its own report, in short)."}
	t := table{Head: []string{"Run", "Group", "Peak output", "At", "TPOT knee", "Plateau", "Cap", "SLO goodput", "$/Mtok out", "Requests (errors)", "Wall hit"},
		Right: []bool{false, false, true, false, false, false, false, true, true, true, false}}
	var costWhy, sloWhy []string
	names := seriesNames(c)
	for i, r := range c.Runs {
		if i == MaxListedRuns {
			s.Notes = append(s.Notes, fmt.Sprintf("%d more runs are not listed; see the group table.", len(c.Runs)-MaxListedRuns))
			break
		}
		sw := r.Sweep
		if sw == nil {
			t.Rows = append(t.Rows, []string{names[i], r.Group, "probe only", "", "", "", "", "", "", "", "–"})
			continue
		}
		slo := "–"
		if sw.SLOOutputTokPerS > 0 {
			slo = tokPerS(sw.SLOOutputTokPerS) + " at " + loadName(sw.SLOLoad)
		} else if sw.SLOMissing != "" {
			sloWhy = uniq.Append(sloWhy, sloMissingText(sw.SLOMissing))
		}
		cost := "–"
		if sw.USDPerMTokOutput > 0 {
			cost = usd(sw.USDPerMTokOutput)
		} else if len(sw.CostMissing) > 0 {
			costWhy = uniq.Append(costWhy, strings.Join(costNeeds(sw.CostMissing), "; "))
		}
		t.Rows = append(t.Rows, []string{names[i], r.Group, orDash(sw.PeakOutputTokPerS, tokPerS), orText(loadName(sw.PeakLoad), "–"),
			orText(loadName(sw.TPOTKnee), "not reached"), orText(loadName(sw.Plateau), "not reached"), orText(loadName(sw.Recommended), "–"), slo, cost,
			fmt.Sprintf("%s (%s)", integer(sw.Requests), integer(sw.Errors)), wallHitText(sw)})
	}
	s.Tables = append(s.Tables, t)
	if len(c.Groups) < len(c.Runs) {
		s.Tables = append(s.Tables, groupTable(c))
	}
	for _, w := range sloWhy {
		s.Notes = append(s.Notes, "SLO goodput not available: "+w+".")
	}
	for _, w := range costWhy {
		s.Notes = append(s.Notes, "Cost not available: "+w+".")
	}
	return s
}

// wallHitText is the run's primary wall and where it is first seen.
func wallHitText(sw *compare.SweepSummary) string {
	if sw.Wall == "" {
		return "–"
	}
	s := wallName(sw.Wall)
	if at := loadName(sw.WallAt); at != "" {
		s += " at " + at
	}
	for _, w := range sw.Then {
		s += "; then " + wallName(w.Wall) + " at " + loadName(w.At)
	}
	return s
}

// groupTable summarises the peak throughput over each group's runs.
func groupTable(c *compare.Comparison) table {
	t := table{Caption: "Per group: peak sustained output throughput over its runs (mean, and the lowest and highest run).",
		Head: []string{"Group", "Runs", "Mean peak output", "Lowest", "Highest"}, Right: []bool{false, true, true, true, true}}
	for _, g := range c.Groups {
		var vals []float64
		for _, i := range g.Runs {
			if sw := c.Runs[i].Sweep; sw != nil && sw.PeakOutputTokPerS > 0 {
				vals = append(vals, sw.PeakOutputTokPerS)
			}
		}
		name := g.Name
		if g.Baseline {
			name += " (baseline)"
		}
		if len(vals) == 0 {
			t.Rows = append(t.Rows, []string{name, integer(len(g.Runs)), "–", "–", "–"})
			continue
		}
		sort.Float64s(vals)
		sum := 0.0
		for _, v := range vals {
			sum += v
		}
		t.Rows = append(t.Rows, []string{name, integer(len(g.Runs)), tokPerS(sum / float64(len(vals))), tokPerS(vals[0]), tokPerS(vals[len(vals)-1])})
	}
	return t
}

func diffSection(c *compare.Comparison, names []string) section {
	s := section{ID: "differs", Title: "What differs between the runs",
		Read: "The runs' recorded context (engine, version, flags, model, quantization, GPU, driver, workload, host), " +
			"showing only what is not the same for every run: the reasons two runs can differ."}
	for _, cd := range c.Contexts {
		what := "sweeps"
		if cd.Kind == "probe" {
			what = "probe runs"
		}
		prefix := ""
		if len(c.Contexts) > 1 {
			prefix = "The " + what + ": "
		}
		switch {
		case len(cd.Runs) == 1:
			// One run of its kind: nothing to diff; its context is its report's.
			continue
		case len(cd.Differs) == 0:
			s.Sentences = append(s.Sentences, prefix+"every recorded fact of their context is the same: differences between them are run-to-run variation, or come from something the manifests do not record.")
		case len(cd.Runs) <= MaxOverlaidRuns:
			t := table{Caption: prefix + "what differs.", Head: []string{"Context"}}
			for _, i := range cd.Runs {
				t.Head = append(t.Head, names[i])
			}
			for _, d := range cd.Differs {
				row := []string{d.Key}
				for _, v := range d.Values {
					row = append(row, orText(v, "–"))
				}
				t.Rows = append(t.Rows, row)
			}
			s.Tables = append(s.Tables, t)
		default:
			t := table{Caption: prefix + "with many runs, each differing key lists its values and how many runs have each.", Head: []string{"Context", "Values (runs)"}}
			for _, d := range cd.Differs {
				count := map[string]int{}
				var order []string
				for _, v := range d.Values {
					if v == "" {
						v = "–"
					}
					if count[v] == 0 {
						order = append(order, v)
					}
					count[v]++
				}
				var parts []string
				for _, v := range order {
					parts = append(parts, fmt.Sprintf("%s (%d)", v, count[v]))
				}
				t.Rows = append(t.Rows, []string{d.Key, strings.Join(parts, "; ")})
			}
			s.Tables = append(s.Tables, t)
		}
		if len(cd.Same) > 0 {
			t := table{Caption: prefix + "the same for every run.", Head: []string{"Context", "Value"}}
			for _, d := range cd.Same {
				t.Rows = append(t.Rows, []string{d.Key, d.Values[0]})
			}
			s.Tables = append(s.Tables, t)
		}
	}
	if len(s.Tables) == 0 && len(s.Sentences) == 0 {
		s.Missing = "One run of each kind: there is nothing to diff. Each run's context is in its own report."
	}
	return s
}

// seriesSet is what one chart series shows: a run, or a group's mean.
type seriesSet struct {
	name   string
	levels []compare.Level
}

// series picks per-run series, or per-group means when there are many runs.
func series(c *compare.Comparison, names []string) ([]seriesSet, bool) {
	if len(c.Runs) <= MaxOverlaidRuns {
		var out []seriesSet
		for i, r := range c.Runs {
			if r.Sweep != nil {
				out = append(out, seriesSet{names[i], r.Sweep.Levels})
			}
		}
		return out, false
	}
	var out []seriesSet
	for _, g := range c.Groups {
		type acc struct {
			lv compare.Level
			n  map[string]int
		}
		byLoad := map[analyze.LoadKey]*acc{}
		var order []analyze.LoadKey
		for _, i := range g.Runs {
			sw := c.Runs[i].Sweep
			if sw == nil {
				continue
			}
			for _, l := range sw.Levels {
				a, ok := byLoad[l.Load]
				if !ok {
					a = &acc{lv: compare.Level{Load: l.Load, Concurrency: l.Concurrency, RateRPS: l.RateRPS}, n: map[string]int{}}
					byLoad[l.Load] = a
					order = append(order, l.Load)
				}
				add := func(key string, dst *float64, v float64) {
					if v > 0 {
						*dst += v
						a.n[key]++
					}
				}
				add("thr", &a.lv.OutputTokPerS, l.OutputTokPerS)
				add("t50", &a.lv.TTFTP50S, l.TTFTP50S)
				add("t99", &a.lv.TTFTP99S, l.TTFTP99S)
				add("p50", &a.lv.TPOTP50S, l.TPOTP50S)
				add("p99", &a.lv.TPOTP99S, l.TPOTP99S)
			}
		}
		var lv []compare.Level
		for _, k := range order {
			a := byLoad[k]
			div := func(v *float64, key string) {
				if a.n[key] > 0 {
					*v /= float64(a.n[key])
				}
			}
			div(&a.lv.OutputTokPerS, "thr")
			div(&a.lv.TTFTP50S, "t50")
			div(&a.lv.TTFTP99S, "t99")
			div(&a.lv.TPOTP50S, "p50")
			div(&a.lv.TPOTP99S, "p99")
			lv = append(lv, a.lv)
		}
		sort.SliceStable(lv, func(i, j int) bool { return levelAxis(lv[i]) < levelAxis(lv[j]) })
		if len(lv) > 0 {
			out = append(out, seriesSet{fmt.Sprintf("%s (mean of %d)", g.Name, len(g.Runs)), lv})
		}
	}
	return out, true
}

func levelAxis(l compare.Level) float64 {
	if l.RateRPS > 0 {
		return l.RateRPS
	}
	return float64(l.Concurrency)
}

// palette: dark, distinct, and told apart in grey by dash as well.
var palette = []string{"#1f4e9c", "#c0392b", "#2e7d32", "#b35900", "#6a1b9a", "#00838f", "#5d4037", "#ad1457", "#37474f", "#827717"}
var dashes = []string{"solid", "dashed", "dotted"}

func panelsSection(c *compare.Comparison, names []string) (section, error) {
	s := section{ID: "panels", Title: "Throughput, TPOT and TTFT against load, overlaid",
		Read: "The three panels of every run on shared axes: where one curve flattens or bends earlier, that run stopped scaling earlier."}
	sets, grouped := series(c, names)
	if len(sets) == 0 {
		s.Missing = "No run has a load sweep, so there are no curves to overlay."
		return s, nil
	}
	open := false
	for _, st := range sets {
		for _, l := range st.levels {
			if l.RateRPS > 0 {
				open = true
			}
		}
	}
	xName := "Concurrency (log₂)"
	if open {
		xName = "Load: concurrency, or request rate for open-loop runs (log₂)"
	}
	if grouped {
		s.Notes = append(s.Notes, fmt.Sprintf("More than %d runs: each series is a group's mean over its runs at each level.", MaxOverlaidRuns))
	}
	var ttftVals, tpotVals []float64
	for _, st := range sets {
		for _, l := range st.levels {
			ttftVals = append(ttftVals, l.TTFTP50S, l.TTFTP99S)
			tpotVals = append(tpotVals, l.TPOTP50S, l.TPOTP99S)
		}
	}
	ttftU, tpotU := durationScale(ttftVals...), durationScale(tpotVals...)
	type panel struct {
		id, y, caption string
		get            func(compare.Level) (float64, float64) // p50 (or value), p99 (0: none)
		scale          float64
	}
	panels := []panel{
		{"throughput", "Output tokens/s", "Output throughput against load, one line per run.",
			func(l compare.Level) (float64, float64) { return l.OutputTokPerS, 0 }, 1},
		{"tpot", "TPOT p50 (" + tpotU.name + ")", "p50 time per output token against load: the knee is where a line turns up.",
			func(l compare.Level) (float64, float64) { return l.TPOTP50S, 0 }, tpotU.scale},
		{"ttft", "TTFT (" + ttftU.name + ")", "Time to first token: p50 solid, p99 dotted, one colour per run.",
			func(l compare.Level) (float64, float64) { return l.TTFTP50S, l.TTFTP99S }, ttftU.scale},
	}
	for _, p := range panels {
		ch := charts.NewLine()
		x, _ := valueAxis(xName, "log", 26)
		_, y := valueAxis(p.y, "value", 46)
		// The legend names the runs only (a p99 line has its run's colour),
		// and the plot starts below it however many runs there are.
		legend := make([]string, len(sets))
		for i, st := range sets {
			legend[i] = st.name
		}
		top := strconv.Itoa(40 + 18*((len(sets)+1)/2))
		ch.SetGlobalOptions(append(baseOpts("58", "16"), charts.WithXAxisOpts(x), charts.WithYAxisOpts(y),
			charts.WithTooltipOpts(opts.Tooltip{Show: opts.Bool(true), Trigger: "item"}),
			charts.WithLegendOpts(opts.Legend{Show: opts.Bool(true), Top: "0", Type: "plain", Data: legend}),
			charts.WithGridOpts(opts.Grid{Left: "58", Right: "16", Top: top, Bottom: "52"}))...)
		for i, st := range sets {
			color, dash := palette[i%len(palette)], dashes[(i/len(palette))%len(dashes)]
			var a, b []opts.LineData
			for _, l := range st.levels {
				v, tail := p.get(l)
				if v > 0 {
					a = append(a, opts.LineData{Value: xy(levelAxis(l), v*p.scale)})
				}
				if tail > 0 {
					b = append(b, opts.LineData{Value: xy(levelAxis(l), tail*p.scale)})
				}
			}
			ch.AddSeries(st.name, a, lineStyle(color, dash, 2), itemColor(color), smoothOff)
			if len(b) > 0 {
				ch.AddSeries(st.name+" p99", b, lineStyle(color, "dotted", 1.5), itemColor(color), smoothOff)
			}
		}
		opt, err := optionJSON(ch, concurrencyAxisPatch)
		if err != nil {
			return s, fmt.Errorf("%s panel: %w", p.id, err)
		}
		s.Charts = append(s.Charts, chart{ID: "cmp-" + p.id, Caption: p.caption, Class: "panel", Option: opt})
	}
	s.ChartRow = true
	// The same numbers as tables, one per metric, a column per series.
	loads := map[float64]analyze.LoadKey{}
	var xs []float64
	for _, st := range sets {
		for _, l := range st.levels {
			if _, ok := loads[levelAxis(l)]; !ok {
				xs = append(xs, levelAxis(l))
			}
			loads[levelAxis(l)] = l.Load
		}
	}
	sort.Float64s(xs)
	metricTable := func(caption string, cell func(compare.Level) string) table {
		t := table{Caption: caption, Head: []string{"Load"}, Right: []bool{false}}
		for _, st := range sets {
			t.Head = append(t.Head, st.name)
			t.Right = append(t.Right, true)
		}
		for _, x := range xs {
			row := []string{loadName(loads[x])}
			for _, st := range sets {
				v := "–"
				for _, l := range st.levels {
					if levelAxis(l) == x {
						v = cell(l)
					}
				}
				row = append(row, v)
			}
			t.Rows = append(t.Rows, row)
		}
		return t
	}
	s.Tables = append(s.Tables,
		metricTable("Output throughput (tok/s).", func(l compare.Level) string { return orDash(l.OutputTokPerS, sig) }),
		metricTable("TPOT p50 / p99 ("+tpotU.name+").", func(l compare.Level) string {
			return orDash(l.TPOTP50S, tpotU.in) + " / " + orDash(l.TPOTP99S, tpotU.in)
		}),
		metricTable("TTFT p50 / p99 ("+ttftU.name+").", func(l compare.Level) string {
			return orDash(l.TTFTP50S, ttftU.in) + " / " + orDash(l.TTFTP99S, ttftU.in)
		}),
	)
	return s, nil
}

func rooflinesSection(c *compare.Comparison, names []string) (section, error) {
	s := section{ID: "rooflines", Title: "Hardware ceilings (rooflines), overlaid",
		Read: "Each probe run's measured GEMM points and its roofline (bandwidth slope, then the peak): a card whose line sits higher or bends further left is the more capable or the more balanced one."}
	t := table{Head: []string{"Run", "GPU", "Peak", "Bandwidth", "Ridge (FLOP/byte)", "90% of peak at"}, Right: []bool{false, false, true, true, true, true}}
	ch := charts.NewLine()
	x, _ := valueAxis("Arithmetic intensity (FLOP/byte, log)", "log", 30)
	_, y := valueAxis("TFLOP/s (log)", "log", 44)
	ch.SetGlobalOptions(append(baseOpts("72", "24"), charts.WithXAxisOpts(x), charts.WithYAxisOpts(y))...)
	points := charts.NewScatter()
	n := 0
	for i, r := range c.Runs {
		rl := r.Roofline
		if rl == nil {
			continue
		}
		color := palette[n%len(palette)]
		n++
		var measured []opts.ScatterData
		var bound []opts.LineData
		for _, p := range rl.Points {
			measured = append(measured, opts.ScatterData{Name: fmt.Sprintf("B=%d", p.Batch), Value: xy(p.Intensity, p.FLOPPerS/1e12), SymbolSize: 7})
			bound = append(bound, opts.LineData{Value: xy(p.Intensity, p.AttainableFLOPPerS/1e12)})
		}
		bound = append(bound, opts.LineData{Value: xy(rl.RidgeFLOPPerByte, rl.PeakFLOPPerS/1e12)})
		sort.SliceStable(bound, func(a, b int) bool {
			return bound[a].Value.([]interface{})[0].(float64) < bound[b].Value.([]interface{})[0].(float64)
		})
		ch.AddSeries(names[i]+" roofline", bound, lineStyle(color, "dashed", 1.5), itemColor(color),
			charts.WithLineChartOpts(opts.LineChart{ShowSymbol: opts.Bool(false), Symbol: "none"}))
		points.AddSeries(names[i], measured, itemColor(color))
		knee := "not reached"
		if rl.KneeBatch > 0 {
			knee = "B=" + strconv.Itoa(rl.KneeBatch)
		}
		t.Rows = append(t.Rows, []string{names[i], orText(rl.GPU, "–"), tflops(rl.PeakFLOPPerS), gbps(rl.BandwidthBytesPerS), sig(rl.RidgeFLOPPerByte), knee})
	}
	if n == 0 {
		s.Missing = "No run holds a probe: run headroom probe on each GPU and compare the probe runs to overlay their rooflines."
		return s, nil
	}
	ch.Overlap(points)
	opt, err := optionJSON(ch, nil)
	if err != nil {
		return s, fmt.Errorf("roofline chart: %w", err)
	}
	s.Charts = append(s.Charts, chart{ID: "cmp-roofline", Caption: "Measured GEMM throughput against arithmetic intensity, log-log, one colour per probe run.", Class: "wide", Option: opt})
	s.Tables = append(s.Tables, t)
	return s, nil
}

var metricLabels = map[string]string{
	"throughput": "Peak output throughput", "goodput": "SLO goodput", "cost": "$/Mtok output",
	"ttft_p50": "TTFT p50", "ttft_p99": "TTFT p99", "tpot_p50": "TPOT p50", "tpot_p99": "TPOT p99", "e2e_p50": "E2E p50", "e2e_p99": "E2E p99",
}

func deltaValue(v float64, unit string) string {
	switch unit {
	case "s":
		return dur(v)
	case "usd/Mtok":
		return usd(v)
	}
	return tokPerS(v)
}

// deltaVerdict says how sure a change is, benchstat-style: "~" when it is
// not significant.
func deltaVerdict(d compare.Delta) string {
	switch {
	case d.P != nil && d.Significant:
		return fmt.Sprintf("significant (%s)", pValue(*d.P))
	case d.P != nil:
		return fmt.Sprintf("~ not significant (%s)", pValue(*d.P))
	case d.Interval != nil && d.Significant:
		return fmt.Sprintf("significant (ratio %s–%s, %s)", sig(d.Interval.Low), sig(d.Interval.High), percent(d.Interval.Confidence))
	case d.Interval != nil:
		return fmt.Sprintf("~ not significant (ratio %s–%s, %s)", sig(d.Interval.Low), sig(d.Interval.High), percent(d.Interval.Confidence))
	}
	return "no test"
}

func pValue(p float64) string {
	if p < 0.001 {
		return "p < 0.001"
	}
	return "p = " + strconv.FormatFloat(p, 'f', 3, 64)
}

func differencesSection(c *compare.Comparison) section {
	s := section{ID: "differences", Title: "Differences from the baseline, and how sure they are",
		Read: "Each candidate group against the baseline group. A change is called significant only when a test says it is " +
			"unlikely to be chance (Mann-Whitney U, or a bootstrap interval of the ratio that excludes 1); \"~\" marks a change " +
			"the data cannot tell from noise, whatever its size."}
	if len(c.Comparisons) == 0 {
		s.Missing = "All runs fall in one group, so there is nothing to compare against the baseline. Group them with --group-by, or set --baseline."
		return s
	}
	for _, gc := range c.Comparisons {
		t := table{Caption: fmt.Sprintf("%s against the baseline %s.", gc.Candidate, gc.Baseline),
			Head:  []string{"Metric", "Load", "Baseline", "Candidate", "Change", "Over", "Verdict"},
			Right: []bool{false, false, true, true, true, true, false}}
		if gc.NotComparable {
			// Side by side, untested: a difference between different
			// workloads, models or machines is not a change.
			t.Caption = fmt.Sprintf("%s against the baseline %s, side by side: %s.", gc.Candidate, gc.Baseline, notComparableText(gc.Differs))
		}
		var why []string
		for _, d := range gc.Deltas {
			over := fmt.Sprintf("%s %s / %s", d.Over, integer(d.N1), integer(d.N2))
			verdict := deltaVerdict(d)
			if gc.NotComparable {
				verdict = "not comparable"
			}
			t.Rows = append(t.Rows, []string{metricLabels[d.Metric], orText(loadName(d.Load), "whole run"), deltaValue(d.Baseline, d.Unit),
				deltaValue(d.Candidate, d.Unit), signedPercent(d.Change), over, verdict})
			if gc.NotComparable {
				continue
			}
			if d.NoTest != "" {
				why = uniq.Append(why, sentence(noTestReason(d)))
			}
		}
		s.Tables = append(s.Tables, t)
		for _, w := range why {
			s.Notes = append(s.Notes, "No test or a weak one: "+w)
		}
	}
	return s
}

func signedPercent(f float64) string {
	if f > 0 {
		return "+" + percent(f)
	}
	return percent(f)
}

func gateSection(c *compare.Comparison) section {
	s := section{ID: "gate", Title: "Regression gate",
		Read: "The --fail-if rules, checked for every candidate group against the baseline; a latency rule is checked at every load level both measured and reports the worst."}
	g := c.Gate
	if g == nil {
		s.Missing = "No --fail-if rules were given."
		return s
	}
	verdict := "passed"
	if g.Failed {
		verdict = "failed"
	}
	s.Sentences = append(s.Sentences, fmt.Sprintf("The gate %s.", verdict))
	if g.NeedsSignificance {
		s.Sentences = append(s.Sentences, "A rule fails only when its change is also significant (or cannot be tested).")
	}
	t := table{Head: []string{"Rule", "Candidate", "Result", "Detail"}}
	for _, r := range g.Results {
		t.Rows = append(t.Rows, []string{r.Rule, orText(r.Candidate, "–"), strings.ToUpper(r.Status), GateLine(c, r)})
	}
	s.Tables = append(s.Tables, t)
	return s
}

func compareMethodSection(c *compare.Comparison) section {
	s := section{ID: "method", Title: "How the comparison was made"}
	s.Sentences = []string{
		"Every run is analysed alone, with the same settings as headroom report, so its numbers match its own report; the comparison reads its manifest, levels, requests and per-level statistics (not the per-chunk tokens, server metrics or log, so ITL and the diagnosis are not compared).",
		fmt.Sprintf("Runs are grouped by %s; runs in one group are treated as repeats of one configuration.", c.GroupBy),
		"Whole-run numbers (peak throughput, SLO goodput, cost) are averaged over a group's runs and tested with a two-sided Mann-Whitney U test over the per-run values: a difference between configurations needs repeated runs, four or more a side to reach p < 0.05.",
		"Latency percentiles at a load level both groups measured are taken over the pooled requests of the group's runs (" + c.PercentileMethod + "); p50 changes are tested with Mann-Whitney U on the per-request values, p99 changes with a bootstrap interval of the ratio of the p99s. Requests within a run share its conditions, so with one run a side a significant change says the runs differ, not that their configurations always will.",
		fmt.Sprintf("Significance level: %s.", strconv.FormatFloat(c.Alpha, 'f', -1, 64)),
	}
	if c.SLO != nil {
		s.Sentences = append(s.Sentences, "SLO judged against: "+c.SLO.Spec+".")
	}
	t := table{Caption: "What imported runs lack (their numbers cannot include these):", Head: []string{"Run", "Source", "Lacks"}}
	names := seriesNames(c)
	for i, r := range c.Runs {
		if len(r.Lacks) > 0 && len(t.Rows) < MaxListedRuns {
			t.Rows = append(t.Rows, []string{names[i], r.SourceTool, strings.Join(r.Lacks, "; ")})
		}
	}
	if len(t.Rows) > 0 {
		s.Tables = append(s.Tables, t)
	}
	return s
}

// noTestReason says why a delta has no test, or only a weak one.
func noTestReason(d compare.Delta) string {
	switch d.NoTest {
	case compare.NoTestNotComparable:
		return "the groups are not comparable"
	case compare.NoTestFewRuns:
		return fmt.Sprintf("%d run(s) against %d: a difference between configurations needs repeated runs of each (headroom compare groups runs by --group-by)", d.N1, d.N2)
	case compare.NoTestPFloor:
		return fmt.Sprintf("with %d and %d runs the smallest possible p is %.3g, so no difference can be significant at %.2g; repeat the runs (4 or more a side)", d.N1, d.N2, d.MinP, d.Alpha)
	case compare.NoTestFewRequests:
		return fmt.Sprintf("a p%g needs at least %d requests a side (have %d and %d)", d.Percentile, d.Need, d.N1, d.N2)
	case compare.NoTestNoBootstrap:
		return "no bootstrap (no resamples set, or a zero latency)"
	}
	return d.NoTest
}

// notComparableText says which must-match keys differ between two groups:
// "not comparable: workload.prompt_tokens differs (fixed 512 against fixed 128)".
func notComparableText(rows []compare.DiffRow) string {
	parts := make([]string, len(rows))
	for i, r := range rows {
		parts[i] = r.Key + " differs (" + strings.Join(r.Values, " against ") + ")"
	}
	return "not comparable: " + strings.Join(parts, "; ")
}

// LeftOutWhy says why a run has nothing to compare, and why its collector
// stopped when it did.
func LeftOutWhy(l compare.LeftOut) string {
	why := map[string]string{
		compare.LeftOutNoLevels:   "no request was measured (no sweep level was written)",
		compare.LeftOutNoData:     "it holds no sweep level and no probe",
		compare.LeftOutNoRequests: "no request was measured",
		compare.LeftOutAllFailed:  "every one of its " + integer(l.Requests) + " measured requests failed",
	}[l.Why]
	if why == "" {
		why = l.Why
	}
	if st := l.Stopped; st != nil {
		why += "; the collector stopped (" + st.Reason
		if st.Error != "" {
			why += ": " + st.Error
		}
		why += ")"
	} else if !l.Complete {
		why += "; the collector did not finish (killed?)"
	}
	return why
}

// LeftOutList names the left-out runs and why, for an error.
func LeftOutList(l []compare.LeftOut) string {
	parts := make([]string, len(l))
	for i, r := range l {
		parts[i] = r.Dir + ": " + LeftOutWhy(r)
	}
	return strings.Join(parts, "; ")
}

// compareWarnings says the comparison's warnings.
func compareWarnings(ws []compare.Warning) []string {
	var out []string
	for _, w := range ws {
		switch w.Kind {
		case compare.WarnIncomplete:
			out = append(out, w.Dir+" is incomplete (the collector was interrupted): its numbers cover only what it measured")
		case compare.WarnNonFinite:
			out = append(out, integer(w.Count)+" values computed were not finite numbers (an overflow) and are shown as 0 or left out")
		default:
			out = append(out, w.Kind)
		}
	}
	return out
}

// sloMissingText says why a run has no SLO goodput.
func sloMissingText(code string) string {
	switch code {
	case compare.SLOMissingNoSLO:
		return "no SLO given (--slo)"
	case compare.SLOMissingNoLevel:
		return "no level inside the SLO"
	}
	return code
}
