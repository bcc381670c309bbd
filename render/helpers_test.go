package render

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/examples"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from the current output")

// fixedNow is the report's clock in tests, so output is deterministic.
var fixedNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// exampleReport analyzes a bundled example run the way `headroom report`
// does. The run is extracted into a temporary directory that becomes the
// working directory, so the report names it by a stable relative path.
func exampleReport(t *testing.T, names ...string) *analyze.Report {
	t.Helper()
	t.Chdir(t.TempDir())
	for _, name := range names {
		if _, _, err := examples.Extract(name, name); err != nil {
			t.Fatal(err)
		}
	}
	return analyzeDirs(t, names, analyze.Default())
}

// analyzeDirs loads the runs in dirs and analyzes them with set, at the
// tests' fixed time and version.
func analyzeDirs(t *testing.T, dirs []string, set analyze.Settings) *analyze.Report {
	t.Helper()
	var runs []*analyze.Run
	for _, d := range dirs {
		r, err := analyze.Load(d)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, r)
	}
	set.Now = fixedNow
	rep, err := analyze.Analyze(runs, set)
	if err != nil {
		t.Fatal(err)
	}
	rep.HeadroomVersion = "test"
	return rep
}

func renderBoth(t *testing.T, rep *analyze.Report) (md, page []byte) {
	t.Helper()
	var m, h bytes.Buffer
	if err := Markdown(&m, rep); err != nil {
		t.Fatalf("markdown: %v", err)
	}
	if err := HTML(&h, rep); err != nil {
		t.Fatalf("html: %v", err)
	}
	return m.Bytes(), h.Bytes()
}

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join(testdataDir, name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./render -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output; if the change is intended, run go test ./render -update and review the diff.\n%s",
			path, firstDiff(string(want), string(got)))
	}
}

// testdataDir is absolute: tests change the working directory.
var testdataDir = func() string {
	wd, err := os.Getwd()
	if err != nil {
		panic(err)
	}
	return filepath.Join(wd, "testdata")
}()

func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "first difference at line " + strconv.Itoa(i+1) + ":\n  want: " + w + "\n  got:  " + g
		}
	}
	return "(no line differs)"
}

// pageData is what a reader sees of report.html and what its charts show:
// the visible text, one line per block, and every chart's option, pretty
// printed. It leaves out the inlined JavaScript and CSS, which are checked
// by other tests, so the golden file shows changes to content only.
type pageData struct {
	Text    []string
	Charts  map[string]json.RawMessage
	Scripts []string // the kind of each <script>: "inline" or its type
	Links   []string // every href, src and similar attribute
}

// parsePage extracts the pageData of an HTML document.
func parsePage(t *testing.T, doc []byte) pageData {
	t.Helper()
	root, err := html.Parse(bytes.NewReader(doc))
	if err != nil {
		t.Fatalf("parse report.html: %v", err)
	}
	pd := pageData{Charts: map[string]json.RawMessage{}}
	var line strings.Builder
	flush := func() {
		if s := strings.Join(strings.Fields(line.String()), " "); s != "" {
			pd.Text = append(pd.Text, s)
		}
		line.Reset()
	}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			for _, a := range n.Attr {
				switch a.Key {
				case "href", "src", "srcset", "action", "formaction", "poster", "data", "background", "xlink:href", "cite", "manifest":
					pd.Links = append(pd.Links, n.Data+" "+a.Key+"="+a.Val)
				}
			}
			switch n.Data {
			case "script":
				typ, chartID := "inline", ""
				for _, a := range n.Attr {
					if a.Key == "type" {
						typ = a.Val
					}
					if a.Key == "data-chart" {
						chartID = a.Val
					}
				}
				pd.Scripts = append(pd.Scripts, typ)
				if chartID != "" && n.FirstChild != nil {
					var v json.RawMessage
					if err := json.Unmarshal([]byte(n.FirstChild.Data), &v); err != nil {
						t.Errorf("chart %s: option is not JSON: %v", chartID, err)
					}
					pd.Charts[chartID] = v
				}
				return
			case "style":
				return
			case "p", "li", "h1", "h2", "h3", "h4", "tr", "caption", "figcaption", "dt", "dd", "pre", "div", "section", "table", "ul", "dl", "header", "footer", "main", "nav":
				flush()
				defer flush()
			case "td", "th":
				line.WriteString(" | ")
			case "br":
				flush()
			}
		}
		if n.Type == html.TextNode {
			line.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(root)
	flush()
	return pd
}

// goldenPageData is pageData as a stable text: the page's text, then each
// chart's option pretty-printed, in page order.
func goldenPageData(t *testing.T, pd pageData, order []string) []byte {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("== text\n")
	for _, l := range pd.Text {
		b.WriteString(l + "\n")
	}
	for _, id := range order {
		b.WriteString("\n== chart " + id + "\n")
		var out bytes.Buffer
		if err := json.Indent(&out, pd.Charts[id], "", "  "); err != nil {
			t.Fatal(err)
		}
		// One line per [x, y] point keeps the file readable.
		compact := pointPair.ReplaceAll(out.Bytes(), []byte("[$1, $2]"))
		b.Write(valueOnly.ReplaceAll(compact, []byte(`{"value": $1}`)))
		b.WriteString("\n")
	}
	return b.Bytes()
}

var pointPair = regexp.MustCompile(`\[\s*(-?[0-9][0-9.eE+-]*|"[^"\n]*")\s*,\s*(-?[0-9][0-9.eE+-]*)\s*\]`)

var valueOnly = regexp.MustCompile(`\{\s*"value": (\[[^\]\n]*\]|-?[0-9][0-9.eE+-]*)\s*\}`)

// inOrder is where each of marks first stands in the report text, and
// stops the test unless each stands there after the one before it.
func inOrder(t *testing.T, text string, marks ...string) []int {
	t.Helper()
	at := make([]int, len(marks))
	for i, m := range marks {
		at[i] = strings.Index(text, m)
		if at[i] < 0 || i > 0 && at[i] < at[i-1] {
			t.Fatalf("%q at %d, want it after %q (at %v)", m, at[i], marks[max(i-1, 0)], at[:i])
		}
	}
	return at
}

// chartOrder lists the chart ids in page order.
func chartOrder(doc []byte) []string {
	var ids []string
	rest := string(doc)
	const marker = `data-chart="`
	for {
		i := strings.Index(rest, marker)
		if i < 0 {
			return ids
		}
		rest = rest[i+len(marker):]
		ids = append(ids, rest[:strings.IndexByte(rest, '"')])
	}
}

// defaultDemoReport is what `headroom demo` reports: the default example's
// runs with the settings of its example.json.
func defaultDemoReport(t *testing.T) *analyze.Report { return demoReport(t, examples.Default) }

// demoReport is what `headroom demo --example name` reports: the example's
// runs with the settings of its example.json, per-run models and the run
// predicted from included.
func demoReport(t *testing.T, name string) *analyze.Report {
	t.Helper()
	t.Chdir(t.TempDir())
	dirs, spec, err := examples.Extract(name, "example")
	if err != nil {
		t.Fatal(err)
	}
	set := analyze.Default()
	if set.SLO, err = analyze.ParseSLO(spec.SLO); err != nil {
		t.Fatal(err)
	}
	if set.Model, err = analyze.ReadModelConfig(spec.ModelConfig); err != nil {
		t.Fatal(err)
	}
	for run, config := range spec.ModelConfigs {
		m, err := analyze.ReadModelConfig(config)
		if err != nil {
			t.Fatal(err)
		}
		if set.RunModels == nil {
			set.RunModels = map[string]*analyze.ModelSpec{}
		}
		set.RunModels[run] = m
	}
	set.PredictFrom = spec.PredictFrom
	prices, source, err := analyze.LoadPrices("")
	if err != nil {
		t.Fatal(err)
	}
	set.Cost = analyze.CostSettings{GPUPreset: spec.GPUPreset, KWhUSD: spec.KWhUSD, Utilization: 1, Prices: prices, PricesSource: source}
	return analyzeDirs(t, dirs, set)
}
