package rundir

import (
	"bytes"
	"fmt"
)

// WriteParquetFile writes rows as one Parquet file at path (zstd, one row
// group, the same column mapping as the tables), atomically: a reader sees
// the old file or the new one, never half of it. It is for files outside a
// run directory, such as the runs.parquet index of `headroom compare`.
func WriteParquetFile[T any](path string, rows []T) error {
	var buf bytes.Buffer
	if err := encodeParquet(&buf, rows, "", false); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return writeFileAtomic(path, buf.Bytes())
}

// ReadParquetFile reads every row of one Parquet file into T, matching
// columns by name, as ReadTable does for a table's parts.
func ReadParquetFile[T any](path string) ([]T, error) {
	rows, err := decodeParquetFile[T](path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rows, nil
}
