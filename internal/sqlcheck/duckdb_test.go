package sqlcheck

import (
	"database/sql"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/headroom-llm/headroom/collect/importer"
	"github.com/headroom-llm/headroom/internal/seedtest"
	"github.com/headroom-llm/headroom/rundir"
)

func openDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// glob is how users point DuckDB at a table: every part file of it.
func glob(dir, table string) string {
	return "'" + filepath.Join(dir, table, "*.parquet") + "'"
}

func columns(t *testing.T, db *sql.DB, dir, table string) []string {
	t.Helper()
	rows, err := db.Query("SELECT column_name FROM (DESCRIBE SELECT * FROM read_parquet(" + glob(dir, table) + "))")
	if err != nil {
		t.Fatalf("%s: %v", table, err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		rows.Scan(&c)
		cols = append(cols, c)
	}
	return cols
}

func tags[T any]() []string {
	var out []string
	rt := reflect.TypeFor[T]()
	for i := 0; i < rt.NumField(); i++ {
		out = append(out, rt.Field(i).Tag.Get("parquet"))
	}
	return out
}

// Every table, written by rundir, opens in DuckDB with the documented
// column names and the row count written, across several part files.
func TestEveryTableReadsInDuckDB(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t)
	check := func(table string, want []string, write func(n int) error) {
		t.Helper()
		if err := write(3); err != nil {
			t.Fatal(err)
		}
		if err := write(4); err != nil {
			t.Fatal(err)
		}
		if got := columns(t, db, dir, table); !reflect.DeepEqual(got, want) {
			t.Errorf("%s columns:\n got %v\nwant %v", table, got, want)
		}
		var n int
		if err := db.QueryRow("SELECT count(*) FROM read_parquet(" + glob(dir, table) + ")").Scan(&n); err != nil || n != 7 {
			t.Errorf("%s: %d rows, err %v; want 7", table, n, err)
		}
	}
	check(rundir.TableProbeGEMM, tags[rundir.ProbeGEMMRow](), rows[rundir.ProbeGEMMRow](dir, rundir.TableProbeGEMM))
	check(rundir.TableProbeBandwidth, tags[rundir.ProbeBandwidthRow](), rows[rundir.ProbeBandwidthRow](dir, rundir.TableProbeBandwidth))
	check(rundir.TableLevels, tags[rundir.LevelRow](), rows[rundir.LevelRow](dir, rundir.TableLevels))
	check(rundir.TableRequests, tags[rundir.RequestRow](), rows[rundir.RequestRow](dir, rundir.TableRequests))
	check(rundir.TableTokens, tags[rundir.TokenRow](), rows[rundir.TokenRow](dir, rundir.TableTokens))
	check(rundir.TableServerMetrics, tags[rundir.ServerMetricRow](), rows[rundir.ServerMetricRow](dir, rundir.TableServerMetrics))
	check(rundir.TableGPUTelemetry, tags[rundir.GPUTelemetryRow](), rows[rundir.GPUTelemetryRow](dir, rundir.TableGPUTelemetry))
	check(rundir.TableClientSamples, tags[rundir.ClientSampleRow](), rows[rundir.ClientSampleRow](dir, rundir.TableClientSamples))
	check(rundir.TableServerLogLines, tags[rundir.ServerLogLineRow](), rows[rundir.ServerLogLineRow](dir, rundir.TableServerLogLines))
	check(rundir.TableLevelStats, tags[rundir.LevelStatsRow](), rows[rundir.LevelStatsRow](dir, rundir.TableLevelStats))

	// Nullable columns are real SQL NULLs.
	var nulls int
	if err := db.QueryRow("SELECT count(*) FROM read_parquet(" + glob(dir, rundir.TableRequests) + ") WHERE first_token_ns IS NULL").Scan(&nulls); err != nil || nulls != 7 {
		t.Errorf("first_token_ns NULLs: %d, %v; want 7", nulls, err)
	}
}

func rows[T any](dir, table string) func(n int) error {
	return func(n int) error { return rundir.WriteTable(dir, table, make([]T, n)) }
}

// The imported seed probe reads in DuckDB with exactly the JSON's values.
func TestImportedSeedProbeMatchesJSON(t *testing.T) {
	src := "../../testdata/seed/roofline_NVIDIA_H200.json"
	seed := seedtest.ReadRoofline(t, src)
	dir := filepath.Join(t.TempDir(), "run")
	run, err := importer.Import(src, dir, importer.Options{Date: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	db := openDB(t)
	q, err := db.Query("SELECT batch, intensity_flop_per_byte, flop_per_s, time_per_call_median_s, k, n FROM read_parquet(" +
		glob(dir, rundir.TableProbeGEMM) + ") ORDER BY batch")
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	i := 0
	for ; q.Next(); i++ {
		var b, k, n int64
		var inten, flops, secs float64
		if err := q.Scan(&b, &inten, &flops, &secs, &k, &n); err != nil {
			t.Fatal(err)
		}
		want := seed.Sweep[i]
		if b != int64(want.Batch) || inten != want.Intensity || !close(flops, want.TFLOPS*1e12) || !close(secs, want.LatencyMS/1e3) || k != 8192 || n != 8192 {
			t.Errorf("row %d: got B=%d I=%v %v FLOP/s %v s (k=%d n=%d); JSON B=%d I=%v %v TFLOP/s %v ms",
				i, b, inten, flops, secs, k, n, want.Batch, want.Intensity, want.TFLOPS, want.LatencyMS)
		}
	}
	if i != len(seed.Sweep) || i != 17 {
		t.Fatalf("read %d GEMM rows; JSON has %d", i, len(seed.Sweep))
	}
	var bw float64
	if err := db.QueryRow("SELECT bytes_per_s FROM read_parquet(" + glob(dir, rundir.TableProbeBandwidth) + ")").Scan(&bw); err != nil {
		t.Fatal(err)
	}
	if !close(bw, seed.BandwidthTBs*1e12) {
		t.Errorf("bandwidth %v, JSON %v TB/s", bw, seed.BandwidthTBs)
	}
	p := run.Manifest.Probe
	if !close(p.PeakFLOPPerS, seed.PeakTFLOPS*1e12) || !close(p.RidgeFLOPPerByte, seed.Ridge) || p.KneeBatch != seed.KneeBatch || p.PeakBatch != 2048 {
		t.Errorf("manifest probe %+v; JSON peak %v ridge %v knee %d", p, seed.PeakTFLOPS, seed.Ridge, seed.KneeBatch)
	}
	// The manifest itself is plain JSON that DuckDB reads too.
	var gpu string
	if err := db.QueryRow("SELECT gpus[1].name FROM read_json_auto('" + filepath.Join(dir, "manifest.json") + "')").Scan(&gpu); err != nil || !strings.Contains(gpu, "H200") {
		t.Errorf("manifest via DuckDB: %q, %v", gpu, err)
	}
}

// close compares unit conversions (x1e12, /1e3) to a few ulps.
func close(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Abs(b) }

// A server's error body with invalid UTF-8 still gives a table DuckDB
// reads: rundir writes U+FFFD in place of the bad bytes.
func TestInvalidUTF8ReadsInDuckDB(t *testing.T) {
	dir := t.TempDir()
	rows := []rundir.RequestRow{{RequestID: "0-0", Status: rundir.StatusHTTPError, Error: "HTTP 500: bad \xff\xfe body", FinishReason: "\xc3"}}
	if err := rundir.WriteTable(dir, rundir.TableRequests, rows); err != nil {
		t.Fatal(err)
	}
	var msg, finish string
	if err := openDB(t).QueryRow("SELECT error, finish_reason FROM read_parquet("+glob(dir, rundir.TableRequests)+")").Scan(&msg, &finish); err != nil {
		t.Fatal(err)
	}
	if msg != "HTTP 500: bad \uFFFD body" || finish != "\uFFFD" {
		t.Errorf("DuckDB read %q, %q", msg, finish)
	}
}
