package sqlcheck

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/headroom-llm/headroom/internal/duckfixture"
	"github.com/headroom-llm/headroom/rundir"
)

// Parquet written by another program (DuckDB), with the codecs and page
// layouts it offers, reads to exactly the values it was given: headroom's
// page reader takes the zstd and uncompressed files itself, the library the
// rest, and both must agree with the query, nulls included.
func TestForeignParquetReadsExactly(t *testing.T) {
	db := openDB(t)
	dir := t.TempDir()
	for _, opts := range []string{
		"COMPRESSION zstd",
		"COMPRESSION uncompressed",
		"COMPRESSION snappy",
		"COMPRESSION zstd, ROW_GROUP_SIZE 1024",
		"COMPRESSION zstd, PARQUET_VERSION V2",
		"COMPRESSION zstd, DICTIONARY_SIZE_LIMIT 1",
	} {
		path := filepath.Join(dir, "t.parquet")
		q := "COPY (" + duckfixture.Query + ") TO '" + path + "' (FORMAT parquet, " + opts + ")"
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", opts, err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := rundir.DecodeParquet[duckfixture.Row](data)
		if err != nil {
			t.Fatalf("%s: %v", opts, err)
		}
		if m := duckfixture.Mismatch(rows); m != "" {
			t.Fatalf("%s: %s", opts, m)
		}
	}
}
