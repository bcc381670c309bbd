package render

import (
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/internal/texttest"
)

// The flagship H200 example: each run's details carry the energy per
// output token of the recorded power samples (pinned in analyze against a
// by-hand integration) in the per-level Pareto table, and the Pareto view
// with its frontier, never on page one; the HTML draws the Pareto chart from inlined
// ECharts, with no other host named.
func TestEnergyAndParetoInExampleReport(t *testing.T) {
	rep := demoReport(t, "h200")
	md, html := renderBoth(t, rep)
	text := string(md)
	details := inOrder(t, text, "## Run 1 details", "Energy per output token: what the GPUs drew over each level's measured window",
		"### Throughput per GPU against speed per user")[0]
	texttest.Contains(t, "report.md", text,
		"| Level | Tok/s per user | Output tok/s per GPU | Frontier | GPU J/token |",
		"| c=64 | 6.95 | 269 | yes | 1.92 |",                          // sweep-kv256 at c=64
		"| c=64 | 4.21 | 517 | 17.4 s, 4,672 output tokens | 8,975 |", // its folded columns: tok/s per concurrency, watts, window, joules
		"(NVML power samples, integrated)",
		"On the frontier: c=1, c=2, c=4, c=8, c=16, c=32, c=64; off it: c=128.",
		"NVIDIA H200",
	)
	if front := text[:details]; strings.Contains(front, "Energy per output token") || strings.Contains(front, "speed per user") {
		t.Error("energy or the Pareto view is on page one")
	}
	h := string(html)
	if !strings.Contains(h, `id="run1-pareto-chart"`) {
		t.Error("report.html has no Pareto chart")
	}
	if strings.Contains(h, "cdn.jsdelivr") || strings.Contains(h, "assets.pyecharts") {
		t.Error("report.html refers to a CDN")
	}
}

// A run with energy but no Pareto point (no level with a median TPOT) keeps
// its energy per output token, in a table of its own.
func TestEnergyWithoutParetoStandsAlone(t *testing.T) {
	rep := demoReport(t, "h200")
	for i := range rep.Runs {
		if rep.Runs[i].Sweep != nil {
			rep.Runs[i].Sweep.Pareto = nil
		}
	}
	md, _ := renderBoth(t, rep)
	text := string(md)
	inOrder(t, text, "## Run 1 details", "Energy per output token over each level's measured window")
	texttest.Contains(t, "report.md", text,
		"| Concurrency | Output tok/s | GPU J/token |",
		"| 64 | 269 | 1.92 |", // sweep-kv256 at c=64
		"(NVML power samples, integrated)",
	)
}
