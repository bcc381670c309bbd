package render

import (
	"fmt"
	"html/template"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/stats"
)

// The view is the report model laid out for display: the same sections,
// facts, tables and sentences feed report.md and report.html, so the two
// say the same thing. Building it formats numbers and picks display scales;
// it computes nothing the analyzer did not.

// page is the whole report: page one (the answer), then, for several
// runs, what differs between them, then each run's details, then the
// appendix (the probe, the runs' context, the method, the raw data).
type page struct {
	Title          string
	Generated      string
	Version        string
	EChartsVersion string
	// Warnings concern the report as a whole.
	Warnings []string
	Front    front
	// Across compares the sweeps of the report, when it has several.
	Across []section
	// Repeats are tables of runs of one configuration, with intervals
	// across them.
	Repeats  []table
	Runs     []runView
	Appendix []section
}

// runView is the details of one run.
type runView struct {
	Anchor   string // HTML id prefix, unique per run
	Number   int
	Name     string
	Dir      string
	Warnings []string
	Sections []section
}

// section is one part of the report. A section whose data the run lacks is
// still shown, with Missing saying what is missing and how to get it, so a
// reader never wonders whether it was forgotten.
type section struct {
	ID    string // HTML id, unique in the page
	Title string
	// Read says in a sentence or two how to read the section.
	Read    string
	Missing string
	// Facts are labelled values shown as cards.
	Facts []fact
	// Sentences are prose generated from the numbers; Answer shows them as
	// the numbered answer of page one.
	Sentences []string
	Answer    bool
	// Notes are remarks below the charts and tables.
	Notes []string
	// Charts are drawn in the HTML only; Markdown shows their Tables.
	// ChartRow puts them side by side (the three panels), ChartPair two
	// by two.
	Charts    []chart
	ChartRow  bool
	ChartPair bool
	Tables    []table
	Verdicts  []verdict
}

// fact is one labelled value: one quantity in one unit. Missing facts say
// why in Value. Link, when set, is the source of the value (a URL), shown
// by its host.
type fact struct {
	Label   string
	Value   string
	Note    string
	Link    string
	Missing bool
}

// LinkText is the host of the fact's link, short enough for a card.
func (f fact) LinkText() string { return linkText(f.Link) }

// table is a captioned table of preformatted cells.
type table struct {
	Caption string
	Head    []string
	// Right marks columns to right-align (numbers); Link marks columns of
	// URLs, shown as links named by their host.
	Right []bool
	Link  []bool
	// Fold marks rarely needed columns: the HTML shows them in a folded
	// table of their own under the main one (More), which print leaves
	// out; Markdown shows both tables.
	Fold []bool
	Rows [][]string
	// Collapsed folds the whole table: the HTML shows its caption, a click
	// shows the rows; print leaves it out.
	Collapsed bool
	// Notes are the table's footnotes, once for the whole table.
	Notes []string
	More  *table
}

// verdict is one diagnosis check with its evidence.
type verdict struct {
	Check    string
	Result   string
	Status   string // the analyzer's status, for the page's colours
	Summary  string
	Fixes    []string
	Evidence []evidence
}

// evidence is one piece of evidence: a metric value or a log excerpt.
type evidence struct {
	What  string
	Level string
	Log   []logLine
}

// logLine is one line of a server log, with its 1-based line number.
type logLine struct {
	N    int64
	Text string
}

// chart is one ECharts chart: its element id, its caption and its option
// as JSON (built with go-echarts, escaped for a <script> element).
type chart struct {
	ID      string
	Caption string
	Class   string // "wide", "panel" or "half": the size on the page
	Option  template.JS
}

// buildPage lays out the report model.
func buildPage(rep *analyze.Report) (*page, error) {
	p := &page{
		Title:          rep.Title,
		Generated:      stamp(rep.GeneratedAt),
		Version:        rep.HeadroomVersion,
		EChartsVersion: echartsVersion,
		Warnings:       noteTexts(rep.Notes),
	}
	var err error
	if p.Front, err = buildFront(rep); err != nil {
		return nil, err
	}
	if p.Across, err = acrossSections(rep); err != nil {
		return nil, err
	}
	for _, g := range rep.Repeats {
		p.Repeats = append(p.Repeats, repeatTable(rep, g))
	}
	for i := range rep.Runs {
		if rep.Runs[i].Sweep == nil && rep.Runs[i].LogOnly == nil {
			continue // a probe's numbers are in the appendix, once
		}
		rv, err := buildRun(rep, i, i == p.Front.Run)
		if err != nil {
			return nil, err
		}
		if len(p.Runs) > 0 {
			// How to read a section is said once, at its first showing.
			for j := range rv.Sections {
				rv.Sections[j].Read = ""
			}
		}
		p.Runs = append(p.Runs, rv)
	}
	p.Appendix = appendixSections(rep)
	normalizeSections(p.Front.Sections)
	normalizeSections(p.Across)
	for i := range p.Runs {
		normalizeSections(p.Runs[i].Sections)
	}
	normalizeSections(p.Appendix)
	return p, nil
}

// countSweeps is how many runs of the report hold a sweep.
func countSweeps(rep *analyze.Report) int {
	n := 0
	for i := range rep.Runs {
		if rep.Runs[i].Sweep != nil {
			n++
		}
	}
	return n
}

// splitRows cuts a long table of label and value pairs in two tables of
// the same head, which the page sets side by side where they fit.
func splitRows(t table, over int) []table {
	if len(t.Rows) <= over {
		return []table{t}
	}
	half := (len(t.Rows) + 1) / 2
	a, b := t, t
	a.Rows, b.Rows = t.Rows[:half], t.Rows[half:]
	// The caption heads the first half; footnotes and the folded columns
	// follow the second.
	a.Notes, a.More, b.Caption = nil, nil, ""
	return []table{a, b}
}

// allSections lists every section of the page in order.
func (p *page) allSections() []section {
	out := append([]section{}, p.Front.Sections...)
	out = append(out, p.Across...)
	for _, r := range p.Runs {
		out = append(out, r.Sections...)
	}
	return append(out, p.Appendix...)
}

func normalizeSections(ss []section) {
	for i := range ss {
		for j := range ss[i].Tables {
			ss[i].Tables[j].normalize()
		}
	}
}

// buildRun lays out a sweep run's details. The headline run's three
// panels are on page one already, so its details carry their numbers only.
func buildRun(rep *analyze.Report, i int, headline bool) (runView, error) {
	r := &rep.Runs[i]
	rv := runView{
		Anchor:   "run" + strconv.Itoa(i+1),
		Number:   i + 1,
		Name:     runLabel(r),
		Dir:      r.Dir,
		Warnings: append(slices.Clone(r.Warnings), noteTexts(r.Notes)...),
	}
	id := func(s string) string { return rv.Anchor + "-" + s }
	if r.LogOnly != nil {
		rv.Sections = []section{logOnlySection(id("log"), r)}
		return rv, nil
	}
	sweep, err := sweepSection(id("sweep"), r, !headline, rep.PercentileMethod)
	if err != nil {
		return rv, err
	}
	goodput, err := goodputSection(id("goodput"), r)
	if err != nil {
		return rv, err
	}
	overTime, err := overTimeSection(id("timeline"), r)
	if err != nil {
		return rv, err
	}
	if !headline && len(rep.Runs) > 0 && countSweeps(rep) < 2 {
		// A run that is neither page one's nor in the comparison of
		// several runs opens with its figures.
		rv.Sections = append(rv.Sections, runFactsSection(id("headline"), rep, r))
	}
	// Every per-level table sits in one section, where the page sets
	// narrow tables side by side: throughput and latency, goodput, the
	// roofline gap, what the server and GPU said.
	pareto, err := paretoSection(id("pareto"), r)
	if err != nil {
		return rv, err
	}
	// The Pareto table, with each level's energy per output token, sits
	// with the other per-level tables; its chart and sentence stay in their
	// own section after the cost. A run without a Pareto point shows its
	// energy in a table of its own.
	efficiency := pareto.tablesOnly()
	if len(efficiency.Tables) == 0 {
		efficiency = energySection(id("energy"), r)
	}
	levels := mergeSections(sweep, goodput, decodeSection(id("roofline"), rep, r), overTime.tablesOnly(), efficiency)
	pareto.Tables = nil
	overTime.Tables = nil
	rv.Sections = append(rv.Sections, levels)
	if pred, ok := predictionSection(id("prediction"), rep, r); ok {
		// After the per-level tables, whose roofline gap the prediction builds on.
		rv.Sections = append(rv.Sections, pred)
	}
	rv.Sections = append(rv.Sections,
		diagnosisSection(id("diagnosis"), r),
		overTime,
		costSection(id("cost"), r),
		pareto,
	)
	return rv, nil
}

// tablesOnly is the section's tables and what it says about them.
func (s section) tablesOnly() section {
	return section{Title: s.Title, Tables: s.Tables}
}

// mergeSections folds the later sections' sentences, tables and notes into
// the first; a later section's Missing becomes a note titled by it.
func mergeSections(first section, rest ...section) section {
	for _, r := range rest {
		if r.Missing != "" {
			first.Notes = append(first.Notes, r.Title+": "+r.Missing)
		}
		first.Sentences = append(first.Sentences, r.Sentences...)
		first.Tables = append(first.Tables, r.Tables...)
		first.Notes = append(first.Notes, r.Notes...)
	}
	return first
}

// HasHead reports whether any column has a heading; a table of label and
// value pairs has none.
func (t table) HasHead() bool {
	for _, h := range t.Head {
		if h != "" {
			return true
		}
	}
	return false
}

// normalize gives every row and the alignment as many cells as the head,
// so the templates can index them freely, and moves folded columns to More.
func (t *table) normalize() {
	cols := len(t.Head)
	for _, r := range t.Rows {
		cols = max(cols, len(r))
	}
	pad := func(v []bool) []bool {
		for len(v) < cols {
			v = append(v, false)
		}
		return v
	}
	for len(t.Head) < cols {
		t.Head = append(t.Head, "")
	}
	t.Right, t.Link, t.Fold = pad(t.Right), pad(t.Link), pad(t.Fold)
	for i := range t.Rows {
		for len(t.Rows[i]) < cols {
			t.Rows[i] = append(t.Rows[i], "")
		}
	}
	if !slices.Contains(t.Fold, true) {
		return
	}
	// The folded table repeats the first column, so its rows can be read.
	keep, fold := []int{}, []int{0}
	for i, f := range t.Fold {
		if f {
			fold = append(fold, i)
		} else {
			keep = append(keep, i)
		}
	}
	pick := func(idx []int) table {
		var out table
		for _, i := range idx {
			out.Head = append(out.Head, t.Head[i])
			out.Right = append(out.Right, t.Right[i])
			out.Link = append(out.Link, t.Link[i])
			out.Fold = append(out.Fold, false)
		}
		for _, r := range t.Rows {
			var row []string
			for _, i := range idx {
				row = append(row, r[i])
			}
			out.Rows = append(out.Rows, row)
		}
		return out
	}
	more := pick(fold)
	more.Caption = "More columns: " + strings.Join(more.Head[1:], ", ") + "."
	main := pick(keep)
	main.Caption, main.Notes, main.More = t.Caption, t.Notes, &more
	*t = main
}

// linkText names a URL by its host, or gives the text back when it is not
// a URL.
func linkText(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return s
	}
	return strings.TrimPrefix(u.Host, "www.")
}

func runLabel(r *analyze.RunAnalysis) string {
	if r.Manifest != nil && r.Manifest.Label != "" {
		return r.Manifest.Label
	}
	return filepath.Base(r.Dir)
}

// repeatTable shows a group of repeated runs: per level, the interval of
// p50 TTFT, p50 TPOT and throughput across the runs.
func repeatTable(rep *analyze.Report, g analyze.RepeatGroup) table {
	var names []string
	for _, i := range g.Runs {
		if i >= 0 && i < len(rep.Runs) {
			names = append(names, fmt.Sprintf("run %d (%s)", i+1, runLabel(&rep.Runs[i])))
		}
	}
	t := table{
		Caption: fmt.Sprintf("Repeated runs of one configuration (%s): %s. Intervals are across the runs.",
			strings.Join(strings.Fields(strings.ReplaceAll(g.Key, " | ", "; ")), " "), strings.Join(names, ", ")),
		Head:  []string{"Concurrency", "Runs", "TTFT p50", "TPOT p50", "Output tok/s"},
		Right: []bool{true, true, true, true, true},
	}
	iv := func(i *stats.Interval, f func(float64) string) string {
		if i == nil {
			return "–"
		}
		return fmt.Sprintf("%s (%s–%s)", f(i.Estimate), f(i.Low), f(i.High))
	}
	for _, l := range g.Levels {
		t.Rows = append(t.Rows, []string{integer(l.Concurrency), integer(l.Runs), iv(l.TTFTP50S, dur), iv(l.TPOTP50S, dur), iv(l.OutputTokPerS, sig)})
	}
	t.normalize()
	return t
}

// noSweep is the Missing text of every section that needs a sweep.
func noSweep(what string) string {
	return fmt.Sprintf(noSweepPrefix+", so there is no %s. Run headroom sweep against the server and report that run.", what)
}

const noSweepPrefix = "Not measured: this run has no load sweep"
