package rundir

import (
	"errors"
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

// WriteOutput replaces a file by a new one, and refuses a symbolic link or
// anything but a regular file at the path.
func TestWriteOutput(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "report.md")
	if err := WriteOutput(p, []byte("one")); err != nil {
		t.Fatal(err)
	}
	hard := filepath.Join(dir, "hard")
	os.Link(p, hard) // a hard link to the old file keeps the old content
	if err := WriteOutput(p, []byte("two")); err != nil {
		t.Fatal(err)
	}
	if a, _ := os.ReadFile(p); string(a) != "two" {
		t.Errorf("%q", a)
	}
	if b, _ := os.ReadFile(hard); string(b) != "one" {
		t.Errorf("the old file was written in place: %q", b)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("mine"), 0o644)
	link := filepath.Join(dir, "link.html")
	os.Symlink(victim, link)
	if err := WriteOutput(link, []byte("x")); !errors.Is(err, ErrSymlink) {
		t.Errorf("symlink: %v", err)
	}
	if v, _ := os.ReadFile(victim); string(v) != "mine" {
		t.Errorf("wrote through the link: %q", v)
	}
	os.Mkdir(filepath.Join(dir, "d.json"), 0o755)
	if err := WriteOutput(filepath.Join(dir, "d.json"), []byte("x")); err == nil {
		t.Error("replaced a directory")
	}
}
