package rundir

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// randomRows fills n rows of T with random values of every supported kind,
// including nulls, empty and non-ASCII strings and extreme numbers.
func randomRows[T any](rng *rand.Rand, n int) []T {
	rows := make([]T, n)
	strs := []string{"", "ok", "größe", "行", "a\x00b", strings.Repeat("x", 300), `"quoted",=`}
	for i := range rows {
		v := reflect.ValueOf(&rows[i]).Elem()
		for f := 0; f < v.NumField(); f++ {
			fv := v.Field(f)
			if fv.Kind() == reflect.Pointer {
				if rng.IntN(3) == 0 {
					continue // null
				}
				fv.Set(reflect.New(fv.Type().Elem()))
				fv = fv.Elem()
			}
			switch fv.Kind() {
			case reflect.Int32:
				fv.SetInt(int64(rng.Int32()) - math.MaxInt32/2)
			case reflect.Int64:
				fv.SetInt([]int64{0, -1, math.MaxInt64, math.MinInt64, rng.Int64()}[rng.IntN(5)])
			case reflect.Float64:
				fv.SetFloat([]float64{0, -0.5, 1e-300, 1e300, math.Inf(1), rng.NormFloat64()}[rng.IntN(6)])
			case reflect.String:
				fv.SetString(strs[rng.IntN(len(strs))])
			case reflect.Bool:
				fv.SetBool(rng.IntN(2) == 0)
			}
		}
	}
	return rows
}

func roundTrip[T any](t *testing.T, table string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, uint64(len(table))))
	dir := t.TempDir()
	want := randomRows[T](rng, 257)
	// Two parts, so reading concatenates in order.
	if err := WriteTable(dir, table, want[:100]); err != nil {
		t.Fatal(err)
	}
	if err := WriteTable(dir, table, want[100:]); err != nil {
		t.Fatal(err)
	}
	got, err := ReadTable[T](dir, table)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, table, got, want)
}

// checkRows fails the test where got and want differ: in length or in a
// row.
func checkRows[T any](t *testing.T, what string, got, want []T) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: read %d rows, want %d", what, len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("%s row %d:\n got %+v\nwant %+v", what, i, got[i], want[i])
		}
	}
}

// Every table's writer/reader pair must give back exactly what was written.
func TestTablesRoundTrip(t *testing.T) {
	roundTrip[ProbeGEMMRow](t, TableProbeGEMM)
	roundTrip[ProbeBandwidthRow](t, TableProbeBandwidth)
	roundTrip[ProbeModelGEMMRow](t, TableProbeModelGEMM)
	roundTrip[LevelRow](t, TableLevels)
	roundTrip[RequestRow](t, TableRequests)
	roundTrip[TokenRow](t, TableTokens)
	roundTrip[ServerMetricRow](t, TableServerMetrics)
	roundTrip[GPUTelemetryRow](t, TableGPUTelemetry)
	roundTrip[ClientSampleRow](t, TableClientSamples)
	roundTrip[ServerLogLineRow](t, TableServerLogLines)
	roundTrip[LevelStatsRow](t, TableLevelStats)
}

func TestMissingTableReadsEmpty(t *testing.T) {
	rows, err := ReadTable[RequestRow](t.TempDir(), TableRequests)
	if err != nil || len(rows) != 0 {
		t.Fatalf("got %d rows, err %v; want none, nil", len(rows), err)
	}
}

func TestTableWriterLifecycle(t *testing.T) {
	dir := t.TempDir()
	w, err := NewTableWriter[TokenRow](dir, TableTokens, 5*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				w.Add(TokenRow{RequestID: string(rune('a' + g)), Index: int32(i)})
			}
		}(g)
	}
	wg.Wait()
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := w.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
	w.Add(TokenRow{})
	if err := w.Stop(); err == nil {
		t.Fatal("Add after Stop was not reported")
	}
	rows, err := ReadTable[TokenRow](dir, TableTokens)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4000 {
		t.Fatalf("read %d rows, want 4000", len(rows))
	}
	// Per goroutine the order of Add is kept.
	last := map[string]int32{}
	for _, r := range rows {
		if prev, ok := last[r.RequestID]; ok && r.Index != prev+1 {
			t.Fatalf("request %s: index %d after %d", r.RequestID, r.Index, prev)
		}
		last[r.RequestID] = r.Index
	}

	// A new writer on the same table continues after the existing parts.
	before, _ := TableParts(dir, TableTokens)
	if err := WriteTable(dir, TableTokens, []TokenRow{{RequestID: "z"}}); err != nil {
		t.Fatal(err)
	}
	after, _ := TableParts(dir, TableTokens)
	if len(after) != len(before)+1 {
		t.Fatalf("parts: %d then %d, want one more", len(before), len(after))
	}
	rows, _ = ReadTable[TokenRow](dir, TableTokens)
	if rows[len(rows)-1].RequestID != "z" {
		t.Fatalf("appended row is not last")
	}
}

func TestFlushFailureIsReportedAndRetried(t *testing.T) {
	dir := t.TempDir()
	w, err := NewTableWriter[ServerLogLineRow](dir, TableServerLogLines, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Add(ServerLogLineRow{Line: 1, RecvNS: 10})
	tdir := filepath.Join(dir, TableServerLogLines)
	if err := os.Chmod(tdir, 0o500); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// root ignores directory permissions; replace the folder by a file instead.
		os.Chmod(tdir, 0o755)
		os.RemoveAll(tdir)
		os.WriteFile(tdir, nil, 0o644)
	}
	if err := w.Flush(); err == nil {
		t.Fatal("flush into an unwritable table succeeded")
	}
	os.Remove(tdir)
	os.Chmod(tdir, 0o755)
	os.MkdirAll(tdir, 0o755)
	err = w.Stop()
	if err == nil {
		t.Fatal("Stop did not return the earlier write error")
	}
	rows, rerr := ReadTable[ServerLogLineRow](dir, TableServerLogLines)
	if rerr != nil || len(rows) != 1 || rows[0].RecvNS != 10 {
		t.Fatalf("rows after retry: %+v, %v (want the one row kept and written by Stop)", rows, rerr)
	}
}

func TestCorruptPartNamesFile(t *testing.T) {
	dir := t.TempDir()
	rows := randomRows[RequestRow](rand.New(rand.NewPCG(7, 7)), 50)
	if err := WriteTable(dir, TableRequests, rows); err != nil {
		t.Fatal(err)
	}
	parts, _ := TableParts(dir, TableRequests)
	data, err := os.ReadFile(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{
		"truncated":   data[:len(data)/2],
		"empty":       nil,
		"not parquet": []byte("this is a CSV file,1,2,3\n"),
		"bad footer":  append(append([]byte{}, data[:len(data)-8]...), 0xff, 0xff, 0xff, 0x7f, 'P', 'A', 'R', '1'),
	}
	// Flipped bytes in the middle: whatever the reader makes of them, it must
	// not panic (the error may or may not be detected by checksums).
	for i := 0; i < 40; i++ {
		d := append([]byte{}, data...)
		for j := 0; j < 8; j++ {
			d[4+(i*131+j*977)%(len(d)-12)] ^= 0x5a
		}
		cases["flipped "+string(rune('A'+i))] = d
	}
	for name, bad := range cases {
		if err := os.WriteFile(parts[0], bad, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadTable[RequestRow](dir, TableRequests)
		if strings.HasPrefix(name, "flipped") {
			if err != nil && !strings.Contains(err.Error(), parts[0]) {
				t.Errorf("%s: error does not name the file: %v", name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if !strings.Contains(err.Error(), parts[0]) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: want one line naming %s, got %q", name, parts[0], err)
		}
	}
}

func TestMissingColumnIsError(t *testing.T) {
	type narrow struct {
		Line int64 `parquet:"line"`
	}
	dir := t.TempDir()
	if err := WriteTable(dir, TableServerLogLines, []narrow{{1}}); err != nil {
		t.Fatal(err)
	}
	_, err := ReadTable[ServerLogLineRow](dir, TableServerLogLines)
	if err == nil || !strings.Contains(err.Error(), `missing column "recv_ns"`) {
		t.Fatalf("got %v, want missing column error", err)
	}
}

func TestUnsupportedRowType(t *testing.T) {
	type bad struct {
		When complex128 `parquet:"when"`
	}
	err := WriteTable(t.TempDir(), "x", []bad{{}})
	if err == nil || !strings.Contains(err.Error(), "unsupported column type") {
		t.Fatalf("got %v", err)
	}
}

func TestFindRuns(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a/run1", "a/run2", "b/c/run3"} {
		if _, err := Create(filepath.Join(root, d), &Manifest{}); err != nil {
			t.Fatal(err)
		}
	}
	// A folder inside a run that looks like a run is not listed separately.
	os.MkdirAll(filepath.Join(root, "a/run1/nested"), 0o755)
	os.WriteFile(filepath.Join(root, "a/run1/nested", ManifestFile), []byte("{}"), 0o644)
	got, err := FindRuns(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, "a/run1"), filepath.Join(root, "a/run2"), filepath.Join(root, "b/c/run3")}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if _, err := Open(filepath.Join(root, "b")); !errors.Is(err, ErrNotRun) {
		t.Fatalf("Open on a non-run: %v", err)
	}
}

// ReadRows gives every table's rows as its own row type, and refuses a
// name that is no table.
func TestReadRows(t *testing.T) {
	dir := t.TempDir()
	want := randomRows[RequestRow](rand.New(rand.NewPCG(3, 4)), 5)
	if err := WriteTable(dir, TableRequests, want); err != nil {
		t.Fatal(err)
	}
	got, err := ReadRows(dir, TableRequests)
	if err != nil || !reflect.DeepEqual(got, any(want)) {
		t.Fatalf("ReadRows(requests) = %+v, %v; want the 5 rows written", got, err)
	}
	for _, table := range AllTables {
		rows, err := ReadRows(dir, table)
		if err != nil {
			t.Fatal(err)
		}
		if typ := reflect.TypeOf(rows); typ.Kind() != reflect.Slice || !strings.HasSuffix(typ.Elem().Name(), "Row") {
			t.Errorf("ReadRows(%s) is a %v, want a slice of the table's row type", table, typ)
		}
	}
	if _, err := ReadRows(dir, "request"); err == nil || !strings.Contains(err.Error(), "request") {
		t.Errorf("ReadRows of no table: %v, want an error naming it", err)
	}
}
