package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/analyze/compare"
	"github.com/headroom-llm/headroom/rundir"
)

const recordedRuns = "../../testdata/runs/testengine-sequences/"

// copyRun copies a run directory (its files and table folders).
func copyRun(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// editManifest rewrites a run's manifest through f.
func editManifest(t *testing.T, dir string, f func(m *rundir.Manifest)) {
	t.Helper()
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	f(m)
	if err := rundir.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
}

// comparisonJSON reads the parts of comparison.json these tests check.
type comparisonJSON struct {
	Runs []struct {
		Dir   string `json:"dir"`
		Group string `json:"group"`
	} `json:"runs"`
	Groups []struct {
		Name string `json:"name"`
	} `json:"groups"`
	LeftOut []struct {
		Dir     string `json:"dir"`
		Why     string `json:"why"`
		Stopped *struct {
			Reason string `json:"reason"`
		} `json:"stopped"`
	} `json:"left_out"`
	Comparisons []struct {
		NotComparable bool `json:"not_comparable"`
		Differs       []struct {
			Key string `json:"key"`
		} `json:"not_comparable_keys"`
		Deltas []struct {
			Metric      string   `json:"metric"`
			P           *float64 `json:"p"`
			Interval    any      `json:"interval"`
			Significant bool     `json:"significant"`
		} `json:"deltas"`
	} `json:"comparisons"`
}

func readComparison(t *testing.T, out string) (comparisonJSON, string) {
	t.Helper()
	var c comparisonJSON
	data, err := os.ReadFile(filepath.Join(out, "comparison.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(filepath.Join(out, "compare.md"))
	return c, string(md)
}

// Issue 18's third problem, first half: `compare DIR` included a failed
// sweep (0 requests) as a group of its own. A sweep that stopped before
// any level was written (killed, or recorded by a headroom that kept the
// directory of a failed start; today's removes it) is listed apart with
// why, and forms no group.
func TestCompareLeavesOutFailedRuns(t *testing.T) {
	archive := t.TempDir()
	copyRun(t, recordedRuns+"seq4-a", filepath.Join(archive, "seq4-a"))
	copyRun(t, recordedRuns+"seq4-b", filepath.Join(archive, "seq4-b"))
	m, err := rundir.ReadManifest(filepath.Join(archive, "seq4-a"))
	if err != nil {
		t.Fatal(err)
	}
	m.RunID = rundir.NewRunID()
	m.Complete = false
	m.Stopped = &rundir.Stopped{Reason: "error", Phase: "sweep", Error: "first request to http://127.0.0.1:9/v1/completions failed: connection refused"}
	failed := filepath.Join(archive, "failed")
	if err := os.MkdirAll(failed, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := rundir.WriteManifest(failed, m); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "cmp")
	code, stdout, errs := headroom(t, "compare", archive, "-o", out, "--format", "md")
	if code != 0 {
		t.Fatalf("compare: exit %d: %s", code, errs)
	}
	c, md := readComparison(t, out)
	if len(c.Runs) != 2 || len(c.Groups) != 1 {
		t.Errorf("runs %+v groups %+v: want the two good runs in one group", c.Runs, c.Groups)
	}
	for _, r := range c.Runs {
		if strings.HasSuffix(r.Dir, "failed") {
			t.Errorf("the failed run is compared, in group %q", r.Group)
		}
	}
	if len(c.LeftOut) != 1 || !strings.HasSuffix(c.LeftOut[0].Dir, "failed") || c.LeftOut[0].Why != compare.LeftOutNoLevels ||
		c.LeftOut[0].Stopped == nil {
		t.Errorf("left out %+v", c.LeftOut)
	}
	if !strings.Contains(md, "Runs left out") || !strings.Contains(md, "no request was measured") {
		t.Errorf("compare.md does not list the failed run apart:\n%s", md)
	}
	if !strings.Contains(stdout, "1 left out") {
		t.Errorf("stdout %q", stdout)
	}
}

// Issue 18's third problem, second half: runs with different workloads
// were compared with "significant (p<0.001)". They are now side by side,
// "not comparable: workload.prompt_tokens differs", with no test.
func TestCompareRefusesDifferentWorkloads(t *testing.T) {
	archive := t.TempDir()
	short, long := filepath.Join(archive, "short"), filepath.Join(archive, "long")
	copyRun(t, recordedRuns+"seq4-a", short)
	copyRun(t, recordedRuns+"seq1-a", long)
	editManifest(t, short, func(m *rundir.Manifest) { m.Label = "64/32" })
	editManifest(t, long, func(m *rundir.Manifest) {
		m.Label = "512/128"
		m.Workload.Prompt.Mean, m.Workload.Output.Mean = 512, 128
	})
	out := filepath.Join(t.TempDir(), "cmp")
	if code, _, errs := headroom(t, "compare", short, long, "-o", out, "--format", "md"); code != 0 {
		t.Fatalf("compare: exit %d: %s", code, errs)
	}
	c, md := readComparison(t, out)
	if len(c.Comparisons) != 1 {
		t.Fatalf("%d comparisons", len(c.Comparisons))
	}
	gc := c.Comparisons[0]
	if !gc.NotComparable || len(gc.Differs) != 2 || gc.Differs[0].Key != "workload.prompt_tokens" || gc.Differs[1].Key != "workload.output_tokens" {
		t.Errorf("not_comparable %v %+v", gc.NotComparable, gc.Differs)
	}
	if len(gc.Deltas) == 0 {
		t.Fatal("no values side by side")
	}
	for _, d := range gc.Deltas {
		if d.P != nil || d.Interval != nil || d.Significant {
			t.Errorf("%s: tested across runs that are not comparable: %+v", d.Metric, d)
		}
	}
	if !strings.Contains(md, `not comparable: workload.prompt\_tokens differs`) || strings.Contains(md, "significant (") {
		t.Errorf("compare.md:\n%s", md)
	}
	// The same runs grouped by what differs, or with the difference
	// allowed, are compared: the check is about what was not chosen.
	out2 := filepath.Join(t.TempDir(), "cmp")
	if code, _, errs := headroom(t, "compare", short, long, "-o", out2, "--format", "none",
		"--allow-differ", "workload.prompt_tokens,workload.output_tokens"); code != 0 {
		t.Fatalf("compare --allow-differ: exit %d: %s", code, errs)
	}
	if c2, _ := readComparison(t, out2); c2.Comparisons[0].NotComparable {
		t.Errorf("with --allow-differ: %+v", c2.Comparisons[0].Differs)
	}
	if code, _, errs := headroom(t, "compare", short, long, "--allow-differ", "label"); code != 2 || !strings.Contains(errs, "not a key that must match") {
		t.Errorf("--allow-differ label: exit %d, %s", code, errs)
	}
}

// Issue 18's third problem, --group-by: any manifest field (by its JSON
// path) or a tag's key groups runs, not only the context keys.
func TestCompareGroupByAnyManifestField(t *testing.T) {
	archive := t.TempDir()
	for _, r := range []string{"seq4-a", "seq4-b", "seq1-a"} {
		copyRun(t, recordedRuns+r, filepath.Join(archive, r))
	}
	editManifest(t, filepath.Join(archive, "seq1-a"), func(m *rundir.Manifest) { m.Engine.BaseURL = "http://other:8000" })
	for _, tt := range []struct {
		key    string
		groups []string
	}{
		{"engine.base_url", []string{"http://127.0.0.1:18080", "http://other:8000"}},
		{"sequences", []string{"1", "4"}},
		{"workload.requests_per_level", []string{"32"}},
		{"host.memory_bytes", []string{"25276026880"}},
	} {
		out := filepath.Join(t.TempDir(), "cmp")
		code, _, errs := headroom(t, "compare", archive, "-o", out, "--format", "none", "--group-by", tt.key)
		if code != 0 {
			t.Errorf("--group-by %s: exit %d: %s", tt.key, code, errs)
			continue
		}
		c, _ := readComparison(t, out)
		var got []string
		for _, g := range c.Groups {
			got = append(got, g.Name)
		}
		if strings.Join(sortedCopy(got), "|") != strings.Join(tt.groups, "|") {
			t.Errorf("--group-by %s: groups %v, want %v", tt.key, got, tt.groups)
		}
	}
	if code, _, errs := headroom(t, "compare", archive, "--group-by", "engine.no_such_field"); code == 0 || !strings.Contains(errs, "no run has that key") {
		t.Errorf("unknown key: exit %d, %s", code, errs)
	}
}

func sortedCopy(xs []string) []string {
	out := append([]string(nil), xs...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// Issue 18's second problem: runs.parquet had no workload columns and its
// tags were one flat string. It now carries the workload (lengths and
// their distributions, endpoint, levels, requests per level), the SLO, the
// run's id, and tags as a map.
func TestCompareIndexHasWorkloadAndTags(t *testing.T) {
	archive := t.TempDir()
	copyRun(t, recordedRuns+"seq4-a", filepath.Join(archive, "seq4-a"))
	out := t.TempDir()
	index := filepath.Join(out, "runs.parquet")
	if code, _, errs := headroom(t, "compare", archive, "-o", out, "--format", "none", "--index", index, "--slo", "ttft_p99=2s"); code != 0 {
		t.Fatalf("compare: exit %d: %s", code, errs)
	}
	rows, err := rundir.ReadParquetFile[struct {
		RunID            string            `parquet:"run_id"`
		Tags             map[string]string `parquet:"tags"`
		Endpoint         string            `parquet:"endpoint"`
		PromptDist       string            `parquet:"prompt_tokens_dist"`
		PromptMean       *float64          `parquet:"prompt_tokens_mean"`
		OutputMean       *float64          `parquet:"output_tokens_mean"`
		Levels           []int64           `parquet:"concurrency_levels"`
		RequestsPerLevel int64             `parquet:"requests_per_level"`
		FixedOutput      bool              `parquet:"fixed_output"`
		SLO              string            `parquet:"slo"`
	}](index)
	if err != nil || len(rows) != 1 {
		t.Fatalf("%d rows: %v", len(rows), err)
	}
	r := rows[0]
	if r.RunID == "" || r.Tags["sequences"] != "4" || r.Endpoint != "completions" || r.PromptDist != "fixed" ||
		r.PromptMean == nil || *r.PromptMean != 64 || *r.OutputMean != 32 || len(r.Levels) != 5 || r.Levels[4] != 16 ||
		r.RequestsPerLevel != 32 || !r.FixedOutput || r.SLO != "ttft_p99=2s" {
		t.Errorf("index row %+v", r)
	}
}
