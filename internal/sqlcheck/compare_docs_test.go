package sqlcheck

import (
	"context"
	"database/sql"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/analyze/compare"
	"github.com/headroom-llm/headroom/collect/importer"
)

// copyDir copies a run directory (files only, one level of table folders).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The SQL of docs/compare.md runs as written against an index of an
// archive (the recorded test-engine sweeps and two imports), every query
// returns rows, and the last one gives the p99 TTFT that compare computed.
func TestCompareDocsSQL(t *testing.T) {
	archive := filepath.Join(t.TempDir(), "archive")
	for _, r := range []string{"seq4-a", "seq4-b", "seq1-a"} {
		copyDir(t, filepath.Join("../../testdata/runs/testengine-sequences", r), filepath.Join(archive, "testengine", r))
	}
	when := importer.Options{Date: time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)}
	if _, err := importer.Import("../../testdata/imports/aiperf/run1", filepath.Join(archive, "aiperf", "gpt-oss"), importer.Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := importer.Import("../../testdata/imports/vllm/aggregate-append.json", filepath.Join(archive, "vllm", "llama"), when); err != nil {
		t.Fatal(err)
	}
	dirs, err := os.ReadDir(archive)
	if err != nil || len(dirs) != 3 {
		t.Fatal(dirs, err)
	}
	var runDirs []string
	for _, sub := range []string{"aiperf/gpt-oss", "testengine/seq1-a", "testengine/seq4-a", "testengine/seq4-b", "vllm/llama"} {
		runDirs = append(runDirs, filepath.Join(archive, sub))
	}
	runs, err := compare.LoadAll(context.Background(), runDirs)
	if err != nil {
		t.Fatal(err)
	}
	c, err := compare.Compare(context.Background(), runs, compare.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(t.TempDir(), "runs.parquet")
	if err := c.WriteIndex(index); err != nil {
		t.Fatal(err)
	}

	stmts := docStatements(t, "sql")
	db := openDB(t)
	var last [][]any
	for _, s := range stmts {
		q := strings.ReplaceAll(s, "'runs.parquet'", "'"+index+"'")
		q = strings.ReplaceAll(q, "'archive/", "'"+archive+"/")
		last = queryRows(t, db, q, s)
	}
	// The wall columns hold each run's diagnosis, as compare found it.
	walls := map[string]string{}
	q, err := db.Query("SELECT label, wall_short FROM '" + index + "' WHERE wall IS NOT NULL")
	if err != nil {
		t.Fatal(err)
	}
	for q.Next() {
		var label, short string
		if err := q.Scan(&label, &short); err != nil {
			t.Fatal(err)
		}
		walls[label] = short
	}
	q.Close()
	for _, r := range c.Runs {
		if r.Sweep == nil {
			continue
		}
		// wall_short is the primary wall (compare's code) at its load's
		// identifier, then the secondary walls.
		at := r.Sweep.Wall
		if r.Sweep.WallAt != (analyze.LoadKey{}) {
			at += " at " + r.Sweep.WallAt.ID()
		}
		if !strings.HasPrefix(walls[r.Label], at) || len(r.Sweep.Then) > 0 && !strings.Contains(walls[r.Label], "; then "+r.Sweep.Then[0].Wall) {
			t.Errorf("%s: wall_short %q in the index, %q then %+v in the comparison", r.Label, walls[r.Label], at, r.Sweep.Then)
		}
	}
	// The last query: p99 TTFT per run label and concurrency. Check the
	// "1 sequence" run against compare's own numbers.
	want := map[int64]float64{}
	for _, r := range c.Runs {
		if r.Label == "1 sequence" {
			for _, l := range r.Sweep.Levels {
				want[int64(l.Concurrency)] = l.TTFTP99S * 1e3
			}
		}
	}
	checked := 0
	for _, row := range last {
		if row[0] != "1 sequence" {
			continue
		}
		conc, ms := row[1].(int64), row[2].(float64)
		if math.Abs(ms-want[conc]) > 1e-9 {
			t.Errorf("c=%d: DuckDB p99 TTFT %v ms, compare %v ms", conc, ms, want[conc])
		}
		checked++
	}
	if checked != 5 {
		t.Errorf("checked %d levels of the 1-sequence run, want 5", checked)
	}
}

func stripComments(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// docStatements are the SQL statements of docs/compare.md's blocks fenced
// "```"+fence (at least five).
func docStatements(t *testing.T, fence string) []string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/compare.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```"+regexp.QuoteMeta(fence)+"\n(.*?)```").FindAllStringSubmatch(string(doc), -1)
	var stmts []string
	for _, b := range blocks {
		for _, s := range strings.Split(b[1], ";") {
			if strings.TrimSpace(stripComments(s)) != "" {
				stmts = append(stmts, s)
			}
		}
	}
	if len(stmts) < 5 {
		t.Fatalf("docs/compare.md: %d statements in %q blocks", len(stmts), fence)
	}
	return stmts
}

// queryRows runs q and returns its rows; an error or no rows fails the
// test, naming the documented statement doc.
func queryRows(t *testing.T, db *sql.DB, q, doc string) [][]any {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Errorf("%v\n%s", err, doc)
		return nil
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var got [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		got = append(got, vals)
	}
	if len(got) == 0 {
		t.Errorf("no rows from\n%s", doc)
	}
	return got
}
