// Package runtest holds what tests of many packages do with a run
// directory the code under test wrote.
package runtest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/rundir"
)

// Table reads every row of one table of the run in dir, and fails the test
// at once when the table cannot be read.
func Table[T any](tb testing.TB, dir, table string) []T {
	tb.Helper()
	rows, err := rundir.ReadTable[T](dir, table)
	if err != nil {
		tb.Fatal(err)
	}
	return rows
}

// Text is everything a run directory says, for greps: each file that is
// not a table part as it is, keyed by its path, and every table decoded,
// every column of every row, keyed by the table's folder (Parquet pages
// are compressed, so a grep of the raw part files would miss what is in
// them). A directory that is not there says nothing (a sweep that fails
// to start leaves none).
func Text(tb testing.TB, dir string) map[string]string {
	tb.Helper()
	out := map[string]string{}
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return out
	}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(path, ".parquet") {
			return err
		}
		data, err := os.ReadFile(path)
		out[path] = string(data)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	for _, table := range rundir.AllTables {
		rows, err := rundir.ReadRows(dir, table)
		if err != nil {
			tb.Fatal(err)
		}
		out[filepath.Join(dir, table)] = fmt.Sprintf("%+v", rows)
	}
	return out
}

// Count shows a nullable count of a run's row in a test's message: its
// value, or "none" when the row has none.
func Count(p *int64) any {
	if p == nil {
		return "none"
	}
	return *p
}
