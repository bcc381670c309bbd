package render

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/examples"
	"github.com/headroom-llm/headroom/internal/texttest"
	"github.com/headroom-llm/headroom/templates"
)

// These tests pin the defects a new user found in the report as a client
// deliverable (issue 16), each on the output a user sees: report.md, the
// text of report.html and its charts' options. They go through the public
// renderers only, so they run against any version of the package.

// demoOutputs renders the default demo once for the tests below.
func demoOutputs(t *testing.T) (md, text string, charts map[string]json.RawMessage) {
	t.Helper()
	m, page := renderBoth(t, defaultDemoReport(t))
	pd := parsePage(t, page)
	return string(m), strings.Join(pd.Text, "\n"), pd.Charts
}

// The two demo sweeps differ only in the KV cache size: the report says
// so, and what it changed.
func TestDemoTellsWhatDiffersAcrossRuns(t *testing.T) {
	md, _, _ := demoOutputs(t)
	texttest.Contains(t, "report.md", md,
		"--kv-blocks 768 instead of 256",
		"no longer hit: the KV-cache wall",
		"Peak sustained throughput: 254 tok/s",
		"no change beyond the noise",
	)
}

// A probe shared by the runs is shown once, and the run files are listed
// one row per table (41 server_log_lines parts per run were 41 rows).
func TestDemoShowsTheProbeOnceAndOneRowPerTable(t *testing.T) {
	md, _, _ := demoOutputs(t)
	if n := strings.Count(md, "### Hardware ceiling"); n != 1 {
		t.Errorf("report.md has %d probe sections, want 1", n)
	}
	if n := strings.Count(md, "part-00000.parquet"); n != 0 {
		t.Errorf("report.md lists %d Parquet part files, want none (one row per table)", n)
	}
	row := regexp.MustCompile(`(?m)^\| server\\_log\\_lines/ \|[^\n]*\| 41 \| 42 \| – \|$`)
	if !row.MatchString(md) {
		t.Errorf("report.md has no single row for server_log_lines with its files per run (41 and 42)")
	}
}

// A percentile resting on too few requests is said once per table, not
// once per level (seven near-identical lines per run).
func TestDemoSaysThinTailsOncePerTable(t *testing.T) {
	md, _, _ := demoOutputs(t)
	perLevel := regexp.MustCompile(`(?m)^Concurrency \d+: p`)
	if n := len(perLevel.FindAllString(md, -1)); n != 0 {
		t.Errorf("report.md has %d per-level sample-size lines, want none", n)
	}
	if n := strings.Count(md, "rests on too few requests"); n != 2 {
		t.Errorf("report.md says %d times that a percentile rests on too few requests, want once per latency table (2)", n)
	}
}

// Every run quotes the same model's API price, not the table's first row
// (a 70B price for an 8B run); a price from a secondary source says so;
// the cost card holds one unit.
func TestDemoCostQuotesTheSameModel(t *testing.T) {
	md, _, _ := demoOutputs(t)
	quoted := regexp.MustCompile(`(?m)^\| ([^|]+) \| [^|]+ \| [^|]*quoted[^|]* \|`)
	rows := quoted.FindAllStringSubmatch(md, -1)
	if len(rows) != 2 {
		t.Fatalf("report.md marks %d quoted API prices, want one per sweep (2)", len(rows))
	}
	for _, r := range rows {
		if !strings.Contains(r[1], "8B") || !strings.Contains(r[0], "same model") {
			t.Errorf("a sweep of an 8B model is quoted against %q", r[0])
		}
	}
	card := regexp.MustCompile(`(?m)^- \*\*Cost per million tokens[^*]*\*\* ([^(]*)\((.*)\)$`).FindStringSubmatch(md)
	if card == nil {
		t.Fatal("report.md has no cost card")
	}
	if strings.Count(card[1], "$") != 1 || strings.Contains(card[0], "output") && strings.Contains(card[0], "blended") {
		t.Errorf("the cost card mixes units: %q", card[0])
	}
	if !strings.Contains(card[2], "secondary source") {
		t.Errorf("the cost card quotes a price from a secondary source without saying so: %q", card[0])
	}
}

// No internal jargon or glitched sentence reaches a reader.
func TestDemoPlainWords(t *testing.T) {
	md, text, _ := demoOutputs(t)
	for _, out := range []string{md, text} {
		for _, bad := range []string{"seed's", "the seed", ".:", "Inconclusive (Inconclusive", "prices.yaml", "analyze/"} {
			if i := strings.Index(out, bad); i >= 0 {
				t.Errorf("the report says %q: …%s…", bad, out[max(0, i-60):min(len(out), i+60)])
			}
		}
	}
}

// chartOption is the part of an ECharts option the checks below read.
type chartOption struct {
	XAxis []struct {
		Type     string   `json:"type"`
		Min      *float64 `json:"min"`
		Max      *float64 `json:"max"`
		LogBase  float64  `json:"logBase"`
		AxisName string   `json:"name"`
	} `json:"xAxis"`
	YAxis []struct {
		Type string   `json:"type"`
		Min  *float64 `json:"min"`
	} `json:"yAxis"`
	Series []struct {
		Name   string            `json:"name"`
		Type   string            `json:"type"`
		Symbol string            `json:"symbol"`
		Data   []json.RawMessage `json:"data"`
	} `json:"series"`
}

func decodeOption(t *testing.T, id string, raw json.RawMessage) chartOption {
	t.Helper()
	var o chartOption
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatalf("chart %s: %v", id, err)
	}
	return o
}

// pointX is the x of a data point given as [x, y] or {"value": [x, y]}.
func pointX(raw json.RawMessage) (x float64, symbol string, ok bool) {
	var pair []float64
	if json.Unmarshal(raw, &pair) == nil && len(pair) == 2 {
		return pair[0], "", true
	}
	var item struct {
		Value  []float64 `json:"value"`
		Symbol string    `json:"symbol"`
	}
	if json.Unmarshal(raw, &item) == nil && len(item.Value) == 2 {
		return item.Value[0], item.Symbol, true
	}
	return 0, "", false
}

// The charts' options: a legend shows each series' own symbol (decode was
// drawn as diamonds under a circle in the legend); axes start at the data
// (the roofline began at 0.1 with empty space, telemetry at −30 s); TTFT,
// which spans more than 10×, is drawn on a log axis; dense telemetry is
// thinned for drawing.
func TestDemoChartOptions(t *testing.T) {
	_, _, charts := demoOutputs(t)
	for id, raw := range charts {
		o := decodeOption(t, id, raw)
		minX := 0.0
		first := true
		for _, s := range o.Series {
			for _, d := range s.Data {
				x, sym, ok := pointX(d)
				if !ok {
					continue
				}
				if sym != "" && sym != s.Symbol {
					t.Errorf("chart %s: series %q draws %q points but its legend shows %q", id, s.Name, sym, orText(s.Symbol, "circle"))
				}
				if first || x < minX {
					minX, first = x, false
				}
			}
			if strings.Contains(id, "timeline") && len(s.Data) > 500 {
				t.Errorf("chart %s: series %q draws %d points; dense series are thinned", id, s.Name, len(s.Data))
			}
		}
		if len(o.XAxis) == 0 || first {
			continue
		}
		ax := o.XAxis[0]
		if ax.Min == nil {
			if ax.Type == "log" || strings.Contains(id, "timeline") {
				t.Errorf("chart %s: the x axis does not start at the data (no min; data from %v)", id, minX)
			}
			continue
		}
		if *ax.Min > minX || (ax.Type == "log" && *ax.Min < minX/2) || (ax.Type != "log" && *ax.Min < 0) {
			t.Errorf("chart %s: the x axis starts at %v, the data at %v", id, *ax.Min, minX)
		}
		if strings.HasSuffix(id, "-ttft") && (len(o.YAxis) == 0 || o.YAxis[0].Type != "log") {
			t.Errorf("chart %s: TTFT spans more than 10× but its axis is not logarithmic", id)
		}
	}
}

// The print style sheet keeps a table's head with its rows, cards and
// charts whole, headings with what follows, and page one on its own
// sheets.
func TestPrintRules(t *testing.T) {
	css, err := templates.FS.ReadFile("report.css")
	if err != nil {
		t.Fatal(err)
	}
	print := string(css)[strings.Index(string(css), "@media print"):]
	squash := func(s string) string { return strings.Join(strings.Fields(s), " ") }
	texttest.Contains(t, "report.css", squash(string(css)),
		"thead { display: table-header-group; }",
		"section.front { break-after: page;",
		"h2, h3, h4, caption, .read, figcaption { break-after: avoid;",
		"tr { break-inside: avoid;",
	)
	for _, box := range []string{"dl.facts .fact {", "figure.chart-box {", ".verdict {"} {
		i := strings.Index(string(css), box)
		if i < 0 || !strings.Contains(string(css)[i:i+strings.Index(string(css)[i:], "}")], "break-inside: avoid") {
			t.Errorf("report.css does not keep %q whole on a sheet", box)
		}
	}
	if !strings.Contains(print, "break-after: page") {
		t.Error("the print rules do not put page one alone on its sheets")
	}
}

// An open-loop sweep's latency table shows what is needed and folds the
// rest (it had 17 columns and overflowed its page).
func TestOpenLoopLatencyTableFolds(t *testing.T) {
	md, _ := renderBoth(t, sweepReport(t, sweepFixture{OpenLoop: true}, false))
	head := regexp.MustCompile(`(?m)^\| Rate \(req/s\) \| TTFT p50[^\n]*$`).FindString(string(md))
	if head == "" {
		t.Fatal("report.md has no latency table")
	}
	if cols := strings.Count(head, "|") - 1; cols > 8 {
		t.Errorf("the open-loop latency table has %d columns: %s", cols, head)
	}
}

// A CPU-only run is priced per host hour, not as one GPU.
func TestCPUOnlyRunPricedPerHostHour(t *testing.T) {
	t.Chdir(t.TempDir())
	const name = "sweep-testengine"
	if _, _, err := examples.Extract(name, name); err != nil {
		t.Fatal(err)
	}
	prices, _, err := analyze.LoadPrices("")
	if err != nil {
		t.Fatal(err)
	}
	set := analyze.Default()
	set.Cost = analyze.CostSettings{GPUHourUSD: 2, Utilization: 1, Prices: prices}
	md, _ := renderBoth(t, analyzeDirs(t, []string{name}, set))
	if strings.Contains(string(md), "1 × $2.00 per GPU-hour") || !strings.Contains(string(md), "--host-hour-usd") {
		t.Errorf("a CPU-only run given a GPU price is priced as a GPU, or not told to give a host price")
	}
	set.Cost = analyze.CostSettings{HostHourUSD: 0.5, Utilization: 1, Prices: prices}
	md, _ = renderBoth(t, analyzeDirs(t, []string{name}, set))
	if !strings.Contains(string(md), "the host is priced by the hour: $0.50") {
		t.Errorf("a CPU-only run given a host price does not say it is priced per host hour")
	}
}
