package render

import (
	"fmt"
	"html/template"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/stats"
)

// The view is the report model laid out for display: the same sections,
// facts, tables and sentences feed report.md and report.html, so the two
// say the same thing. Building it formats numbers and picks display scales;
// it computes nothing the analyzer did not.

// page is the whole report.
type page struct {
	Title          string
	Generated      string
	Version        string
	EChartsVersion string
	// Warnings concern the report as a whole.
	Warnings []string
	// Repeats are tables of runs of one configuration, with intervals
	// across them.
	Repeats []table
	Runs    []runView
}

// runView is everything shown about one run.
type runView struct {
	Anchor   string // HTML id prefix, unique per run
	Number   int
	Name     string
	Dir      string
	Warnings []string
	Sections []section
}

// section is one part of a run's report. A section whose data the run
// lacks is still shown, with Missing saying what is missing and how to get
// it, so a reader never wonders whether it was forgotten.
type section struct {
	ID    string // HTML id, unique in the page
	Title string
	// Read says in a sentence or two how to read the section.
	Read    string
	Missing string
	// Facts are labelled values shown as a short list (the headline).
	Facts []fact
	// Sentences are prose generated from the numbers.
	Sentences []string
	// Notes are remarks below the charts and tables.
	Notes []string
	// Charts are drawn in the HTML only; Markdown shows their Tables.
	Charts []chart
	// ChartRow puts the charts side by side (the three sweep panels).
	ChartRow bool
	Tables   []table
	Verdicts []verdict
	Files    []file
}

// fact is one labelled value. Missing facts say why in Value.
type fact struct {
	Label   string
	Value   string
	Note    string
	Missing bool
}

// table is a captioned table of preformatted cells.
type table struct {
	Caption string
	Head    []string
	// Right marks columns to right-align (numbers).
	Right []bool
	Rows  [][]string
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

// file is one raw-data file of a run.
type file struct {
	Path string
	What string
}

// chart is one ECharts chart: its element id, its caption and its option
// as JSON (built with go-echarts, escaped for a <script> element).
type chart struct {
	ID      string
	Caption string
	Class   string // "wide" or "panel": the size on the page
	Option  template.JS
}

// buildPage lays out the report model.
func buildPage(rep *analyze.Report) (*page, error) {
	p := &page{
		Title:          rep.Title,
		Generated:      stamp(rep.GeneratedAt),
		Version:        rep.HeadroomVersion,
		EChartsVersion: echartsVersion,
		Warnings:       sentences(rep.Warnings),
	}
	for _, g := range rep.Repeats {
		p.Repeats = append(p.Repeats, repeatTable(rep, g))
	}
	for i := range rep.Runs {
		rv, err := buildRun(rep, i)
		if err != nil {
			return nil, err
		}
		p.Runs = append(p.Runs, rv)
	}
	return p, nil
}

func buildRun(rep *analyze.Report, i int) (runView, error) {
	r := &rep.Runs[i]
	rv := runView{
		Anchor:   "run" + strconv.Itoa(i+1),
		Number:   i + 1,
		Name:     runLabel(r),
		Dir:      r.Dir,
		Warnings: r.Warnings,
	}
	id := func(s string) string { return rv.Anchor + "-" + s }
	sweep, err := sweepSection(id("sweep"), rep, r)
	if err != nil {
		return rv, err
	}
	roof, err := rooflineSection(id("roofline"), rep, r)
	if err != nil {
		return rv, err
	}
	goodput, err := goodputSection(id("goodput"), r)
	if err != nil {
		return rv, err
	}
	timeline, err := timelineSection(id("timeline"), r)
	if err != nil {
		return rv, err
	}
	telemetry, err := telemetrySection(id("telemetry"), r)
	if err != nil {
		return rv, err
	}
	rv.Sections = []section{
		headlineSection(id("headline"), rep, r),
		summarySection(id("summary"), r),
		sweep,
		roof,
		goodput,
		diagnosisSection(id("diagnosis"), r),
		timeline,
		telemetry,
		costSection(id("cost"), r),
		contextSection(id("context"), r),
		methodologySection(id("methodology"), rep, r),
		filesSection(id("files"), r),
	}
	if pred, ok := predictionSection(id("prediction"), rep, r); ok {
		// After the roofline gap, whose bound the prediction builds on.
		rv.Sections = append(rv.Sections[:4], append([]section{pred}, rv.Sections[4:]...)...)
	}
	// A probe run reported with sweeps keeps only what it measured, and
	// its headline points at the sweeps, rather than repeating that each
	// sweep section is missing and telling the reader to go and run one.
	if r.Sweep == nil {
		var others []string
		for j := range rep.Runs {
			if j != i && rep.Runs[j].Sweep != nil {
				others = append(others, fmt.Sprintf("run %d (%s)", j+1, runLabel(&rep.Runs[j])))
			}
		}
		if len(others) > 0 {
			kept := rv.Sections[:0]
			for _, sec := range rv.Sections {
				if !strings.HasPrefix(sec.Missing, noSweepPrefix) {
					kept = append(kept, sec)
				}
			}
			rv.Sections = kept
			rv.Warnings = append(rv.Warnings, "This run has no load sweep: its ceiling is joined with the sweeps of "+strings.Join(others, ", ")+" of this report.")
		}
	}
	for i := range rv.Sections {
		for j := range rv.Sections[i].Tables {
			rv.Sections[i].Tables[j].normalize()
		}
	}
	return rv, nil
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
// so the templates can index them freely.
func (t *table) normalize() {
	cols := len(t.Head)
	for _, r := range t.Rows {
		cols = max(cols, len(r))
	}
	for len(t.Head) < cols {
		t.Head = append(t.Head, "")
	}
	for len(t.Right) < cols {
		t.Right = append(t.Right, false)
	}
	for i := range t.Rows {
		for len(t.Rows[i]) < cols {
			t.Rows[i] = append(t.Rows[i], "")
		}
	}
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
