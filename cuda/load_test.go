package cuda

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenLibrarySearch checks the search order with throwaway libraries:
// the newest name first, in each directory in turn, and a file that exists
// but cannot be loaded reported as such.
func TestOpenLibrarySearch(t *testing.T) {
	dir1, dir2 := t.TempDir(), t.TempDir()
	src := filepath.Join(dir1, "x.c")
	if err := os.WriteFile(src, []byte("int headroom_test_symbol(void) { return 42; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lib1 := filepath.Join(dir2, "libheadroomsearch.so.1")
	if out, err := exec.Command("gcc", "-shared", "-fPIC", "-o", lib1, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	names := []string{"libheadroomsearch.so.2", "libheadroomsearch.so.1"}
	_, path, err := openLibrary("libheadroomsearch", names, "", "", []string{dir1, dir2}, "hint")
	if err != nil || path != lib1 {
		t.Fatalf("found %q, %v; want %s", path, err, lib1)
	}

	// A newer name that exists but is not a library: the search goes on to
	// the older name, and reports the broken file only if nothing loads.
	broken := filepath.Join(dir1, "libheadroomsearch.so.2")
	if err := os.WriteFile(broken, []byte("not an ELF file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, path, err = openLibrary("libheadroomsearch", names, "", "", []string{dir1, dir2}, "hint"); err != nil || path != lib1 {
		t.Fatalf("with a broken newer file: %q, %v", path, err)
	}
	_, _, err = openLibrary("libheadroomsearch", names[:1], "", "", []string{dir1, dir2}, "install it")
	if err == nil || !strings.Contains(err.Error(), broken+" exists but failed to load") || !strings.HasSuffix(err.Error(), ": install it") {
		t.Errorf("broken file error: %v", err)
	}
	_, _, err = openLibrary("libheadroomsearch.so.3", []string{"libheadroomsearch.so.3"}, "", "", []string{dir1}, "install it")
	if err == nil || err.Error() != "cuda: cannot load libheadroomsearch.so.3 (looked in: the loader path, "+dir1+"): install it" {
		t.Errorf("missing library error: %v", err)
	}
}
