package render

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/analyze/compare"
	"github.com/headroom-llm/headroom/examples"
	"github.com/headroom-llm/headroom/internal/texttest"
	"github.com/headroom-llm/headroom/rundir"
)

// comparison compares the bundled H200 probe with two sweeps written from
// the synthetic fixture, labelled as two engine configurations, the way
// `headroom compare h200-probe before after --slo … --gpu-hour-usd …
// --fail-if …` does.
func comparison(t *testing.T, before, after sweepFixture) *compare.Comparison {
	t.Helper()
	t.Chdir(t.TempDir())
	if _, _, err := examples.Extract("h200-probe", "h200-probe"); err != nil {
		t.Fatal(err)
	}
	writeSweepFixture(t, "before", before)
	writeSweepFixture(t, "after", after)
	slowerFirstToken(t, "after", 1.3)
	runs, err := compare.LoadAll(context.Background(), []string{"before", "after", "h200-probe"})
	if err != nil {
		t.Fatal(err)
	}
	opts := compare.DefaultOptions()
	opts.Settings.Now = fixedNow
	if opts.Settings.SLO, err = analyze.ParseSLO("ttft_p99=300ms,tpot_p99=25ms"); err != nil {
		t.Fatal(err)
	}
	prices, err := analyze.BuiltinPrices()
	if err != nil {
		t.Fatal(err)
	}
	opts.Settings.Cost.GPUHourUSD, opts.Settings.Cost.KWhUSD, opts.Settings.Cost.Prices = 3.5, 0.15, prices
	if opts.Rules, err = compare.ParseRules("throughput<-5%,ttft_p99>+10%"); err != nil {
		t.Fatal(err)
	}
	c, err := compare.Compare(context.Background(), runs, opts)
	if err != nil {
		t.Fatal(err)
	}
	c.HeadroomVersion = "test"
	return c
}

// slowerFirstToken rewrites a run's requests so every TTFT is factor times
// longer (first token and end move later by the same amount), the effect
// of a slower prefill.
func slowerFirstToken(t *testing.T, dir string, factor float64) {
	t.Helper()
	reqs, err := rundir.ReadTable[rundir.RequestRow](dir, rundir.TableRequests)
	if err != nil {
		t.Fatal(err)
	}
	for i := range reqs {
		if f := reqs[i].FirstTokenNS; f != nil {
			shift := int64(float64(*f-reqs[i].SendNS) * (factor - 1))
			*f += shift
			reqs[i].EndNS += shift
		}
	}
	if err := os.RemoveAll(filepath.Join(dir, rundir.TableRequests)); err != nil {
		t.Fatal(err)
	}
	if err := rundir.WriteTable(dir, rundir.TableRequests, reqs); err != nil {
		t.Fatal(err)
	}
}

func twoConfigs() (sweepFixture, sweepFixture) {
	return sweepFixture{Label: "prefix caching on"},
		sweepFixture{Label: "prefix caching off", Flags: []string{"--max-model-len", "4096", "--gpu-memory-utilization", "0.90"}}
}

func renderComparison(t *testing.T, c *compare.Comparison) (md, page []byte) {
	t.Helper()
	var m, h bytes.Buffer
	if err := CompareMarkdown(&m, c); err != nil {
		t.Fatalf("markdown: %v", err)
	}
	if err := CompareHTML(&h, c); err != nil {
		t.Fatalf("html: %v", err)
	}
	return m.Bytes(), h.Bytes()
}

func TestGoldenComparison(t *testing.T) {
	before, after := twoConfigs()
	c := comparison(t, before, after)
	md, page := renderComparison(t, c)
	golden(t, "compare.md", md)
	pd := parsePage(t, page)
	golden(t, "compare.html.txt", goldenPageData(t, pd, chartOrder(page)))
	text := strings.Join(pd.Text, "\n")
	texttest.Contains(t, "compare.html", text,
		"engine.flag --enable-prefix-caching", // the one flag that differs
		"prefix caching off against the baseline prefix caching on",
		"Mann-Whitney U",
		"The gate failed.",
		"FAIL ttft_p99>+10% [prefix caching off vs prefix caching on]",
	)
	if n := len(chartOrder(page)); n != 5 {
		t.Errorf("%d charts, want 5 (three overlaid panels, the rooflines, the Pareto view)", n)
	}
}

func TestComparisonMarkdownParses(t *testing.T) {
	before, after := twoConfigs()
	c := comparison(t, before, after)
	md, _ := renderComparison(t, c)
	p, err := buildComparePage(c)
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, s := range p.Sections {
		want += len(s.Tables)
	}
	doc := readMarkdown(t, md)
	tables, headings := doc.tables, doc.headings
	if tables != want || want < 8 {
		t.Errorf("goldmark found %d tables, the view has %d", tables, want)
	}
	if len(headings) != 10 || headings[0] != "# headroom comparison" || headings[9] != "## How the comparison was made" {
		t.Errorf("headings %q", headings)
	}
}

// Labels, flags and models come from users and other tools: in the page
// they stay text.
func TestComparisonEscapesInputs(t *testing.T) {
	hostile := `<script>alert("x")</script>`
	before, after := twoConfigs()
	after.Label = hostile
	after.Flags = append(after.Flags, "--served-model-name", hostile)
	c := comparison(t, before, after)
	md, page := renderComparison(t, c)
	if bytes.Contains(page, []byte(hostile)) {
		t.Error("compare.html holds the hostile string unescaped")
	}
	if !bytes.Contains(page, []byte(`&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;`)) {
		t.Error("compare.html lacks the escaped label")
	}
	if strings.Contains(renderMarkdownHTML(t, md), "<script>alert") {
		t.Error("compare.md renders the hostile string as HTML")
	}
}

// The comparison draws in a real browser: four charts, a quiet console,
// no request for anything.
func TestBrowserRendersComparison(t *testing.T) {
	before, after := twoConfigs()
	c := comparison(t, before, after)
	dir := t.TempDir()
	if _, err := CompareFiles(dir, c, "html"); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "compare.html")
	res := openInBrowser(t, file)
	for _, p := range browserProblems(res, file) {
		t.Error(p)
	}
	if len(res.Boxes) != 5 {
		t.Errorf("found %d chart elements, want 5", len(res.Boxes))
	}
}

// The bundled H200 runs compared: the headline table names the wall each
// sweep's own report names (the sweeps carry labels in their manifests),
// the runs table their duration, and the two probes (both in a folder named "probe") are told apart by their parent.
func TestComparisonWallHitAndLabels(t *testing.T) {
	var dirs []string
	for _, r := range []string{"h200/probe", "h200-1b/probe", "h200/sweep-kv256", "h200-1b/sweep-kv256"} {
		dirs = append(dirs, filepath.Join("..", "examples", "runs", filepath.FromSlash(r)))
	}
	runs, err := compare.LoadAll(context.Background(), dirs)
	if err != nil {
		t.Fatal(err)
	}
	opts := compare.DefaultOptions()
	opts.Settings.Now = fixedNow
	c, err := compare.Compare(context.Background(), runs, opts)
	if err != nil {
		t.Fatal(err)
	}
	p, err := buildComparePage(c)
	if err != nil {
		t.Fatal(err)
	}
	cells := func(id string, col string) map[string]string {
		for _, s := range p.Sections {
			if s.ID != id {
				continue
			}
			tb := s.Tables[0]
			runCol, at := -1, -1
			for i, h := range tb.Head {
				if h == "Run" {
					runCol = i
				}
				if h == col {
					at = i
				}
			}
			if runCol < 0 || at < 0 {
				t.Fatalf("section %s: head %q lacks Run or %q", id, tb.Head, col)
			}
			out := map[string]string{}
			for _, row := range tb.Rows {
				out[row[runCol]] = row[at]
			}
			return out
		}
		t.Fatalf("no section %s", id)
		return nil
	}
	wall := cells("headline", "Wall hit")
	for run, want := range map[string]string{
		// Compared runs are analyzed one by one, without the probe that
		// places the 8B knee against the ridge.
		"H200 8b-shape, KV 256 blocks": "compute wall at c=16; then KV-cache wall at c=64",
		"H200 1b-shape, KV 256 blocks": "engine overhead at c=16; then KV-cache wall at c=64",
		"h200/probe":                   "–",
		"h200-1b/probe":                "–",
	} {
		if got, ok := wall[run]; !ok || got != want {
			t.Errorf("Wall hit of %s: %q (listed %v), want %q", run, got, ok, want)
		}
	}
	for run, d := range cells("runs", "Duration") {
		if d == "" || d == "–" {
			t.Errorf("Duration of %s: %q", run, d)
		}
	}
}
