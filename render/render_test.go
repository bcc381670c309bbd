package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/examples"
	"github.com/headroom-llm/headroom/rundir"
	"github.com/headroom-llm/headroom/templates"
)

// The demo's report, as a reader gets it: the Markdown and the HTML's
// text and chart data against golden files.
func TestGoldenProbeReport(t *testing.T) {
	md, page := renderBoth(t, exampleReport(t, "h200-probe"))
	golden(t, "h200-probe.md", md)
	pd := parsePage(t, page)
	golden(t, "h200-probe.html.txt", goldenPageData(t, pd, chartOrder(page)))
	if len(pd.Charts) != 1 {
		t.Errorf("a probe-only run should have one chart (the roofline), got %d", len(pd.Charts))
	}
}

// Every section is there for every run, and a section without data says
// what is missing instead of vanishing.
func TestSectionsNeverVanish(t *testing.T) {
	rep := exampleReport(t, "h200-probe", "h200-probe")
	md, page := renderBoth(t, rep)
	p, err := buildPage(rep)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Headline", "The throughput curve in four sentences", "Throughput, TPOT and TTFT against concurrency",
		"Hardware ceiling (roofline)", "Goodput under the SLO", "Diagnosis: which wall was hit", "KV cache and queue over time",
		"GPU telemetry", "Cost per million tokens", "Run context", "Methodology and caveats", "Raw data"}
	for _, run := range p.Runs {
		var got []string
		for _, s := range run.Sections {
			got = append(got, s.Title)
			if s.Missing == "" && len(s.Facts)+len(s.Sentences)+len(s.Tables)+len(s.Charts)+len(s.Verdicts)+len(s.Files)+len(s.Notes) == 0 {
				t.Errorf("run %d: section %q is empty and does not say what is missing", run.Number, s.Title)
			}
		}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("run %d sections:\n got %q\nwant %q", run.Number, got, want)
		}
	}
	for _, title := range want {
		if c := strings.Count(string(md), "### "+title+"\n"); c != 2 {
			t.Errorf("report.md has %d headings %q, want one per run (2)", c, title)
		}
		if c := strings.Count(string(page), "<h3>"+title+"</h3>"); c != 2 {
			t.Errorf("report.html has %d headings %q, want one per run (2)", c, title)
		}
	}
	if !strings.Contains(strings.Join(parsePage(t, page).Text, "\n"), "Not measured: this run has no load sweep") {
		t.Error("a probe-only run should say the sweep sections are not measured")
	}
}

// report.md is valid Markdown: goldmark (GFM tables) finds every heading
// and every table, and no table fell apart into a paragraph of pipes.
func TestMarkdownParses(t *testing.T) {
	rep := exampleReport(t, "h200-probe")
	md, _ := renderBoth(t, rep)
	p, err := buildPage(rep)
	if err != nil {
		t.Fatal(err)
	}
	wantTables := 0
	for _, s := range p.Runs[0].Sections {
		wantTables += len(s.Tables)
		if len(s.Files) > 0 {
			wantTables++
		}
	}
	doc := goldmark.New(goldmark.WithExtensions(extension.Table)).Parser().Parse(text.NewReader(md))
	var headings []string
	tables := 0
	err = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			headings = append(headings, strings.Repeat("#", n.Level)+" "+string(nodeText(n, md)))
		case *extast.Table:
			tables++
			head := n.FirstChild()
			cols := head.ChildCount()
			for row := head.NextSibling(); row != nil; row = row.NextSibling() {
				if row.ChildCount() != cols {
					t.Errorf("table row with %d cells under a head of %d", row.ChildCount(), cols)
				}
			}
		case *ast.Paragraph:
			if strings.HasPrefix(strings.TrimSpace(string(nodeText(n, md))), "|") {
				t.Errorf("a table did not parse: %q", nodeText(n, md))
			}
		}
		return ast.WalkContinue, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if tables != wantTables {
		t.Errorf("goldmark found %d tables, the view has %d", tables, wantTables)
	}
	if len(headings) < 14 || headings[0] != "# headroom report" || headings[1] != "## Run 1: H200 roofline (seed script 01)" {
		t.Errorf("headings: %q", headings)
	}
}

func nodeText(n ast.Node, src []byte) []byte {
	var b bytes.Buffer
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if t, ok := c.(*ast.Text); ok && entering {
			b.Write(t.Segment.Value(src))
			if t.SoftLineBreak() {
				b.WriteByte(' ')
			}
		}
		return ast.WalkContinue, nil
	})
	return b.Bytes()
}

// report.html opens on a plane: no attribute, style or script refers to
// another host, and ECharts is inlined byte for byte.
func TestHTMLLoadsNothing(t *testing.T) {
	_, page := renderBoth(t, exampleReport(t, "h200-probe"))
	pd := parsePage(t, page)
	for _, l := range pd.Links {
		if !strings.Contains(l, "=#") {
			t.Errorf("report.html refers to a resource: %s", l)
		}
	}
	if len(pd.Links) == 0 {
		t.Error("no in-page links found: the parser missed the navigation")
	}
	inline, data := 0, 0
	for _, s := range pd.Scripts {
		switch s {
		case "inline":
			inline++
		case "application/json":
			data++
		default:
			t.Errorf("unexpected script type %q", s)
		}
	}
	if inline != 2 || data != len(pd.Charts) {
		t.Errorf("scripts: %d inline (want 2: ECharts and the page's), %d JSON (want one per chart, %d)", inline, data, len(pd.Charts))
	}
	// Outside the inlined ECharts (whose URLs are XML namespace names and
	// licence links), nothing may name an http(s) URL, and the style may
	// not import or url() anything.
	rest := strings.Replace(string(page), templates.EChartsJS, "", 1)
	if len(rest) == len(page) {
		t.Fatal("report.html does not inline templates/echarts.min.js verbatim")
	}
	if m := regexp.MustCompile(`(?i)https?://[^\s"'<>)]*`).FindAllString(rest, -1); len(m) > 0 {
		t.Errorf("report.html names URLs: %q", m)
	}
	for _, bad := range []string{"@import", "url(", "<link", "<img", "<iframe", "<object", "<embed", "fetch(", "XMLHttpRequest", "//go-echarts"} {
		if strings.Contains(rest, bad) {
			t.Errorf("report.html contains %q", bad)
		}
	}
}

// The committed echarts.min.js is the one templates/README.md names.
func TestEChartsAsset(t *testing.T) {
	sum := sha256.Sum256([]byte(templates.EChartsJS))
	const want = "bf4a223524e40b77c304bec67e1222cf551f14880cf42c69dc046558e11c07b1"
	if got := hex.EncodeToString(sum[:]); got != want {
		t.Errorf("templates/echarts.min.js sha256 %s, want %s: update templates/README.md when upgrading", got, want)
	}
	if !strings.Contains(templates.EChartsJS, `version="`+templates.EChartsVersion+`"`) {
		t.Errorf("echarts.min.js is not version %s", templates.EChartsVersion)
	}
	readme, err := os.ReadFile("../templates/README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), want) || !strings.Contains(string(readme), "echarts@"+templates.EChartsVersion) {
		t.Error("templates/README.md does not name the version and checksum of echarts.min.js")
	}
}

// hostile is a string an attacker could put in any input.
const hostile = `<script>alert("x")</script><img src=x onerror=alert(1)>`

// Every string from the inputs is shown as text: a <script> in the model
// name, a server flag, the run label, a warning and a log line runs nothing
// in report.html and is not HTML in report.md.
func TestInputsAreEscaped(t *testing.T) {
	t.Chdir(t.TempDir())
	if _, err := examples.Extract("h200-probe", "run"); err != nil {
		t.Fatal(err)
	}
	m, err := rundir.ReadManifest("run")
	if err != nil {
		t.Fatal(err)
	}
	m.Label = "label " + hostile
	m.Engine = &rundir.Engine{Name: "vllm", Model: "model " + hostile, Flags: []string{"--flag=" + hostile}, Version: "1"}
	m.Warnings = append(m.Warnings, "warning "+hostile)
	m.Notes = append(m.Notes, "log line 12: "+hostile)
	if err := rundir.WriteManifest("run", m); err != nil {
		t.Fatal(err)
	}
	r, err := analyze.Load("run")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analyze.Analyze([]*analyze.Run{r}, analyze.Options{Now: fixedNow})
	if err != nil {
		t.Fatal(err)
	}
	md, page := renderBoth(t, rep)

	pd := parsePage(t, page)
	if n := len(pd.Scripts); n != 2+len(pd.Charts) {
		t.Errorf("report.html has %d script elements, want only its own %d", n, 2+len(pd.Charts))
	}
	for _, l := range pd.Links {
		if strings.Contains(l, "src=x") {
			t.Errorf("an input became an element: %s", l)
		}
	}
	text := strings.Join(pd.Text, "\n")
	for _, where := range []string{"label ", "model ", "--flag=", "warning ", "log line 12: "} {
		if !strings.Contains(text, where+hostile) {
			t.Errorf("report.html does not show %q as text", where+hostile)
		}
	}

	out := renderMarkdownHTML(t, md)
	if strings.Contains(out, "<script") || strings.Contains(out, "<img") {
		t.Errorf("report.md renders input as HTML:\n%s", out)
	}
	for _, where := range []string{"model ", "--flag=", "warning ", "log line 12: "} {
		if !strings.Contains(out, where+`&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;`) {
			t.Errorf("report.md does not show %q as text", where+hostile)
		}
	}
}

// renderMarkdownHTML renders Markdown the way a permissive viewer would:
// raw HTML allowed, so escaping must come from report.md itself.
func renderMarkdownHTML(t *testing.T, md []byte) string {
	t.Helper()
	var b bytes.Buffer
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(gmhtml.WithUnsafe()))
	if err := gm.Convert(md, &b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestFilesFormats(t *testing.T) {
	rep := exampleReport(t, "h200-probe")
	for _, c := range []struct {
		format string
		want   []string
	}{{"md", []string{"report.md"}}, {"html", []string{"report.html"}}, {"both", []string{"report.md", "report.html"}}} {
		dir := t.TempDir()
		paths, err := Files(dir, rep, c.format)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range paths {
			got = append(got, filepath.Base(p))
		}
		if strings.Join(got, ",") != strings.Join(c.want, ",") {
			t.Errorf("--format %s wrote %v, want %v", c.format, got, c.want)
		}
	}
}
