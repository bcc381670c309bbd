package sqlcheck

import (
	"context"
	"crypto/sha256"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/analyze/compare"
	"github.com/headroom-llm/headroom/rundir"
)

// scaledRun writes a copy of a recorded run with every concurrency times
// four (so its levels are 4..64), a new run id, start time and engine
// version: an archive with c=64 and an upgrade to query.
func scaledRun(t *testing.T, src, dst, version string, start time.Time) {
	t.Helper()
	m, err := rundir.ReadManifest(src)
	if err != nil {
		t.Fatal(err)
	}
	levels, _ := rundir.ReadTable[rundir.LevelRow](src, rundir.TableLevels)
	reqs, _ := rundir.ReadTable[rundir.RequestRow](src, rundir.TableRequests)
	shift := start.Sub(m.StartTime).Nanoseconds()
	m.RunID, m.Extra, m.StartTime, m.EndTime = "", nil, start, m.EndTime.Add(time.Duration(shift))
	e := *m.Engine
	e.Version = version
	m.Engine = &e
	run, err := rundir.Create(dst, m)
	if err != nil {
		t.Fatal(err)
	}
	for i := range levels {
		l := &levels[i]
		l.Concurrency *= 4
		l.StartNS, l.WarmupEndNS, l.EndNS = l.StartNS+shift, l.WarmupEndNS+shift, l.EndNS+shift
	}
	for i := range reqs {
		r := &reqs[i]
		r.Concurrency *= 4
		r.RequestID = rundir.RequestID(run.Manifest.RunID, int(r.LevelIndex), int(r.Seq))
		r.SendNS, r.IntendedSendNS, r.EndNS = r.SendNS+shift, r.IntendedSendNS+shift, r.EndNS+shift
		if r.FirstTokenNS != nil {
			f := *r.FirstTokenNS + shift
			r.FirstTokenNS = &f
		}
	}
	m.Workload.Levels = []int{4, 8, 16, 32, 64}
	if err := rundir.WriteTable(dst, rundir.TableLevels, levels); err != nil {
		t.Fatal(err)
	}
	if err := rundir.WriteTable(dst, rundir.TableRequests, reqs); err != nil {
		t.Fatal(err)
	}
	run.Manifest.Complete = true
	if err := run.SaveManifest(); err != nil {
		t.Fatal(err)
	}
}

func fileHashes(t *testing.T, root string) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			data, _ := os.ReadFile(p)
			out[p] = sha256.Sum256(data)
		}
		return nil
	})
	return out
}

// The DuckDB queries of docs/compare.md's dataset section run as written
// over `headroom index` output; p99 TTFT at c=64 per engine version is the
// runs' own numbers; types are portable; re-indexing only adds files.
func TestIndexDocsSQL(t *testing.T) {
	root := t.TempDir()
	archive := filepath.Join(root, "archive")
	day := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	src := "../../testdata/runs/testengine-sequences/"
	for i, v := range []string{"3.21.1", "3.21.1", "3.22.0", "3.22.0"} {
		scaledRun(t, src+[]string{"seq4-a", "seq4-b"}[i%2], filepath.Join(archive, "scaled", string(rune('a'+i))), v, day.Add(time.Duration(i)*25*time.Hour))
	}
	copyDir(t, src+"seq1-a", filepath.Join(archive, "v1", "seq1-a")) // a format-1 run, as recorded
	failed := filepath.Join(archive, "failed")
	fr, err := rundir.Create(failed, &rundir.Manifest{Kinds: []string{rundir.KindSweep}, StartTime: day, Label: "refused"})
	if err != nil {
		t.Fatal(err)
	}
	fr.Finish(&rundir.Stopped{Reason: "error", Error: "connection refused"})

	index := filepath.Join(root, "index")
	store := compare.LocalDataset(index)
	dirs, _ := rundir.FindRuns(archive)
	var srcs []rundir.Dir
	for _, d := range dirs {
		if !strings.Contains(d, "scaled/d") { // one run is added by a second index below
			srcs = append(srcs, rundir.LocalDir(d))
		}
	}
	st, err := compare.Index(context.Background(), srcs, store, analyze.Default())
	if err != nil || st.Runs != 5 {
		t.Fatalf("index: %+v %v", st, err)
	}
	before := fileHashes(t, index)
	all := make([]rundir.Dir, len(dirs))
	for i, d := range dirs {
		all[i] = rundir.LocalDir(d)
	}
	st, err = compare.Index(context.Background(), all, store, analyze.Default())
	if err != nil || st.Runs != 1 || st.Skipped != 5 {
		t.Fatalf("re-index: %+v %v", st, err)
	}
	after := fileHashes(t, index)
	for p, h := range before {
		if after[p] != h {
			t.Errorf("re-indexing rewrote %s", p)
		}
	}
	if len(after) != len(before)+4 {
		t.Errorf("re-indexing one run added %d files, want one per table", len(after)-len(before))
	}

	stmts := docStatements(t, "sql index")
	db := openDB(t)
	results := map[int][][]any{}
	for i, s := range stmts {
		results[i] = queryRows(t, db, strings.ReplaceAll(s, "'index/", "'"+index+"/"), s)
	}

	// The c=64 query: the median over each version's runs of their own p99.
	runs, err := compare.LoadAll(context.Background(), dirs)
	if err != nil {
		t.Fatal(err)
	}
	c, err := compare.Compare(context.Background(), runs, compare.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	p99 := map[string][]float64{}
	for _, r := range c.Runs {
		for _, l := range r.Sweep.Levels {
			if l.Concurrency == 64 {
				p99[r.EngineVer] = append(p99[r.EngineVer], l.TTFTP99S*1e3)
			}
		}
	}
	got := results[1]
	if len(got) != 2 {
		t.Fatalf("c=64 per engine version: %v", got)
	}
	for _, row := range got {
		want := p99[row[0].(string)]
		sort.Float64s(want)
		med := (want[0] + want[len(want)-1]) / 2 // two runs each
		if row[1].(int64) != 2 || math.Abs(row[2].(float64)-med) > 1e-6 {
			t.Errorf("%v: want 2 runs, median p99 %v ms", row, med)
		}
	}
	if r := results[4]; len(r) != 1 || r[0][0] != "refused" || r[0][2] != compare.LeftOutNoLevels || r[0][3] != "error" ||
		!strings.Contains(r[0][4].(string), "connection refused") {
		t.Errorf("left out: %v", r)
	}

	// Identity: unique request ids across runs (the format-1 run's too);
	// every row names its run.
	var n, distinct, noRun int64
	db.QueryRow("SELECT count(*), count(DISTINCT request_id), count(*) FILTER (WHERE run_id IS NULL OR run_id = '') FROM read_parquet('"+index+"/requests/*/*.parquet')").Scan(&n, &distinct, &noRun)
	want := 0
	for _, r := range runs {
		want += len(r.Requests)
	}
	if n != int64(want) || distinct != n || noRun != 0 {
		t.Errorf("requests %d, distinct ids %d, without run id %d", n, distinct, noRun)
	}
	// Portable types: no unsigned integer, times as BIGINT and TIMESTAMP,
	// tags a map.
	for _, table := range compare.DatasetTables {
		rows, err := db.Query("DESCRIBE SELECT * FROM read_parquet('" + index + "/" + table + "/*/*.parquet', hive_partitioning = true)")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var name, typ string
			var null, key, def, extra any
			rows.Scan(&name, &typ, &null, &key, &def, &extra)
			switch {
			case strings.HasPrefix(typ, "U"):
				t.Errorf("%s.%s: unsigned %s", table, name, typ)
			case strings.HasSuffix(name, "_ns") && typ != "BIGINT":
				t.Errorf("%s.%s: %s, want BIGINT", table, name, typ)
			case strings.HasSuffix(name, "_time") && !strings.HasPrefix(typ, "TIMESTAMP"):
				t.Errorf("%s.%s: %s, want TIMESTAMP", table, name, typ)
			case name == "tags" && typ != "MAP(VARCHAR, VARCHAR)":
				t.Errorf("runs.tags: %s", typ)
			case name == "day" && !slices.Contains([]string{"DATE", "VARCHAR"}, typ):
				t.Errorf("%s.day: %s", table, typ)
			}
		}
		rows.Close()
	}
}
