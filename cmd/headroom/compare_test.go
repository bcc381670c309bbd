package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/analyze/compare"
	"github.com/headroom-llm/headroom/rundir"
)

const imports = "../../testdata/imports/"

func mustImport(t *testing.T, out string, args ...string) {
	t.Helper()
	code, _, errs := headroom(t, append([]string{"import", "-o", out}, args...)...)
	if code != 0 {
		t.Fatalf("import %v: exit %d: %s", args, code, errs)
	}
}

// writeVariant writes a copy of an import sample with replacements.
func writeVariant(t *testing.T, src, dst string, pairs ...string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	for i := 0; i < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			t.Fatalf("%s has no %q", src, pairs[i])
		}
		s = strings.ReplaceAll(s, pairs[i], pairs[i+1])
	}
	if err := os.WriteFile(dst, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// Other tools' results, imported, compare like headroom's own runs; a
// directory is searched for runs; the index holds one row per run.
func TestImportsThenCompare(t *testing.T) {
	archive := t.TempDir()
	mustImport(t, filepath.Join(archive, "aiperf", "gpt-oss.run"), imports+"aiperf/run1")
	mustImport(t, filepath.Join(archive, "vllm", "llama.run"), imports+"vllm/aggregate-append.json", "--tag", "engine=vllm")
	mustImport(t, filepath.Join(archive, "guidellm", "qwen.run"), imports+"guidellm/benchmarks-0.3.json")
	out := filepath.Join(t.TempDir(), "cmp")
	index := filepath.Join(out, "runs.parquet")
	code, stdout, errs := headroom(t, "compare", archive, "-o", out, "--index", index)
	if code != 0 {
		t.Fatalf("compare: exit %d: %s", code, errs)
	}
	if !strings.HasPrefix(stdout, "compared 3 runs in 3 groups (grouped by label)\n") {
		t.Errorf("stdout %q", stdout)
	}
	md, err := os.ReadFile(filepath.Join(out, "compare.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gpt-oss.run", "llama.run", "qwen.run", "| engine.model |", "openai/gpt-oss-20b", "300 tok/s"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("compare.md lacks %q", want)
		}
	}
	for _, f := range []string{"compare.html", "comparison.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Error(err)
		}
	}
	rows, err := rundir.ReadParquetFile[compare.IndexRow](index)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d index rows", len(rows))
	}
	byLabel := map[string]compare.IndexRow{}
	for _, r := range rows {
		byLabel[r.Label] = r
	}
	v := byLabel["llama.run"]
	if v.Tags["engine"] != "vllm" || v.Model != "meta-llama/Llama-3.1-8B-Instruct" || v.PeakOutputTokS == nil || *v.PeakOutputTokS != 300 ||
		*v.PeakConcurrency != 4 || v.Levels != 2 || v.Requests != 200 || v.Date != "2025-01-03" || v.SourceTool == "" {
		t.Errorf("vllm index row %+v", v)
	}
	a := byLabel["gpt-oss.run"]
	// Three records: two completed, one AIPerf cancelled itself (neither).
	if a.Model != "openai/gpt-oss-20b" || a.Requests != 2 || a.Errors != 0 || a.EndNS == nil || a.DurationS == nil {
		t.Errorf("aiperf index row %+v", a)
	}
}

// The regression gate: exit 0 when every rule holds, 3 with one line per
// violated rule, 2 for a rule it cannot read.
func TestCompareGate(t *testing.T) {
	tmp := t.TempDir()
	base := filepath.Join(tmp, "base.run")
	mustImport(t, base, imports+"vllm/aggregate-append.json")
	// The candidate lost a sixth of its throughput at c=4 and its TTFT p99
	// rose from 60 to 75 ms there.
	slower := writeVariant(t, imports+"vllm/aggregate-append.json", filepath.Join(tmp, "slower.json"),
		`"output_throughput": 300.0`, `"output_throughput": 250.0`, `"p99_ttft_ms": 60.0`, `"p99_ttft_ms": 75.0`)
	cand := filepath.Join(tmp, "cand.run")
	mustImport(t, cand, slower)

	code, stdout, errs := headroom(t, "compare", "--baseline", base, cand, "-o", filepath.Join(tmp, "ok"), "--format", "none",
		"--fail-if", "throughput<-20%,ttft_p99>+30%")
	if code != 0 || !strings.Contains(stdout, "regression gate passed: 2 checks") {
		t.Fatalf("passing gate: exit %d, stdout %q, stderr %q", code, stdout, errs)
	}
	code, stdout, errs = headroom(t, "compare", "--baseline", base, cand, "-o", filepath.Join(tmp, "bad"), "--format", "md",
		"--fail-if", "throughput<-5%,ttft_p99>+10%,tpot_p50>+50%")
	var fails []string
	for _, l := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(l, "FAIL ") {
			fails = append(fails, l)
		}
	}
	want := []string{
		"FAIL throughput<-5% [cand.run vs baseline: base.run]: throughput 300.0 tok/s -> 250.0 tok/s (-16.7%; no test)",
		"FAIL ttft_p99>+10% [cand.run vs baseline: base.run]: ttft_p99 at c=4 60 ms -> 75 ms (+25.0%; no test)",
	}
	if code != 3 || !slices.Equal(fails, want) || strings.Count(strings.TrimSpace(errs), "\n") != 0 ||
		!strings.Contains(errs, "regression gate failed: 2 of 3 checks") {
		t.Fatalf("failing gate: exit %d\nstdout %q\nstderr %q\nwant lines %q", code, stdout, errs, want)
	}
	for _, args := range [][]string{
		{"compare", base, "--fail-if", "speed<-5%"},
		{"compare", base, "--format", "pdf"},
		{"compare", base, "--label", "nothing-equal"},
		{"compare", base, "--label", "elsewhere=x"},
		{"compare", base, "--alpha", "2"},
	} {
		if code, _, errs := headroom(t, append(args, "-o", filepath.Join(tmp, "u"))...); code != 2 {
			t.Errorf("%v: exit %d (%s), want 2", args, code, errs)
		}
	}
	if code, _, errs := headroom(t, "compare", filepath.Join(tmp, "missing"), "-o", filepath.Join(tmp, "m")); code != 1 || !strings.Contains(errs, "missing") {
		t.Errorf("missing run: exit %d, %s", code, errs)
	}
	empty := filepath.Join(tmp, "empty")
	os.Mkdir(empty, 0o755)
	if code, _, errs := headroom(t, "compare", empty, "-o", filepath.Join(tmp, "e")); code != 1 || !strings.Contains(errs, "no run directories under it") {
		t.Errorf("empty dir: exit %d, %s", code, errs)
	}
}

// --label names runs for one comparison; --group-by tag:KEY groups them.
func TestCompareLabelsAndGroups(t *testing.T) {
	tmp := t.TempDir()
	for i, tag := range []string{"prefix=on", "prefix=off", "prefix=on"} {
		mustImport(t, filepath.Join(tmp, "runs", string(rune('a'+i))+".run"), imports+"vllm/detailed-0.11.json", "--tag", tag)
	}
	out := filepath.Join(tmp, "out")
	a := filepath.Join(tmp, "runs", "a.run")
	code, stdout, errs := headroom(t, "compare", filepath.Join(tmp, "runs"), "-o", out, "--group-by", "tag:prefix", "--label", a+"=first", "--format", "md")
	if code != 0 || !strings.HasPrefix(stdout, "compared 3 runs in 2 groups (grouped by tag:prefix)") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, errs)
	}
	md, _ := os.ReadFile(filepath.Join(out, "compare.md"))
	if !strings.Contains(string(md), "| 1 | first | on |") || !strings.Contains(string(md), "off against the baseline on") {
		t.Errorf("compare.md:\n%s", md)
	}
}

// compare --cache: the second compare (and an index) of the same runs reads
// the summaries the first one kept, and says the same; a --label renames a
// run from the cache too.
func TestCompareCache(t *testing.T) {
	tmp := t.TempDir()
	runs := filepath.Join("..", "..", "examples", "runs", "h200")
	cache := filepath.Join(tmp, "cache")
	label := filepath.Join(runs, "sweep-kv256") + "=small-kv"
	var got []string
	for i := range 2 {
		out := filepath.Join(tmp, fmt.Sprint("out", i))
		code, stdout, errs := headroom(t, "compare", runs, "-o", out, "--format", "none", "--cache", cache, "--label", label)
		if code != 0 {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, errs)
		}
		var c struct {
			Runs json.RawMessage `json:"runs"`
		}
		data, err := os.ReadFile(filepath.Join(out, "comparison.json"))
		if err != nil || json.Unmarshal(data, &c) != nil {
			t.Fatalf("comparison.json: %v", err)
		}
		got = append(got, string(c.Runs))
	}
	entries, _ := filepath.Glob(filepath.Join(cache, "*", "*.gob"))
	if len(entries) != 3 || got[0] != got[1] || !strings.Contains(got[1], `"label": "small-kv"`) {
		t.Fatalf("%d cache entries; runs from the cache:\n%s\nfirst:\n%s", len(entries), got[1], got[0])
	}
	code, stdout, errs := headroom(t, "index", runs, "-o", filepath.Join(tmp, "idx"), "--cache", cache)
	if code != 0 || !strings.HasPrefix(stdout, "indexed 3 new runs") {
		t.Fatalf("index: exit %d, stdout %q, stderr %q", code, stdout, errs)
	}
	if code, _, errs := headroom(t, "compare", runs, "--cache", "s3://bucket/cache"); code != 2 || !strings.Contains(errs, "--cache s3://bucket/cache: the summary cache is a local directory") {
		t.Fatalf("an s3 cache: exit %d, stderr %q", code, errs)
	}
}

// A sweep leaves its run's summary in it, with the settings a compare and
// an index without flags use: they read it instead of the run's tables.
func TestSweepLeavesItsSummary(t *testing.T) {
	llm := faultyServer(t, "", func(int64) bool { return false })
	run := filepath.Join(t.TempDir(), "run")
	if code, stdout, errs := headroom(t, sweepArgs(llm.URL, run, "own")...); code != 0 {
		t.Fatalf("sweep: exit %d\n%s%s", code, stdout, errs)
	}
	checkOwnSummary(t, run)
}

// An imported run leaves its summary too: an archive of thousands of other
// tools' results compares as fast as headroom's own runs.
func TestImportLeavesItsSummary(t *testing.T) {
	run := filepath.Join(t.TempDir(), "run")
	src := imports + "vllm/detailed-0.11.json"
	if code, stdout, errs := headroom(t, "import", src, "-o", run); code != 0 {
		t.Fatalf("import: exit %d\n%s%s", code, stdout, errs)
	}
	checkOwnSummary(t, run)
}

// checkOwnSummary checks that run holds its own summary and that compare
// reads it: with the run's requests removed, compare's numbers are still
// those of the whole run.
func checkOwnSummary(t *testing.T, run string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(run, rundir.SummaryFile)); err != nil {
		t.Fatalf("no summary in the run: %v", err)
	}
	tmp := t.TempDir()
	before := filepath.Join(tmp, "before")
	if code, stdout, errs := headroom(t, "compare", run, "-o", before, "--format", "none"); code != 0 {
		t.Fatalf("compare: exit %d\n%s%s", code, stdout, errs)
	}
	// Without its requests the run has no numbers, unless its summary is read.
	if err := os.RemoveAll(filepath.Join(run, rundir.TableRequests)); err != nil {
		t.Fatal(err)
	}
	after := filepath.Join(tmp, "after")
	if code, stdout, errs := headroom(t, "compare", run, "-o", after, "--format", "none"); code != 0 {
		t.Fatalf("compare from the summary: exit %d\n%s%s", code, stdout, errs)
	}
	runsOf := func(dir string) string {
		var c struct {
			Runs json.RawMessage `json:"runs"`
		}
		data, err := os.ReadFile(filepath.Join(dir, "comparison.json"))
		if err != nil || json.Unmarshal(data, &c) != nil {
			t.Fatalf("comparison.json: %v", err)
		}
		return string(c.Runs)
	}
	if a, b := runsOf(after), runsOf(before); a != b {
		t.Fatalf("from the summary:\n%s\nwant\n%s", a, b)
	}
}

// The benchmark archive's summaries (analyze/compare's commandSettings) are
// made with the command's default analysis: analyze.Default() and the
// built-in price table. If this fails, change both.
func TestDefaultAnalysisIsDefaultWithBuiltInPrices(t *testing.T) {
	got, err := defaultAnalysis()
	if err != nil {
		t.Fatal(err)
	}
	want := analyze.Default()
	prices, source, err := analyze.LoadPrices("")
	if err != nil {
		t.Fatal(err)
	}
	want.Cost = analyze.CostSettings{Utilization: 1, Prices: prices, PricesSource: source}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Fatalf("the command's default analysis:\n%s\nwant\n%s", g, w)
	}
}
