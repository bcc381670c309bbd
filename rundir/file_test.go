package rundir

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestParquetFileRoundTrip(t *testing.T) {
	type row struct {
		Name  string   `parquet:"name"`
		N     int64    `parquet:"n"`
		Maybe *float64 `parquet:"maybe_s"`
	}
	half := 0.5
	rows := []row{{"a", 1, &half}, {"b", 2, nil}}
	p := filepath.Join(t.TempDir(), "x.parquet")
	if err := WriteParquetFile(p, rows); err != nil {
		t.Fatal(err)
	}
	got, err := ReadParquetFile[row](p)
	if err != nil || !reflect.DeepEqual(got, rows) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v", st.Mode())
	}
	if err := WriteParquetFile(filepath.Join(t.TempDir(), "no", "dir", "x.parquet"), rows); err == nil {
		t.Error("write into a missing directory succeeded")
	}
	if _, err := ReadParquetFile[row](filepath.Join(t.TempDir(), "missing.parquet")); err == nil {
		t.Error("read of a missing file succeeded")
	}
}
