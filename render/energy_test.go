package render

import (
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/internal/texttest"
)

// The flagship H200 example: each run's details carry the energy per
// output token of the recorded power samples (pinned in analyze against a
// by-hand integration) among the per-level tables, and the Pareto view
// with its frontier, never on page one; the HTML draws the Pareto chart from inlined
// ECharts, with no other host named.
func TestEnergyAndParetoInExampleReport(t *testing.T) {
	rep := demoReport(t, "h200")
	md, html := renderBoth(t, rep)
	text := string(md)
	details := inOrder(t, text, "## Run 1 details", "Energy per output token over each level's measured window",
		"### Throughput per GPU against speed per user")[0]
	texttest.Contains(t, "report.md", text,
		"| Concurrency | GPU power (W) | GPU J/output token |",
		"| 64 | 517 | 1.92 |",                   // sweep-kv256 at c=64
		"| 64 | 269 | 17.4 s | 4,672 | 8,975 |", // its folded columns: tok/s, window, tokens, joules
		"Measured from NVML power samples, integrated",
		"| c=64 | 6.95 | 269 | yes |",
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
