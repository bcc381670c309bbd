// Package examples bundles real recorded runs into the binary, for
// `headroom demo` and for tests. Every run here was measured, not made up;
// each one's manifest says what it is and where it came from.
package examples

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

//go:embed all:runs
var runs embed.FS

// Example is one bundled run.
type Example struct {
	Name        string
	Description string
}

// List names the bundled runs, with a line on each.
var List = []Example{
	{"sweep-testengine", "a real sweep of headroom's CPU test engine (llama.cpp, random-weight model) on 2 cores: knee, KV wall, queue"},
	{"h200-probe", "NVIDIA H200 roofline measured by the seed's script 01 (PyTorch), imported: the hardware ceiling only"},
}

// Default is the example `headroom demo` shows without --example.
const Default = "sweep-testengine"

// Extract writes the named example run into dir (which must not exist or
// be empty) and returns the run directory's path.
func Extract(name, dir string) (string, error) {
	root := "runs/" + name
	if _, err := fs.Stat(runs, root+"/manifest.json"); err != nil {
		return "", fmt.Errorf("no bundled example %q (have: %s)", name, names())
	}
	err := fs.WalkDir(runs, root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		dst := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := runs.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, data, 0o644)
	})
	return dir, err
}

func names() string {
	var n []string
	for _, e := range List {
		n = append(n, e.Name)
	}
	sort.Strings(n)
	return fmt.Sprint(n)
}
