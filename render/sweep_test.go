package render

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/examples"
	"github.com/headroom-llm/headroom/internal/texttest"
)

// llama8BConfig is the Hugging Face config.json of Llama 3.1 8B (the
// fields the roofline gap reads).
const llama8BConfig = `{
  "architectures": ["LlamaForCausalLM"], "model_type": "llama",
  "hidden_size": 4096, "intermediate_size": 14336, "num_attention_heads": 32,
  "num_hidden_layers": 32, "num_key_value_heads": 8, "vocab_size": 128256,
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "max_position_embeddings": 131072
}`

// sweepReport analyzes the synthetic sweep (and, with probe, the bundled
// H200 probe) with an SLO, a model description and GPU prices, the way
// `headroom report probe.run sweep.run --slo … --model-config … --gpu-hour-usd …` does.
func sweepReport(t *testing.T, fx sweepFixture, probe bool) *analyze.Report {
	t.Helper()
	t.Chdir(t.TempDir())
	var dirs []string
	if probe {
		if _, _, err := examples.Extract("h200-probe", "h200-probe"); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, "h200-probe")
	}
	writeSweepFixture(t, "sweep", fx)
	dirs = append(dirs, "sweep")
	set := analyze.Default()
	var err error
	if set.SLO, err = analyze.ParseSLO("ttft_p99=300ms,tpot_p99=25ms"); err != nil {
		t.Fatal(err)
	}
	if set.Model, err = analyze.ParseModelConfig([]byte(llama8BConfig)); err != nil {
		t.Fatal(err)
	}
	prices, err := analyze.BuiltinPrices()
	if err != nil {
		t.Fatal(err)
	}
	set.Cost.GPUHourUSD, set.Cost.KWhUSD, set.Cost.Prices, set.Cost.PricesSource = 3.5, 0.15, prices, "built in"
	return analyzeDirs(t, dirs, set)
}

// A probe and a sweep in one report: every section lights up, and both
// outputs match their golden files.
func TestGoldenSweepReport(t *testing.T) {
	rep := sweepReport(t, sweepFixture{}, true)
	md, page := renderBoth(t, rep)
	golden(t, "sweep.md", md)
	pd := parsePage(t, page)
	golden(t, "sweep.html.txt", goldenPageData(t, pd, chartOrder(page)))

	p, err := buildPage(rep)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p.allSections() {
		if s.Missing != "" {
			t.Errorf("section %q says %q, but the fixture has its data", s.Title, s.Missing)
		}
	}
	// Page one: the three panels and the roofline with decode; the
	// sweep's details: the KV cache and queue, the two telemetry charts
	// and the Pareto view.
	if n := len(chartOrder(page)); n != 3+1+3+1 {
		t.Errorf("charts: %d, want 8 (3 panels, roofline; timeline, 2 telemetry; Pareto)", n)
	}
	text := strings.Join(pd.Text, "\n")
	texttest.Contains(t, "report.html", text,
		"preempted by PreemptionMode.RECOMPUTE", // a quoted log line
		"KV-cache wall",
		"Llama-3.1-8B-Instruct",
		"--gpu-memory-utilization 0.90",
	)
}

// The sweep report draws in a real browser too: eight charts, a quiet
// console, no request.
func TestBrowserRendersSweepReport(t *testing.T) {
	rep := sweepReport(t, sweepFixture{}, true)
	res := checkInBrowser(t, rep)
	if len(res.Boxes) != 8 {
		t.Errorf("found %d chart elements, want 8", len(res.Boxes))
	}
}

// Two sweeps of one configuration: the report shows each run's sections
// and a table of intervals across the runs.
func TestRepeatedRuns(t *testing.T) {
	t.Chdir(t.TempDir())
	dirs := []string{"a", "b"}
	for _, dir := range dirs {
		writeSweepFixture(t, dir, sweepFixture{})
	}
	rep := analyzeDirs(t, dirs, analyze.Default())
	if len(rep.Repeats) != 1 {
		t.Fatalf("the analyzer found %d repeat groups in two identical sweeps, want 1", len(rep.Repeats))
	}
	md, page := renderBoth(t, rep)
	texttest.Contains(t, "report.md", string(md), "### Repeated runs", "## Run 1 details: ", "## Run 2 details: ", "| Concurrency | Runs | TTFT p50 | TPOT p50 | Output tok/s |")
	text := strings.Join(parsePage(t, page).Text, "\n")
	if !strings.Contains(text, "Repeated runs") || strings.Count(text, "Per level: throughput, latency, goodput, roofline gap, server") < 4 {
		t.Errorf("report.html lacks the repeats table or a run's sweep section")
	}
}

// An open-loop sweep is plotted and tabled by arrival rate, and its knees
// are named by rate.
func TestOpenLoopSweep(t *testing.T) {
	rep := sweepReport(t, sweepFixture{OpenLoop: true}, false)
	if rep.Runs[0].Sweep.Knees.Axis != analyze.AxisRate {
		t.Fatalf("the analyzer did not treat the sweep as open loop: axis %q", rep.Runs[0].Sweep.Knees.Axis)
	}
	md, page := renderBoth(t, rep)
	texttest.Contains(t, "report.md", string(md), "| Rate (req/s) | Concurrency cap |", "| Rate (req/s) | TTFT p50 (ms) |", " req/s")
	pd := parsePage(t, page)
	panels := 0
	for _, id := range chartOrder(page) {
		if strings.HasSuffix(id, "-throughput") || strings.HasSuffix(id, "-tpot") || strings.HasSuffix(id, "-ttft") {
			panels++
			if !strings.Contains(string(pd.Charts[id]), "Arrival rate (req/s") {
				t.Errorf("chart %s is not plotted against the arrival rate", id)
			}
		}
	}
	if panels != 3 {
		t.Errorf("found %d sweep panels, want 3", panels)
	}
	// The load to run at is a rate, said as one: never a concurrency in
	// req/s ("cap: 5.00 req/s" was the fifth failure).
	for _, line := range strings.Split(string(md), "\n") {
		if strings.Contains(line, "req/s") && strings.Contains(strings.ToLower(line), "concurrency cap:") {
			t.Errorf("a concurrency given as a rate: %q", line)
		}
	}
	op := rep.Runs[0].Sweep.Operating
	if op.At.Axis != analyze.AxisRate || !strings.Contains(string(md), "**Operating point:** "+sig(op.At.RateRPS)+" req/s") {
		t.Errorf("operating point %+v not stated as a rate", op)
	}
}

// Page one's answer says the wall with its single strongest evidence and
// the operating point, and cannot contradict the diagnosis (the demo's
// headline said "compute knee" and then "the bend is not the compute wall").
func TestDemoAnswerIsTheVerdict(t *testing.T) {
	t.Chdir(t.TempDir())
	dirs, spec, err := examples.Extract("h200", "h200")
	if err != nil {
		t.Fatal(err)
	}
	set := analyze.Default()
	set.SLO, _ = analyze.ParseSLO(spec.SLO)
	if set.Model, err = analyze.ReadModelConfig(spec.ModelConfig); err != nil {
		t.Fatal(err)
	}
	rep := analyzeDirs(t, dirs, set)
	h := rep.Headline
	answer := answerSentences(rep, &rep.Runs[0])
	wall := wallSentence(rep.Runs[0].Sweep.Diagnosis)
	if !slices.Contains(answer, wall) || strings.Count(wall, ". ") != 0 {
		t.Errorf("the answer %q lacks the wall in one sentence %q", answer, wall)
	}
	texttest.Contains(t, "the wall sentence", wall, "engine overhead", evidenceText(*h.Strongest), "then the KV-cache wall from c=64")
	all := strings.Join(answer, " ")
	if low := strings.ToLower(all); !strings.Contains(all, "Run it at up to c=16") || strings.Contains(low, "compute wall") || strings.Contains(low, "compute knee") {
		t.Errorf("the answer %q: want the operating point c=16 and no compute wall", all)
	}
}

// Levels that are not sustained are marked in the throughput table and
// with labelled triangles on the throughput chart, which still draws
// cleanly in a browser.
func TestUnsustainedLevelsMarked(t *testing.T) {
	rep := sweepReport(t, sweepFixture{}, false)
	levels := rep.Runs[0].Sweep.Levels
	levels[2].Sustained, levels[2].Errors, levels[2].ErrorFraction = false, 10, 0.25
	levels[2].ErrorsByClass = map[string]int{"http_error": 10}
	levels[3].Sustained, levels[3].Complete = false, false
	md, page := renderBoth(t, rep)
	for _, want := range []string{"| 4 (not sustained: 25% failed) |", "| 8 (incomplete) |"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	if !bytes.Contains(page, []byte(`"name":"not sustained: 25% failed"`)) || !bytes.Contains(page, []byte("Red triangles")) {
		t.Error("the throughput chart does not mark the level")
	}
	file := writeHTMLReport(t, rep)
	for _, p := range browserProblems(openInBrowser(t, file), file) {
		t.Error(p)
	}
}
