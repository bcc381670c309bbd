package render

import (
	"context"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// The llama.cpp example (f16 and q4_0 on the H200, the q4_0 run predicted
// from the f16 run): the silicon/engine split and the prediction are in the
// runs' details, never on page one; the probe's FP8 peak and the model's
// step floor are in the appendix.
func TestLlamacppExampleReport(t *testing.T) {
	rep := demoReport(t, "h200-llamacpp")
	md, _ := renderBoth(t, rep)
	text := string(md)
	inOrder(t, text, "## Run 1 details", "Whose gap: the silicon's", "## Run 2 details", "### Predicted against measured")
	// c=1 of the f16 run: 4.06 ms of measured GEMMs against the 3.53 ms bound.
	if !strings.Contains(text, "| 1 | 4.09 | 1.16 | 1.32 |") {
		t.Error("the f16 run's c=1 split row is not in the report")
	}
	// Judged only before the f16 run's wall (engine overhead from c=4).
	if !strings.Contains(text, "before run 1 (llama.cpp CUDA, 8B shape f16)'s wall (engine overhead from c=4") ||
		!strings.Contains(text, "2 levels, the largest error is 18.5%") ||
		!strings.Contains(text, "+58.2% (past the reference's wall)") {
		t.Error("the prediction's judged levels are not said")
	}

	if !strings.Contains(text, "**Peak fp8\\_e4m3 GEMM:** 1,517 TFLOP/s (at B=4096, ridge 353 FLOP/byte)") {
		t.Error("the appendix lacks the FP8 peak")
	}
	if !strings.Contains(text, "| 1 | bf16 | 4.06 | 15.0 GB | 3,698 |") {
		t.Error("the appendix lacks the model's step floor at batch 1")
	}

	file := writeHTMLReport(t, rep)
	printed := map[string]int{}
	var inFront bool
	// Page one first: printing the rest removes it.
	res := openInBrowser(t, file, func(ctx context.Context) {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("section.front").textContent.includes("Whose gap")`))
		if err != nil {
			t.Fatal(err)
		}
		inFront = got
	}, inspectPrint(t, printed))
	for _, p := range browserProblems(res, file) {
		t.Error(p)
	}
	if inFront {
		t.Error("the silicon/engine split is on page one")
	}
	// Not held to the demo's 12 pages (TestBrowserRendersDemoReport): with
	// its two sweeps and the probe's appendix it prints to 13.
	t.Logf("printed pages: %v", printed)
}
