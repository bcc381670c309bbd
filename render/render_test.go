package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	extast "github.com/yuin/goldmark/extension/ast"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"

	"github.com/headroom-llm/headroom/analyze"
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

// Every part is there, and a part without data says what is missing
// instead of vanishing: a report of two probes answers what it can on
// page one, says there is no sweep, and shows each probe once in the
// appendix.
func TestSectionsNeverVanish(t *testing.T) {
	rep := exampleReport(t, "h200-probe", "h200-probe")
	md, page := renderBoth(t, rep)
	p, err := buildPage(rep)
	if err != nil {
		t.Fatal(err)
	}
	var front, appendix []string
	for _, s := range p.Front.Sections {
		front = append(front, s.Title)
	}
	for _, s := range p.Appendix {
		appendix = append(appendix, s.Title)
	}
	for _, s := range p.allSections() {
		if s.Missing == "" && len(s.Facts)+len(s.Sentences)+len(s.Tables)+len(s.Charts)+len(s.Verdicts)+len(s.Notes) == 0 {
			t.Errorf("section %q is empty and does not say what is missing", s.Title)
		}
	}
	if want := []string{"The answer", "Where decode sits under the hardware ceiling"}; !slices.Equal(front, want) {
		t.Errorf("page one: %q, want %q", front, want)
	}
	probe := "Hardware ceiling (probe): H200 roofline (seed script 01)"
	if want := []string{probe, probe, "Run context", "Methodology and caveats", "Raw data"}; !slices.Equal(appendix, want) {
		t.Errorf("appendix: %q, want %q", appendix, want)
	}
	if len(p.Runs) != 0 || len(p.Across) != 0 {
		t.Errorf("a report of probes has %d run details and %d comparisons, want none", len(p.Runs), len(p.Across))
	}
	for _, title := range appendix[2:] {
		if c := strings.Count(string(md), "### "+title+"\n"); c != 1 {
			t.Errorf("report.md has %d headings %q, want one", c, title)
		}
		if c := strings.Count(string(page), "<h3>"+title+"</h3>"); c != 1 {
			t.Errorf("report.html has %d headings %q, want one", c, title)
		}
	}
	if !strings.Contains(strings.Join(parsePage(t, page).Text, "\n"), "There is no load sweep in this report") {
		t.Error("a report of probes should say the sweep is not measured")
	}
}

// report.md is valid Markdown: goldmark (GFM tables) finds every heading
// and every table, and no table fell apart into a paragraph of pipes.
func TestMarkdownParses(t *testing.T) {
	t.Run("probe", func(t *testing.T) {
		checkMarkdown(t, exampleReport(t, "h200-probe"), "### Hardware ceiling (probe)", 0)
	})
	t.Run("probe and sweep", func(t *testing.T) {
		checkMarkdown(t, sweepReport(t, sweepFixture{}, true), "## Run 2 details: synthetic vLLM sweep (test fixture)", 1)
	})
}

func checkMarkdown(t *testing.T, rep *analyze.Report, firstRun string, minLogBlocks int) {
	md, _ := renderBoth(t, rep)
	p, err := buildPage(rep)
	if err != nil {
		t.Fatal(err)
	}
	wantTables, wantLogBlocks := len(p.Repeats), 0
	for _, s := range p.allSections() {
		{
			for _, t := range s.Tables {
				wantTables++
				if t.More != nil {
					wantTables++
				}
			}
			for _, v := range s.Verdicts {
				for _, e := range v.Evidence {
					if len(e.Log) > 0 {
						wantLogBlocks++
					}
				}
			}
		}
	}
	doc := readMarkdown(t, md)
	headings, tables, logBlocks := doc.headings, doc.tables, doc.logBlocks
	if tables != wantTables {
		t.Errorf("goldmark found %d tables, the view has %d", tables, wantTables)
	}
	if logBlocks < minLogBlocks {
		t.Errorf("goldmark found %d log excerpts, want at least %d", logBlocks, minLogBlocks)
	}
	if logBlocks != wantLogBlocks {
		t.Errorf("goldmark found %d log excerpts, the view has %d", logBlocks, wantLogBlocks)
	}
	sections := len(p.allSections())
	if len(headings) < 1+len(p.Runs)+sections || headings[0] != "# headroom report" || !slices.Contains(headings, firstRun) {
		t.Errorf("headings: %q", headings)
	}
}

// markdownDoc is what goldmark reads in a rendered Markdown file.
type markdownDoc struct {
	headings  []string // "## Title"
	tables    int
	logBlocks int // text code blocks (log excerpts)
}

// readMarkdown parses md as GitHub Markdown; a table row whose cells do not
// match its head, a table left as a paragraph, or a log excerpt outside its
// evidence list item fails t.
func readMarkdown(t *testing.T, md []byte) markdownDoc {
	t.Helper()
	var d markdownDoc
	doc := goldmark.New(goldmark.WithExtensions(extension.Table)).Parser().Parse(text.NewReader(md))
	err := ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.Heading:
			d.headings = append(d.headings, strings.Repeat("#", n.Level)+" "+string(nodeText(n, md)))
		case *extast.Table:
			d.tables++
			head := n.FirstChild()
			cols := head.ChildCount()
			for row := head.NextSibling(); row != nil; row = row.NextSibling() {
				if row.ChildCount() != cols {
					t.Errorf("table row with %d cells under a head of %d", row.ChildCount(), cols)
				}
			}
		case *ast.FencedCodeBlock:
			if string(n.Language(md)) == "text" {
				d.logBlocks++
				if _, ok := n.Parent().(*ast.ListItem); !ok {
					t.Errorf("a log excerpt is not inside its evidence list item")
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
	return d
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
	t.Run("probe", func(t *testing.T) { checkLoadsNothing(t, exampleReport(t, "h200-probe")) })
	t.Run("probe and sweep", func(t *testing.T) { checkLoadsNothing(t, sweepReport(t, sweepFixture{}, true)) })
}

func checkLoadsNothing(t *testing.T, rep *analyze.Report) {
	_, page := renderBoth(t, rep)
	pd := parsePage(t, page)
	for _, l := range pd.Links {
		// In-page links, and links a reader may follow to a price's
		// source (a link loads nothing until clicked).
		if !strings.Contains(l, "=#") && !strings.HasPrefix(l, "a href=https://") {
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
	// Nothing that runs or styles the page names a URL: not the style, not
	// the page's script, not a chart option. (Inside the inlined ECharts,
	// URLs are XML namespace names and licence links; in the text, a price
	// table's source is a reference to read, not a load.)
	if !strings.Contains(string(page), templates.EChartsJS) {
		t.Fatal("report.html does not inline templates/echarts.min.js verbatim")
	}
	url := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	code := map[string]string{"style": pageCSS, "page script": pageJS}
	for id, opt := range pd.Charts {
		code["chart "+id] = string(opt)
	}
	for where, c := range code {
		if m := url.FindAllString(c, -1); len(m) > 0 {
			t.Errorf("the %s names URLs: %q", where, m)
		}
		for _, bad := range []string{"@import", "url(", "fetch(", "XMLHttpRequest", "import("} {
			if strings.Contains(c, bad) {
				t.Errorf("the %s contains %q", where, bad)
			}
		}
	}
	for _, bad := range []string{"<link", "<img", "<iframe", "<object", "<embed", "<base", "<meta http-equiv"} {
		if strings.Contains(strings.Replace(string(page), templates.EChartsJS, "", 1), bad) {
			t.Errorf("report.html contains %q", bad)
		}
	}
	if !strings.Contains(pageCSS, "@page") || !strings.Contains(pageJS, "echarts.init") {
		t.Error("the style or the page script was not found: the check above checked nothing")
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
// name, a server flag, the run label, a warning and a server-log line runs
// nothing in report.html and is not HTML in report.md.
func TestInputsAreEscaped(t *testing.T) {
	rep := sweepReport(t, sweepFixture{
		Model:    "model " + hostile,
		Flags:    []string{"--flag=" + hostile},
		Label:    "label " + hostile,
		LogExtra: " log " + hostile,
	}, false)
	rep.Runs[0].Warnings = append(rep.Runs[0].Warnings, "warning "+hostile)
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
	for _, where := range []string{"label ", "model ", "--flag=", "warning ", "log "} {
		if !strings.Contains(text, where+hostile) {
			t.Errorf("report.html does not show %q as text", where+hostile)
		}
	}

	out := renderMarkdownHTML(t, md)
	if strings.Contains(out, "<script") || strings.Contains(out, "<img") {
		t.Errorf("report.md renders input as HTML:\n%s", out)
	}
	for _, where := range []string{"label ", "model ", "--flag=", "warning ", "log "} {
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

// A probe on a throttled, busy or under-clocked GPU says so in the roofline
// section, in both formats.
func TestProbeStateNotes(t *testing.T) {
	rep := exampleReport(t, "h200-probe")
	rl := rep.Runs[0].Roofline
	rl.Throttled, rl.ClocksBelowBase, rl.Busy = true, true, true
	md, page := renderBoth(t, rep)
	for _, want := range []string{"The GPU throttled during the probe", "below its base clock during the probe", "Other processes were using the GPU during the probe"} {
		if !bytes.Contains(md, []byte(want)) || !bytes.Contains(page, []byte(want)) {
			t.Errorf("the report does not say %q", want)
		}
	}
}

// A context value that did not come from the manifest says where it came
// from, so the reader can check it.
func TestContextSourceShown(t *testing.T) {
	t.Parallel()
	r := analyze.RunAnalysis{Context: []analyze.ContextItem{
		{Key: analyze.CtxEngine, Value: "vllm"},
		{Key: analyze.CtxDType, Value: "bfloat16", Source: "server.log"},
	}}
	s := contextSection("ctx", &analyze.Report{Runs: []analyze.RunAnalysis{r}})
	if len(s.Tables) != 1 {
		t.Fatalf("%d tables", len(s.Tables))
	}
	rows := s.Tables[0].Rows
	if len(rows) != 2 || rows[0][1] != "vllm" || rows[1][1] != "bfloat16 (from server.log)" {
		t.Errorf("rows %q", rows)
	}
}
