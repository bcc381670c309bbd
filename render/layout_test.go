package render

import (
	"context"
	"fmt"
	"regexp"
	"testing"

	"github.com/chromedp/chromedp"
)

// The layout check looks at the page as a reader does, at a phone's width
// (390 px), a laptop's half screen (900 px), a desktop (1,400 px) and
// printed (the A4 landscape sheet): nothing may stick out of the page or
// its box unless it sits in a box that scrolls, and no chart label may
// overlap another label, a line or a marker.

// layoutWidths are the viewport widths the layout check tries.
var layoutWidths = []int{390, 900, 1400}

// layoutJS returns the problems of the page as laid out now, as strings.
// It reads what ECharts drew: each chart is SVG, every label a <text>
// whose box the browser knows, every line and marker a <path> whose
// stroke and fill the browser can hit-test.
const layoutJS = `(function () {
  var out = [];
  var W = document.documentElement.clientWidth;
  function name(el) {
    var s = el.tagName.toLowerCase();
    if (el.id) { s += "#" + el.id; }
    if (el.className && typeof el.className === "string") { s += "." + el.className.trim().split(/\s+/).join("."); }
    var text = (el.textContent || "").trim().replace(/\s+/g, " ");
    if (text) { s += " \"" + text.slice(0, 60) + "\""; }
    return s;
  }
  function scrolls(el) {
    for (var p = el.parentElement; p; p = p.parentElement) {
      var o = getComputedStyle(p).overflowX;
      if (o === "auto" || o === "scroll" || o === "hidden") { return true; }
    }
    return false;
  }
  if (document.documentElement.scrollWidth > W + 1) {
    out.push("the page is " + document.documentElement.scrollWidth + " px wide in a " + W + " px window: it scrolls sideways");
  }
  var all = document.body.querySelectorAll("*");
  var reported = 0;
  for (var i = 0; i < all.length && reported < 15; i++) {
    var el = all[i];
    if (el.closest("svg") || el.closest(".chart") || el.tagName === "SCRIPT" || el.tagName === "STYLE") { continue; }
    var cs = getComputedStyle(el);
    if (cs.display === "none" || cs.display === "inline" || scrolls(el)) { continue; }
    var r = el.getBoundingClientRect();
    if (r.width === 0 || r.height === 0) { continue; }
    var own = cs.overflowX;
    if (r.right > W + 1) {
      out.push(name(el) + " ends at " + Math.round(r.right) + " px, past the " + W + " px window");
      reported++;
    } else if (own === "visible" && el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0) {
      out.push(name(el) + ": its content is " + el.scrollWidth + " px wide in a " + el.clientWidth + " px box");
      reported++;
    }
  }
  function meets(a, b) {
    return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
  }
  function inset(r, d) {
    return { left: r.left + d, right: r.right - d, top: r.top + d, bottom: r.bottom - d };
  }
  var chartsEl = document.querySelectorAll(".chart");
  for (var c = 0; c < chartsEl.length; c++) {
    var chart = chartsEl[c], svg = chart.querySelector("svg");
    if (!svg) { continue; }
    var box = chart.getBoundingClientRect();
    if (box.right > W + 1) {
      out.push("chart " + chart.id + " is " + Math.round(box.width) + " px wide and ends at " + Math.round(box.right) + " px, past the " + W + " px window");
    }
    var labels = [];
    var texts = svg.querySelectorAll("text");
    for (var k = 0; k < texts.length; k++) {
      var t = texts[k], tr = t.getBoundingClientRect();
      if (!t.textContent.trim() || tr.width === 0 || getComputedStyle(t).opacity === "0") { continue; }
      labels.push({ text: t.textContent.trim(), r: inset(tr, 1), el: t });
      if (tr.left < box.left - 1 || tr.right > box.right + 1 || tr.top < box.top - 1 || tr.bottom > box.bottom + 1) {
        out.push("chart " + chart.id + ": label \"" + t.textContent.trim() + "\" is cut off at the chart's edge");
      }
    }
    for (var a = 0; a < labels.length; a++) {
      for (var b = a + 1; b < labels.length; b++) {
        if (meets(labels[a].r, labels[b].r)) {
          out.push("chart " + chart.id + ": label \"" + labels[a].text + "\" overlaps label \"" + labels[b].text + "\"");
        }
      }
    }
    // Lines and markers: every stroked or filled path but the background,
    // the grid's split lines and faint shaded areas.
    var area = box.width * box.height, shapes = [];
    var paths = svg.querySelectorAll("path");
    for (var p = 0; p < paths.length; p++) {
      var pe = paths[p], ps = getComputedStyle(pe), pr = pe.getBoundingClientRect();
      if (pr.width * pr.height > 0.5 * area) { continue; }
      var stroke = ps.stroke !== "none" && ps.stroke !== "" && parseFloat(ps.strokeWidth) > 0 && parseFloat(ps.strokeOpacity) > 0.3 && ps.stroke !== "rgb(228, 228, 228)";
      var fill = ps.fill !== "none" && ps.fill !== "" && parseFloat(ps.fillOpacity) > 0.3;
      if (stroke || fill) { shapes.push({ el: pe, stroke: stroke, fill: fill, r: pr, m: null }); }
    }
    for (var l = 0; l < labels.length; l++) {
      var lr = labels[l].r, hit = null;
      for (var s = 0; s < shapes.length && !hit; s++) {
        var sh = shapes[s];
        if (!meets(lr, sh.r)) { continue; }
        if (!sh.m) {
          var ctm = sh.el.getScreenCTM();
          if (!ctm) { continue; }
          sh.m = ctm.inverse();
        }
        var m = sh.m;
        // The middle band of the label, where its glyphs are: a text's
        // box is its line's full height, glyphs rarely fill it.
        for (var gx = 0; gx <= 6 && !hit; gx++) {
          for (var gy = 0; gy <= 2 && !hit; gy++) {
            var pt = new DOMPoint(lr.left + (lr.right - lr.left) * gx / 6, lr.top + (lr.bottom - lr.top) * (0.3 + 0.2 * gy)).matrixTransform(m);
            var svgPt = svg.createSVGPoint(); svgPt.x = pt.x; svgPt.y = pt.y;
            if ((sh.stroke && sh.el.isPointInStroke(svgPt)) || (sh.fill && sh.el.isPointInFill(svgPt))) { hit = sh; }
          }
        }
      }
      if (hit) {
        out.push("chart " + chart.id + ": label \"" + labels[l].text + "\" is crossed by a " + (hit.fill ? "marker" : "line") + " (" + (hit.el.getAttribute("stroke") || hit.el.getAttribute("fill")) + ")");
      }
    }
  }
  return out;
})()`

// layoutProblems lays the loaded page in ctx out at each width, then as
// printed, and lists what layoutJS finds, each prefixed with where.
func layoutProblems(ctx context.Context, widths []int) ([]string, error) {
	var out []string
	check := func(where string) error {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](layoutJS))
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		for _, p := range got {
			out = append(out, where+": "+p)
		}
		return nil
	}
	for _, w := range widths {
		if err := SetWidth(ctx, w); err != nil {
			return nil, err
		}
		if err := check(fmt.Sprintf("%d px", w)); err != nil {
			return nil, err
		}
	}
	if err := EmulatePrint(ctx); err != nil {
		return nil, err
	}
	if err := check("print"); err != nil {
		return nil, err
	}
	return out, nil
}

// inspectLayout returns an openInBrowser inspection that reports every
// layout problem as a test error.
func inspectLayout(t *testing.T) func(ctx context.Context) {
	return func(ctx context.Context) {
		t.Helper()
		problems, err := layoutProblems(ctx, layoutWidths)
		if err != nil {
			t.Fatalf("layout check: %v", err)
		}
		for _, p := range problems {
			t.Error(p)
		}
	}
}

// pdfPages counts the pages of a PDF Chromium wrote: one /Type /Page
// object each (Skia writes them uncompressed).
func pdfPages(pdf []byte) int {
	return len(pageObject.FindAll(pdf, -1))
}

var pageObject = regexp.MustCompile(`/Type\s*/Page[^s]`)

// printedPages prints the loaded page in ctx after running js on it, and
// counts the sheets.
func printedPages(t *testing.T, ctx context.Context, js string) int {
	t.Helper()
	if js != "" {
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js)); err != nil {
			t.Fatalf("prepare the page for print: %v", err)
		}
	}
	pdf, err := PrintPDF(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return pdfPages(pdf)
}

// Scripts that cut the loaded report down to page one, or to the rest.
const (
	frontOnlyJS = `(function () { var f = document.querySelector("section.front"); while (f.nextElementSibling && f.nextElementSibling.tagName !== "SCRIPT") { f.nextElementSibling.remove(); } return true; })()`
	restOnlyJS  = `(function () { document.querySelector("header.report-head").remove(); document.querySelector("section.front").remove(); return true; })()`
)

// inspectPrint returns an openInBrowser inspection that prints the page
// whole, then without page one, and records the sheets.
func inspectPrint(t *testing.T, counts map[string]int) func(ctx context.Context) {
	return func(ctx context.Context) {
		t.Helper()
		counts["whole"] = printedPages(t, ctx, "")
		counts["rest"] = printedPages(t, ctx, restOnlyJS)
	}
}

// checkDemoPrint checks that the demo prints to at most 14 A4 pages (it
// printed to 46; 12 until each sweep's details gained the energy per token
// and the Pareto chart, a page per sweep), that page one fits two and stands alone on its sheets:
// page one printed alone and the rest printed alone add up to the whole.
func checkDemoPrint(t *testing.T, file string, counts map[string]int) {
	t.Helper()
	openInBrowser(t, file, func(ctx context.Context) { counts["page one"] = printedPages(t, ctx, frontOnlyJS) })
	t.Logf("printed pages: %v", counts)
	if n := counts["whole"]; n > 14 || n == 0 {
		t.Errorf("the demo prints to %d A4 pages, want at most 14", n)
	}
	if n := counts["page one"]; n > 2 || n == 0 {
		t.Errorf("page one prints to %d pages, want at most 2", n)
	}
	if counts["page one"]+counts["rest"] != counts["whole"] {
		t.Errorf("page one (%d pages) and the rest (%d) do not add up to the whole (%d): page one shares a sheet with the details",
			counts["page one"], counts["rest"], counts["whole"])
	}
}
