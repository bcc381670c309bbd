package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/examples"
	"github.com/headroom-llm/headroom/rundir"
)

// headroom runs one command line in-process and returns its exit code,
// stdout and stderr.
func headroom(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, &out, &errb)
	return code, out.String(), errb.String()
}

const seedRoofline = "../../testdata/seed/roofline_NVIDIA_H200.json"

func TestImportThenReport(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "h200.run")
	code, out, errs := headroom(t, "import", seedRoofline, "-o", dir, "--date", "2026-11-29")
	if code != 0 {
		t.Fatalf("import: exit %d: %s", code, errs)
	}
	if !strings.Contains(out, dir) {
		t.Errorf("import output does not name the run: %q", out)
	}
	code, _, errs = headroom(t, "report", dir)
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, errs)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"782 TFLOP/s (at B=2048)", "4,186 GB/s", "187 FLOP/byte", "B=512", "The run lacks: Driver, CUDA"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

// Broken input gives one line naming the file and the problem, a non-zero
// exit, and no panic.
func TestReportOnBrokenRuns(t *testing.T) {
	good := filepath.Join(t.TempDir(), "good")
	if _, _, err := examples.Extract("h200-probe", good); err != nil {
		t.Fatal(err)
	}
	manifest, _ := os.ReadFile(filepath.Join(good, rundir.ManifestFile))
	parts, _ := rundir.TableParts(good, rundir.TableProbeGEMM)
	part, _ := os.ReadFile(parts[0])

	cases := []struct {
		name     string
		breakRun func(dir string)
		file     string // the file the message must name, relative to the run
		want     string
	}{
		{"truncated manifest", func(d string) {
			os.WriteFile(filepath.Join(d, rundir.ManifestFile), manifest[:len(manifest)/3], 0o644)
		}, rundir.ManifestFile, "truncated"},
		{"manifest not JSON", func(d string) {
			os.WriteFile(filepath.Join(d, rundir.ManifestFile), []byte("<html>oops</html>"), 0o644)
		}, rundir.ManifestFile, "invalid manifest JSON"},
		{"newer format", func(d string) {
			os.WriteFile(filepath.Join(d, rundir.ManifestFile), bytes.Replace(manifest, []byte(`"format_version": `), []byte(`"format_version": 99`), 1), 0o644)
		}, rundir.ManifestFile, "upgrade headroom"},
		{"truncated parquet", func(d string) {
			os.WriteFile(filepath.Join(d, rundir.TableProbeGEMM, filepath.Base(parts[0])), part[:len(part)-20], 0o644)
		}, filepath.Join(rundir.TableProbeGEMM, filepath.Base(parts[0])), "Parquet"},
		{"empty parquet", func(d string) {
			os.WriteFile(filepath.Join(d, rundir.TableProbeGEMM, filepath.Base(parts[0])), nil, 0o644)
		}, filepath.Join(rundir.TableProbeGEMM, filepath.Base(parts[0])), "Parquet"},
		{"probe table missing", func(d string) {
			os.RemoveAll(filepath.Join(d, rundir.TableProbeGEMM))
		}, "", "has no rows"},
		{"not a run", func(d string) {
			os.Remove(filepath.Join(d, rundir.ManifestFile))
		}, "", "not a headroom run directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			if _, _, err := examples.Extract("h200-probe", dir); err != nil {
				t.Fatal(err)
			}
			c.breakRun(dir)
			code, _, errs := headroom(t, "report", dir)
			if code == 0 {
				t.Fatal("exit 0 on a broken run")
			}
			lines := strings.Split(strings.TrimSpace(errs), "\n")
			if len(lines) != 1 {
				t.Fatalf("want one line, got %q", errs)
			}
			if !strings.Contains(errs, filepath.Join(dir, c.file)) || !strings.Contains(errs, c.want) {
				t.Fatalf("want the message to name %s and say %q, got %q", filepath.Join(dir, c.file), c.want, errs)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"report"}, {"import"}, {"report", "--format", "pdf", "x"}, {"demo", "--bogus"}} {
		code, _, errs := headroom(t, args...)
		if code != 2 || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line", args, code, errs)
		}
	}
}

func TestDemo(t *testing.T) {
	outs := t.TempDir()
	var flagship string // the h200 example's output, checked below
	for _, ex := range examples.List {
		t.Run(ex.Name, func(t *testing.T) {
			out := filepath.Join(outs, ex.Name)
			if err := os.Mkdir(out, 0o755); err != nil {
				t.Fatal(err)
			}
			code, stdout, errs := headroom(t, "demo", "-o", out, "--example", ex.Name)
			if code != 0 {
				t.Fatalf("demo: exit %d: %s", code, errs)
			}
			for _, f := range []string{"report.md", "report.html", "analysis.json"} {
				if _, err := os.Stat(filepath.Join(out, f)); err != nil {
					t.Errorf("demo did not write %s (stdout %q)", f, stdout)
				}
			}
			runs, err := rundir.FindRuns(filepath.Join(out, "example-"+ex.Name))
			if err != nil || len(runs) == 0 {
				t.Fatalf("no run extracted: %v", err)
			}
			md, _ := os.ReadFile(filepath.Join(out, "report.md"))
			for _, r := range runs {
				m, err := rundir.ReadManifest(r)
				if err != nil {
					t.Fatal(err)
				}
				// Markdown escapes the label's underscores (q4\_0).
				if !strings.Contains(string(md), m.Label) && !strings.Contains(string(md), strings.ReplaceAll(m.Label, "_", `\_`)) {
					t.Errorf("report.md does not name the run %q", m.Label)
				}
			}
			if ex.Name == "h200" {
				flagship = out
			}
			// Running it again replaces the extracted run rather than
			// failing: the same code for every example, so tried on the
			// smallest.
			if ex.Name == "h200-probe" {
				if code, _, errs := headroom(t, "demo", "-o", out, "--example", ex.Name); code != 0 {
					t.Fatalf("second demo: exit %d: %s", code, errs)
				}
			}
		})
	}
	// The flagship joins the probe with both sweeps, with the example's
	// model, SLO and prices: the roofline gap, the KV wall of the small cache
	// and the H200's cost all reach the report.
	if flagship == "" {
		t.Fatal("no h200 example")
	}
	md, _ := os.ReadFile(filepath.Join(flagship, "report.md"))
	for _, want := range []string{"Roofline gap", "KV-cache wall from c=64", "spheron-h200-sxm", "TTFT p99 ≤ 2 s"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("the h200 demo report lacks %q", want)
		}
	}
	code, stdout, _ := headroom(t, "demo", "--list")
	if code != 0 || !strings.Contains(stdout, examples.Default) {
		t.Errorf("demo --list: %d %q", code, stdout)
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := headroom(t, "version")
	if code != 0 || !strings.HasPrefix(out, "headroom ") || !strings.Contains(out, "run format "+strconv.Itoa(rundir.FormatVersion)) {
		t.Fatalf("version: %d %q", code, out)
	}
}
