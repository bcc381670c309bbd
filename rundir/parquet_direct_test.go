package rundir

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sameRows decodes data with the direct reader and through Arrow and says
// where the two differ: rows, or errors.
func sameRows[T any](t *testing.T, name string, data []byte) {
	t.Helper()
	direct, derr := decodeParquetWith[T](bytes.NewReader(data), true)
	arrow, aerr := decodeParquetWith[T](bytes.NewReader(data), false)
	if (derr == nil) != (aerr == nil) || derr != nil && derr.Error() != aerr.Error() {
		t.Fatalf("%s: direct error %v, Arrow error %v", name, derr, aerr)
	}
	checkRows(t, name+", direct reader against Arrow", direct, arrow)
}

// Every table part of the bundled runs (written by several versions of
// headroom, some before columns were added) reads the same with the
// direct reader as through Arrow.
func TestDirectReaderMatchesArrow(t *testing.T) {
	check := map[string]func(*testing.T, string, []byte){
		TableProbeGEMM:      sameRows[ProbeGEMMRow],
		TableProbeBandwidth: sameRows[ProbeBandwidthRow],
		TableProbeModelGEMM: sameRows[ProbeModelGEMMRow],
		TableLevels:         sameRows[LevelRow],
		TableRequests:       sameRows[RequestRow],
		TableTokens:         sameRows[TokenRow],
		TableServerMetrics:  sameRows[ServerMetricRow],
		TableGPUTelemetry:   sameRows[GPUTelemetryRow],
		TableClientSamples:  sameRows[ClientSampleRow],
		TableServerLogLines: sameRows[ServerLogLineRow],
		TableLevelStats:     sameRows[LevelStatsRow],
		TableServerCPU:      sameRows[ServerCPURow],
		TableCPUEnergy:      sameRows[CPUEnergyRow],
	}
	files := 0
	eachTestdataPart(t, func(path string, data []byte) {
		if f, ok := check[filepath.Base(filepath.Dir(path))]; ok {
			f(t, path, data)
			files++
		}
	})
	if files < 500 {
		t.Fatalf("only %d table parts found under testdata", files)
	}
}

// eachTestdataPart calls fn with every table part under ../testdata (the
// bundled and recorded runs, and the damaged fixtures), read whole.
func eachTestdataPart(t *testing.T, fn func(path string, data []byte)) {
	t.Helper()
	err := filepath.WalkDir("../testdata", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, partSuffix) {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fn(path, data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The direct reader's errors are the Arrow path's: a null where the row
// type has no pointer, a column of another type, a column missing; and an
// int32 column fills an int64 field. Both encodings headroom writes:
// dictionary (a run's tables) and plain (the files of headroom index).
func TestDirectReaderErrors(t *testing.T) {
	for _, dict := range []bool{true, false} {
		directReaderErrors(t, dict)
	}
}

func directReaderErrors(t *testing.T, dict bool) {
	type nullable struct {
		A *int64  `parquet:"a"`
		B *string `parquet:"b"`
		C int32   `parquet:"c"`
	}
	one, two := int64(1), "two"
	var buf bytes.Buffer
	if err := encodeParquet(&buf, []nullable{{A: &one, C: 7}, {B: &two, C: -3}, {}}, "run-x", dict); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	type required struct {
		A int64 `parquet:"a"`
	}
	type misfit struct {
		B *float64 `parquet:"b"`
	}
	type missing struct {
		D bool `parquet:"d"`
	}
	type widened struct {
		C *int64 `parquet:"c"`
		A *int64 `parquet:"a"`
	}
	for name, f := range map[string]func(*testing.T, string, []byte){
		"required": sameRows[required], "misfit": sameRows[misfit], "missing": sameRows[missing],
		"widened": sameRows[widened], "nullable": sameRows[nullable],
	} {
		f(t, name, data)
	}
	got, err := decodeParquet[widened](bytes.NewReader(data))
	if err != nil || len(got) != 3 || *got[0].C != 7 || *got[1].C != -3 || *got[0].A != 1 || got[1].A != nil {
		t.Fatalf("widened: %v %+v", err, got)
	}
	for name, want := range map[string]string{
		"required": `column "a": null in non-nullable column at row 1`,
		"misfit":   `column "b": type string does not fit float64`,
		"missing":  `missing column "d"`,
	} {
		var err error
		switch name {
		case "required":
			_, err = decodeParquet[required](bytes.NewReader(data))
		case "misfit":
			_, err = decodeParquet[misfit](bytes.NewReader(data))
		case "missing":
			_, err = decodeParquet[missing](bytes.NewReader(data))
		}
		if err == nil || err.Error() != want {
			t.Errorf("%s: got %v, want %q", name, err, want)
		}
	}
}

// Columns of many pages and many batches (page and batch ends fall in
// different rows) read the same with the direct reader as through Arrow,
// in both encodings.
func TestDirectReaderManyPages(t *testing.T) {
	type row struct {
		S string  `parquet:"s"`
		N *int64  `parquet:"n"`
		F float64 `parquet:"f"`
	}
	rows := make([]row, 150_000)
	for i := range rows {
		rows[i].S = strings.Repeat("x", i%37) + fmt.Sprint(i)
		rows[i].F = float64(i) / 7
		if i%5 != 0 {
			n := int64(i) * 3
			rows[i].N = &n
		}
	}
	for _, dict := range []bool{true, false} {
		var buf bytes.Buffer
		if err := encodeParquet(&buf, rows, "", dict); err != nil {
			t.Fatal(err)
		}
		got, err := decodeParquet[row](bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		checkRows(t, fmt.Sprintf("dictionary %v", dict), got, rows)
		sameRows[row](t, fmt.Sprintf("dictionary %v", dict), buf.Bytes())
	}
}
