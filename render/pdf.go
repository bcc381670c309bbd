package render

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/chromedp/cdproto/emulation"
	cdppage "github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// The PDF is report.html printed by a local Chromium or Chrome, the way a
// reader would print it: the same page, the same print style sheet. Nothing
// is downloaded; without a browser, --pdf says how to get one.

// BrowserEnv names the environment variable that points at a Chromium or
// Chrome binary, for --pdf and the browser test.
const BrowserEnv = "HEADROOM_CHROMIUM"

// ErrNoBrowser is returned by FindBrowser when no Chromium or Chrome is
// installed.
var ErrNoBrowser = errors.New("--pdf needs Chromium or Google Chrome: install one " +
	"(Debian/Ubuntu: apt-get install chromium; macOS: brew install --cask chromium) " +
	"or set " + BrowserEnv + " to its path")

// browserNames are the names and places Chromium and Chrome are installed
// under, per system, in the order they are tried.
func browserNames(goos string) []string {
	switch goos {
	case "darwin":
		return []string{
			"/Applications/Chromium.app/Contents/MacOS/Chromium",
			"/Applications/Google Chrome.app/Contents/MacOS/Google Chrome",
			"chromium", "google-chrome",
		}
	case "windows":
		return []string{
			"chrome", "msedge",
			`C:\Program Files\Google\Chrome\Application\chrome.exe`,
			`C:\Program Files (x86)\Google\Chrome\Application\chrome.exe`,
			`C:\Program Files (x86)\Microsoft\Edge\Application\msedge.exe`,
		}
	}
	return []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome", "headless_shell", "/snap/bin/chromium"}
}

// FindBrowser returns the Chromium or Chrome to print with: the one
// HEADROOM_CHROMIUM names, else the first installed under a usual name.
func FindBrowser() (string, error) {
	if p := os.Getenv(BrowserEnv); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: no such file", BrowserEnv, p)
		}
		return p, nil
	}
	for _, name := range browserNames(runtime.GOOS) {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", ErrNoBrowser
}

// Browser is one headless Chromium, with networking cut off: a report loads
// nothing, and a page that tried would fail rather than leak.
type Browser struct {
	ctx    context.Context
	cancel context.CancelFunc
	dir    string
}

// StartBrowser starts the browser at path with a fresh profile.
func StartBrowser(path string) (*Browser, error) {
	dir, err := os.MkdirTemp("", "headroom-chromium-")
	if err != nil {
		return nil, err
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.UserDataDir(dir),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.WindowSize(1200, 900),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		// Every request goes to a closed local port, and no name resolves.
		chromedp.Flag("proxy-server", "127.0.0.1:9"),
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND"),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	b := &Browser{ctx: ctx, cancel: func() { cancel(); cancelAlloc() }, dir: dir}
	if err := chromedp.Do(ctx); err != nil {
		b.Close()
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	return b, nil
}

// Context is the browser's first tab; chromedp.NewContext(b.Context())
// opens another.
func (b *Browser) Context() context.Context { return b.ctx }

// Close ends the browser and removes its profile.
func (b *Browser) Close() {
	b.cancel()
	os.RemoveAll(b.dir)
}

// PrintWidthPX is the width of an A4 landscape sheet less the print style
// sheet's 12 mm margins, in CSS pixels (96 per inch): what the page is laid
// out at when printed.
const PrintWidthPX = 1031

// LoadReport opens file in tab ctx and waits until its charts are drawn.
func LoadReport(ctx context.Context, file string) error {
	abs, err := filepath.Abs(file)
	if err != nil {
		return err
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	return chromedp.Do(ctx,
		chromedp.Navigate(u.String()),
		chromedp.WaitVisible(chromedp.CSS("html[data-charts-drawn]")),
	)
}

// EmulatePrint lays tab ctx out as it is printed: print media, the sheet's
// width, the charts redrawn for it.
func EmulatePrint(ctx context.Context) error {
	if _, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{Media: "print"}); err != nil {
		return err
	}
	return SetWidth(ctx, PrintWidthPX)
}

// SetWidth sets the tab's viewport width and redraws the charts for it.
func SetWidth(ctx context.Context, width int) error {
	if _, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{Width: int64(width), Height: 900, DeviceScaleFactor: 1}); err != nil {
		return err
	}
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(window.headroomResize && window.headroomResize(), true)`))
	return err
}

// PrintPDF prints the loaded report in tab ctx on A4 landscape, as the
// print style sheet sets it.
func PrintPDF(ctx context.Context) ([]byte, error) {
	if err := EmulatePrint(ctx); err != nil {
		return nil, err
	}
	t, f := true, false
	res, err := chromedp.Call(ctx, cdppage.PrintToPDF, cdppage.PrintToPDFParams{
		PrintBackground:     &t,
		PreferCSSPageSize:   &t,
		DisplayHeaderFooter: &f,
		GenerateTaggedPDF:   &t,
	})
	if err != nil {
		return nil, fmt.Errorf("print to PDF: %w", err)
	}
	return res.Data, nil
}

// PDF prints htmlFile (a report.html) to pdfFile with the local Chromium or
// Chrome.
func PDF(htmlFile, pdfFile string) error {
	path, err := FindBrowser()
	if err != nil {
		return err
	}
	b, err := StartBrowser(path)
	if err != nil {
		return err
	}
	defer b.Close()
	ctx, cancel := context.WithTimeout(b.Context(), 2*time.Minute)
	defer cancel()
	if err := LoadReport(ctx, htmlFile); err != nil {
		return fmt.Errorf("open %s in %s: %w", htmlFile, path, err)
	}
	data, err := PrintPDF(ctx)
	if err != nil {
		return err
	}
	return os.WriteFile(pdfFile, data, 0o644)
}
