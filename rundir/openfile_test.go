package rundir

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// within runs f and fails the test if it has not returned after a minute:
// the bug is a reader that never returns, so the test must end anyway.
func within(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%s did not return: it blocks on the file", what)
		return nil
	}
}

// A named pipe or /dev/zero as a part file or as the manifest hung
// `headroom report` (issue 21 item 11): each is refused with one error
// naming the file and what it is.
func TestNonRegularFilesRefused(t *testing.T) {
	for _, c := range []struct {
		name  string
		plant func(path string) error
		kind  string
	}{
		{"named pipe", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "named pipe"},
		{"link to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }, "character device"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := WriteTable(dir, TableRequests, []RequestRow{{RequestID: "a", Status: StatusOK}}); err != nil {
				t.Fatal(err)
			}
			part := filepath.Join(dir, TableRequests, "part-00001.parquet")
			if err := c.plant(part); err != nil {
				t.Fatal(err)
			}
			err := within(t, "ReadTable", func() error { _, err := ReadTable[RequestRow](dir, TableRequests); return err })
			if err == nil || !strings.Contains(err.Error(), part) || !strings.Contains(err.Error(), c.kind) {
				t.Errorf("part file: %v", err)
			}

			mdir := t.TempDir()
			manifest := filepath.Join(mdir, ManifestFile)
			if err := c.plant(manifest); err != nil {
				t.Fatal(err)
			}
			err = within(t, "ReadManifest", func() error { _, err := ReadManifest(mdir); return err })
			if err == nil || !strings.Contains(err.Error(), manifest) || !strings.Contains(err.Error(), c.kind) || strings.Contains(err.Error(), "\n") {
				t.Errorf("manifest: %v", err)
			}
		})
	}
}

// A part named part-99999999999999999999.parquet was silently skipped
// (issue 21 item 11): a name headroom cannot have written is an error.
func TestUnreadablePartNumberIsAnError(t *testing.T) {
	for _, name := range []string{"part-99999999999999999999.parquet", "part--1.parquet", "part-+1.parquet", "part-.parquet"} {
		dir := t.TempDir()
		if err := WriteTable(dir, TableRequests, []RequestRow{{RequestID: "a", Status: StatusOK}}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, TableRequests, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadTable[RequestRow](dir, TableRequests)
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
	// other names in a table's folder are not parts, as before
	dir := t.TempDir()
	WriteTable(dir, TableRequests, []RequestRow{{RequestID: "a", Status: StatusOK}})
	os.WriteFile(filepath.Join(dir, TableRequests, "notes.txt"), nil, 0o644)
	if rows, err := ReadTable[RequestRow](dir, TableRequests); err != nil || len(rows) != 1 {
		t.Errorf("%d rows, %v", len(rows), err)
	}
}
