package render

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/internal/texttest"
	"github.com/headroom-llm/headroom/templates"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// The browser test opens report.html the way a client does, in Debian's
// Chromium with the network cut off, and checks that every chart drew,
// nothing was requested from any host and the console stayed clean.
//
// CI installs Chromium (`apt-get install -y chromium`, see .ci/run); set
// HEADROOM_CHROMIUM to use another binary.

var screenshotOut = flag.String("screenshot", "", "write page one of the demo report to this PNG file (e.g. \"$PWD/docs/report-h200.png\" from the repository root)")

func chromiumPath(t *testing.T) string {
	t.Helper()
	path := os.Getenv(BrowserEnv)
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the browser test needs Chromium at %s (%v): install it with `apt-get install -y chromium` (Debian), or set %s to a Chromium or Chrome binary", path, err, BrowserEnv)
	}
	return path
}

// The tests share one browser (starting Chromium takes seconds on a small
// machine); each page gets its own tab. TestMain closes it.
var browser struct {
	once sync.Once
	b    *Browser
	err  error
}

func sharedBrowser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	browser.once.Do(func() { browser.b, browser.err = StartBrowser(path) })
	if browser.err != nil {
		t.Fatalf("start chromium %s: %v", path, browser.err)
	}
	return browser.b.Context()
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if browser.b != nil {
		browser.b.Close()
	}
	os.Exit(code)
}

// browserResult is what the page showed.
type browserResult struct {
	Drawn, Failed int
	Boxes         []chartBox // every chart element's place on the page
	FrontBottom   float64    // where page one ends on the page, in px
	Screenshot    image.Image
	Console       []string // console errors and uncaught exceptions
	Requests      []string // every URL the page asked for
}

type chartBox struct {
	ID                  string
	X, Y, Width, Height float64
	SVGShapes           int // drawn SVG paths and texts inside the element
}

// openInBrowser loads the file in headless Chromium with networking
// blocked: any request to a host goes to a closed local port and fails.
func openInBrowser(t *testing.T, file string, inspect ...func(ctx context.Context)) browserResult {
	t.Helper()
	browserCtx := sharedBrowser(t)
	// A new tab of the shared browser.
	ctx, cancel := chromedp.NewContext(browserCtx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	defer cancelTimeout()

	// Open the tab, then listen before loading the page.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("chromium: open a tab: %v", err)
	}
	var res browserResult
	var mu sync.Mutex
	err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == "error" || ev.Type == "warning" || ev.Type == "assert" {
				var args []string
				for _, a := range ev.Args {
					args = append(args, fmt.Sprintf("%s%s", a.Value, a.Description))
				}
				res.Console = append(res.Console, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
			}
		case *runtime.EventExceptionThrown:
			d := ev.ExceptionDetails
			msg := d.Text
			if d.Exception != nil {
				msg += " " + d.Exception.Description
			}
			res.Console = append(res.Console, fmt.Sprintf("uncaught exception at %d:%d: %s", d.LineNumber, d.ColumnNumber, msg))
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError {
				res.Console = append(res.Console, fmt.Sprintf("log %s: %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		case *network.EventRequestWillBeSent:
			res.Requests = append(res.Requests, ev.Request.URL)
		}
	})
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatalf("enable network events: %v", err)
	}
	if _, err := chromedp.Call(ctx, log.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("enable log events: %v", err)
	}
	if _, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("enable runtime events: %v", err)
	}

	if err := LoadReport(ctx, file); err != nil {
		t.Fatalf("chromium: load %s: %v", file, err)
	}
	drawn, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.getAttribute("data-charts-drawn")`))
	if err != nil {
		t.Fatal(err)
	}
	failed, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.documentElement.getAttribute("data-charts-failed")`))
	if err != nil {
		t.Fatal(err)
	}
	boxes, err := chromedp.Run(ctx, chromedp.Evaluate[[]chartBox](`Array.from(document.querySelectorAll(".chart")).map(function (el) {
		var r = el.getBoundingClientRect();
		return {ID: el.id, X: r.left + window.scrollX, Y: r.top + window.scrollY, Width: r.width, Height: r.height,
			SVGShapes: el.querySelectorAll("svg path, svg text").length};
	})`))
	if err != nil {
		t.Fatal(err)
	}
	front, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`(function () {
		var f = document.querySelector("section.front");
		return f ? f.getBoundingClientRect().bottom + window.scrollY : 0;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	// The whole page in one viewport, the charts redrawn for it before the
	// capture (a resize redraws them on the next frame, which a capture
	// would race).
	height, err := chromedp.Run(ctx, chromedp.Evaluate[int64](`document.documentElement.scrollHeight`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: 1200, Height: height, DeviceScaleFactor: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(window.headroomResize && window.headroomResize(), true)`)); err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	// Further looks at the page (other widths, print) come after the
	// screenshot, which is taken at the default width.
	for _, f := range inspect {
		f(ctx)
	}
	mu.Lock()
	defer mu.Unlock()
	fmt.Sscan(drawn, &res.Drawn)
	fmt.Sscan(failed, &res.Failed)
	res.Boxes = boxes
	res.FrontBottom = front
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	res.Screenshot = img
	return res
}

// writeDocScreenshot writes page one of the report, as a browser at the
// default width shows it, for the README.
func writeDocScreenshot(t *testing.T, img image.Image, frontBottom float64, path string) {
	t.Helper()
	bottom := img.Bounds().Max.Y
	if frontBottom > 0 {
		bottom = min(bottom, int(frontBottom)+8)
	}
	crop := image.NewRGBA(image.Rect(0, 0, img.Bounds().Dx(), bottom))
	draw.Draw(crop, crop.Bounds(), img, img.Bounds().Min, draw.Src)
	var b bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&b, crop); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// inkFraction is the fraction of pixels in the rectangle that are not
// near-white: a drawn chart has axes, labels and points.
func inkFraction(img image.Image, b chartBox) float64 {
	r := image.Rect(int(b.X), int(b.Y), int(b.X+b.Width), int(b.Y+b.Height)).Intersect(img.Bounds())
	if r.Empty() {
		return 0
	}
	ink := 0
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			cr, cg, cb, _ := img.At(x, y).RGBA()
			if cr < 0xe000 || cg < 0xe000 || cb < 0xe000 {
				ink++
			}
		}
	}
	return float64(ink) / float64(r.Dx()*r.Dy())
}

// checkInBrowser writes rep's report.html, opens it in headless Chromium
// and reports every problem browserProblems finds.
func checkInBrowser(t *testing.T, rep *analyze.Report, inspect ...func(ctx context.Context)) browserResult {
	t.Helper()
	file := writeHTMLReport(t, rep)
	res := openInBrowser(t, file, inspect...)
	for _, p := range browserProblems(res, file) {
		t.Error(p)
	}
	return res
}

// writeHTMLReport writes rep's report.html, as `headroom report` does, into
// a temporary directory and returns its path.
func writeHTMLReport(t *testing.T, rep *analyze.Report) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := Files(dir, rep, "html"); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "report.html")
}

// The default demo (`headroom demo`: the H200 probe and two sweeps, with
// the example's own report settings) draws every chart in a browser; its
// top is the README's screenshot.
func TestBrowserRendersDemoReport(t *testing.T) {
	rep := defaultDemoReport(t)
	file := writeHTMLReport(t, rep)
	printed := map[string]int{}
	res := openInBrowser(t, file, inspectLayout(t), inspectPrint(t, printed))
	for _, p := range browserProblems(res, file) {
		t.Error(p)
	}
	checkDemoPrint(t, file, printed)
	if *screenshotOut != "" {
		writeDocScreenshot(t, res.Screenshot, res.FrontBottom, *screenshotOut)
	}
	// Page one's three panels and roofline; the second sweep's panels; the
	// KV cache, utilisation and clock over time of both sweeps; each
	// sweep's Pareto view: 15, counted in the page once and pinned here.
	if want := 15; len(res.Boxes) != want {
		t.Errorf("the demo report should draw %d charts, found %d chart elements", want, len(res.Boxes))
	}
}

// The probe-only example draws its one chart.
func TestBrowserRendersProbeReport(t *testing.T) {
	rep := exampleReport(t, "h200-probe")
	res := checkInBrowser(t, rep)
	if len(res.Boxes) != 1 {
		t.Errorf("the probe report should draw 1 chart, found %d chart elements", len(res.Boxes))
	}
}

// The browser check catches what it is there to catch: a page whose
// ECharts is missing and which asks another host for an image.
func TestBrowserCatchesBrokenPage(t *testing.T) {
	rep := exampleReport(t, "h200-probe")
	var b bytes.Buffer
	if err := HTML(&b, rep); err != nil {
		t.Fatal(err)
	}
	page := strings.Replace(b.String(), templates.EChartsJS, "", 1)
	page = strings.Replace(page, "</body>", `<img src="https://example.invalid/pixel.png" alt=""></body>`, 1)
	file := filepath.Join(t.TempDir(), "broken.html")
	if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	problems := strings.Join(browserProblems(openInBrowser(t, file), file), "\n")
	texttest.Contains(t, "the browser check's findings", problems, "failed 1", "ECharts did not load", "requested https://example.invalid/pixel.png", "0 SVG shapes")
}

// browserProblems lists what is wrong with a loaded report: charts that
// did not draw or are blank, console errors, and requests for anything
// but the file itself.
func browserProblems(res browserResult, file string) []string {
	var out []string
	if res.Failed != 0 || res.Drawn != len(res.Boxes) || res.Drawn == 0 {
		out = append(out, fmt.Sprintf("charts drawn %d, failed %d, chart elements %d", res.Drawn, res.Failed, len(res.Boxes)))
	}
	for _, b := range res.Boxes {
		if b.Width < 200 || b.Height < 200 {
			out = append(out, fmt.Sprintf("chart %s is %.0f×%.0f px, too small to read", b.ID, b.Width, b.Height))
		}
		if b.SVGShapes < 20 {
			out = append(out, fmt.Sprintf("chart %s has %d SVG shapes: ECharts drew (almost) nothing", b.ID, b.SVGShapes))
		}
		// A blank chart box is white; axes, labels and points put ink on
		// a few percent of it (the wide roofline, thin lines and dots on a
		// full-width box, about 0.7%).
		if f := inkFraction(res.Screenshot, b); f < 0.004 {
			out = append(out, fmt.Sprintf("chart %s is blank in the screenshot (%.2f%% ink)", b.ID, 100*f))
		}
	}
	for _, c := range res.Console {
		out = append(out, "console: "+c)
	}
	self := (&url.URL{Scheme: "file", Path: file}).String()
	for _, u := range res.Requests {
		if u != self {
			out = append(out, "the page requested "+u+": a report must load nothing")
		}
	}
	return out
}

func TestInkFraction(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 100, 100))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	box := chartBox{X: 10, Y: 10, Width: 50, Height: 40}
	if f := inkFraction(img, box); f != 0 {
		t.Errorf("white box: ink %v, want 0", f)
	}
	for x := 10; x < 60; x++ { // an axis line: one row of 50 pixels
		img.Set(x, 49, color.Black)
	}
	if f := inkFraction(img, box); f != 50.0/2000 {
		t.Errorf("box with an axis: ink %v, want %v", f, 50.0/2000)
	}
}
