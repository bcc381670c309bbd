package rundir

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
)

type idRow struct {
	RunID string `parquet:"run_id"`
	X     int64  `parquet:"x"`
}

type plainRow struct {
	X int64 `parquet:"x"`
}

func TestNewRunsGetAnID(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	ra, err := Create(a, &Manifest{Kinds: []string{KindSweep}})
	if err != nil {
		t.Fatal(err)
	}
	rb, _ := Create(b, &Manifest{Kinds: []string{KindSweep}})
	id, err := uuid.Parse(ra.Manifest.RunID)
	if err != nil || id.Version() != 7 || ra.Manifest.RunID == rb.Manifest.RunID {
		t.Fatalf("run ids %q and %q (%v)", ra.Manifest.RunID, rb.Manifest.RunID, err)
	}
	got, _ := ReadManifest(a)
	if got.RunID != ra.Manifest.RunID || got.FormatVersion != 2 {
		t.Fatalf("read back %q version %d", got.RunID, got.FormatVersion)
	}
	// Every part of a table in the run carries the id; a row type with a
	// run_id of its own is not given a second one.
	if err := WriteTable(a, "t", []plainRow{{1}, {2}}); err != nil {
		t.Fatal(err)
	}
	rows, err := ReadTable[idRow](a, "t")
	if err != nil || len(rows) != 2 || rows[1].RunID != ra.Manifest.RunID || rows[1].X != 2 {
		t.Fatalf("%+v %v", rows, err)
	}
	if err := WriteTable(a, "u", []idRow{{"own", 1}}); err != nil {
		t.Fatal(err)
	}
	own, err := ReadTable[idRow](a, "u")
	if err != nil || own[0].RunID != "own" {
		t.Fatalf("%+v %v", own, err)
	}
	// Outside a run (no manifest) there is no id to write.
	out := filepath.Join(t.TempDir(), "x.parquet")
	if err := WriteParquetFile(out, []plainRow{{1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadParquetFile[idRow](out); err == nil || !strings.Contains(err.Error(), `missing column "run_id"`) {
		t.Fatalf("a file outside a run: %v", err)
	}
}

// A format-1 run has no run_id: the id derived for it is the same on every
// read and in every copy, differs between runs, and is recorded when the
// manifest is rewritten.
func TestFormat1RunsGetAStableID(t *testing.T) {
	v1 := `{"format_version": 1, "kinds": ["sweep"], "start_time": "2026-11-30T12:00:00.123456789Z",
  "complete": true, "host": {"hostname": "box"}, "engine": {"name": "vllm", "base_url": "http://a:8000/v1", "model": "m"}}`
	dirs := []string{t.TempDir(), t.TempDir()}
	for _, d := range dirs {
		os.WriteFile(filepath.Join(d, ManifestFile), []byte(v1), 0o644)
	}
	m1, err := ReadManifest(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	m2, _ := ReadManifest(dirs[1])
	if m1.RunID == "" || m1.RunID != m2.RunID || m1.FormatVersion != 1 {
		t.Fatalf("derived ids %q and %q", m1.RunID, m2.RunID)
	}
	other := strings.Replace(v1, "123456789Z", "123456788Z", 1)
	os.WriteFile(filepath.Join(dirs[1], ManifestFile), []byte(other), 0o644)
	if m3, _ := ReadManifest(dirs[1]); m3.RunID == m1.RunID {
		t.Fatalf("runs a nanosecond apart share id %q", m1.RunID)
	}
	r, err := Open(dirs[0])
	if err != nil {
		t.Fatal(err)
	}
	r.Manifest.EndTime = time.Now()
	if err := r.SaveManifest(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dirs[0], ManifestFile))
	if !strings.Contains(string(data), `"run_id": "`+m1.RunID+`"`) {
		t.Fatalf("rewritten manifest lacks the derived id:\n%s", data)
	}
}

func TestRequestID(t *testing.T) {
	if got := RequestID("", 2, 7); got != "2-7" {
		t.Errorf("no run id: %q", got)
	}
	if got := RequestID("0192", 2, 7); got != "0192-2-7" {
		t.Errorf("%q", got)
	}
}

// The dataset's column types (columns_ext.go) round-trip.
func TestExtendedColumns(t *testing.T) {
	type row struct {
		When  time.Time         `parquet:"when"`
		Never time.Time         `parquet:"never"`
		Tags  map[string]string `parquet:"tags"`
		Ints  []int64           `parquet:"ints"`
		Rates []float64         `parquet:"rates"`
		Names []string          `parquet:"names"`
	}
	at := time.Date(2026, 11, 30, 12, 0, 0, 123456000, time.UTC)
	in := []row{{When: at, Tags: map[string]string{"b": "2", "a": ""}, Ints: []int64{1, 64}, Rates: []float64{0.5}, Names: []string{"x"}}, {}}
	data, err := EncodeParquet(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := DecodeParquet[row](data)
	if err != nil {
		t.Fatal(err)
	}
	if !out[0].When.Equal(at) || !out[0].Never.IsZero() || out[0].Tags["b"] != "2" || len(out[0].Tags) != 2 ||
		len(out[0].Ints) != 2 || out[0].Ints[1] != 64 || out[0].Rates[0] != 0.5 || out[0].Names[0] != "x" || len(out[1].Tags) != 0 {
		t.Fatalf("%+v", out)
	}
}

// Rows encoded in parts are the rows of the parts in turn, every column
// type among them (the plain ones read at their offsets, nulls, times, the
// types through reflection), and the file is the one EncodeParquet writes
// of the same rows in one slice.
func TestEncodeParquetParts(t *testing.T) {
	type row struct {
		I32  int32             `parquet:"i32"`
		I64  int64             `parquet:"i64"`
		F    float64           `parquet:"f"`
		S    string            `parquet:"s"`
		B    bool              `parquet:"b"`
		PI   *int64            `parquet:"pi"`
		PF   *float64          `parquet:"pf"`
		PS   *string           `parquet:"ps"`
		PI32 *int32            `parquet:"pi32"`
		PB   *bool             `parquet:"pb"`
		When time.Time         `parquet:"when"`
		Tags map[string]string `parquet:"tags"`
		Ints []int64           `parquet:"ints"`
	}
	at := time.Date(2026, 12, 2, 7, 0, 0, 5000, time.UTC)
	seven, half, word, three, yes := int64(7), 0.5, "w\xffx", int32(3), true
	parts := [][]row{
		{{I32: -1, I64: 1 << 40, F: 1.25, S: "a", B: true, PI: &seven, When: at, Tags: map[string]string{"k": "v"}, Ints: []int64{2}}},
		nil,
		{{I32: 2, S: "b", PF: &half, PS: &word, PI32: &three, PB: &yes}, {I64: -5, F: -0.5}},
	}
	data, err := EncodeParquetParts(parts)
	if err != nil {
		t.Fatal(err)
	}
	all := slices.Concat(parts...)
	one, err := EncodeParquet(all)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, one) {
		t.Error("the parts' file differs from the file of the rows in one slice")
	}
	out, err := DecodeParquet[row](data)
	if err != nil {
		t.Fatal(err)
	}
	all[1].PS = ptrTo("w\uFFFDx") // invalid UTF-8 is written as U+FFFD
	if len(out) != 3 {
		t.Fatalf("%d rows, want 3", len(out))
	}
	for i := range out {
		w, g := all[i], out[i]
		if g.I32 != w.I32 || g.I64 != w.I64 || g.F != w.F || g.S != w.S || g.B != w.B || !g.When.Equal(w.When) ||
			!eqPtr(g.PI, w.PI) || !eqPtr(g.PF, w.PF) || !eqPtr(g.PS, w.PS) || !eqPtr(g.PI32, w.PI32) || !eqPtr(g.PB, w.PB) ||
			len(g.Tags) != len(w.Tags) || g.Tags["k"] != w.Tags["k"] || !slices.Equal(g.Ints, w.Ints) {
			t.Errorf("row %d: got %+v, want %+v", i, g, w)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

func eqPtr[T comparable](a, b *T) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}
