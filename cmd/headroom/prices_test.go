package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/analyze"
)

// headroom prices lists every built-in price with its date and source,
// marking the secondary ones; --yaml writes a table --prices reads back;
// --prices shows what a report given that file would use.
func TestPricesCommand(t *testing.T) {
	code, out, errs := headroom(t, "prices")
	if code != 0 {
		t.Fatalf("prices: exit %d: %s", code, errs)
	}
	builtin, err := analyze.BuiltinPrices()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range builtin.APIs {
		line := lineWith(out, a.Model+" ")
		kind := "vendor"
		if !a.Verified {
			kind = "secondary"
		}
		if !strings.Contains(line, a.Date) || !strings.Contains(line, kind+" "+a.SourceURL) {
			t.Errorf("the API price %q is listed as %q, want its date %s and %s source", a.Model, line, a.Date, kind)
		}
	}
	for _, g := range builtin.GPUHours {
		if !strings.Contains(lineWith(out, g.Name+" "), g.SourceURL) {
			t.Errorf("the preset %s is not listed with its source", g.Name)
		}
	}
	code, yaml, _ := headroom(t, "prices", "--yaml")
	if code != 0 {
		t.Fatal("prices --yaml failed")
	}
	file := filepath.Join(t.TempDir(), "p.yaml")
	edited := strings.Replace(yaml, "provider: DeepInfra", "provider: Acme Inference", 1)
	if err := os.WriteFile(file, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs = headroom(t, "prices", "--prices", file)
	if code != 0 || !strings.Contains(out, "Acme Inference") || !strings.Contains(out, "Price table: "+file) {
		t.Errorf("prices --prices FILE: exit %d, %s\n%s", code, errs, out)
	}
	// The report's help points users at this command, not at a source file.
	_, help, _ := headroom(t, "report", "--help")
	if strings.Contains(help, "prices.yaml") || !strings.Contains(help, "headroom prices") {
		t.Errorf("report --help sends users to a file they do not have:\n%s", lineWith(help, "--gpu-preset"))
	}
}

func lineWith(text, part string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, part) {
			return l
		}
	}
	return ""
}

// --pdf prints the report with the local Chromium; without one it stops
// before the work with one line saying how to get one.
func TestReportPDF(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "h200.run")
	if code, _, errs := headroom(t, "import", seedRoofline, "-o", dir, "--date", "2026-11-29"); code != 0 {
		t.Fatalf("import: %s", errs)
	}
	t.Run("no browser", func(t *testing.T) {
		t.Setenv("HEADROOM_CHROMIUM", "")
		t.Setenv("PATH", t.TempDir())
		out := filepath.Join(t.TempDir(), "out")
		code, _, errs := headroom(t, "report", dir, "--pdf", "-o", out)
		if code == 0 || strings.Count(strings.TrimSpace(errs), "\n") != 0 || !strings.Contains(errs, "needs Chromium or Google Chrome") || !strings.Contains(errs, "apt-get install chromium") {
			t.Errorf("without a browser: exit %d, %q", code, errs)
		}
		if _, err := os.Stat(out); err == nil {
			t.Error("the failed --pdf run left a report behind")
		}
	})
	t.Run("chromium", func(t *testing.T) {
		if os.Getenv("HEADROOM_CHROMIUM") == "" {
			t.Setenv("HEADROOM_CHROMIUM", "/usr/bin/chromium")
		}
		out := filepath.Join(t.TempDir(), "out")
		code, stdout, errs := headroom(t, "report", dir, "--pdf", "-o", out)
		if code != 0 {
			t.Fatalf("report --pdf: exit %d: %s", code, errs)
		}
		pdf, err := os.ReadFile(filepath.Join(out, "report.pdf"))
		if err != nil || !bytes.HasPrefix(pdf, []byte("%PDF-")) || !strings.Contains(stdout, "report.pdf") {
			t.Errorf("report --pdf wrote no PDF (%v), said %q", err, stdout)
		}
	})
}
