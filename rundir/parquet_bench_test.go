package rundir

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkReadRequestsPart reads one run's requests part (160 rows) from
// memory, as an index of an archive reads every run's: the per-file cost
// that docs/performance.md's archive numbers are made of.
func BenchmarkReadRequestsPart(b *testing.B) {
	data := requestsPart(b)
	for _, direct := range []bool{true, false} {
		name := map[bool]string{true: "direct", false: "arrow"}[direct]
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := decodeParquetWith[RequestRow](bytes.NewReader(data), direct); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// requestsPart is a recorded run's requests part (160 rows, written by a
// sweep of the test engine).
func requestsPart(tb testing.TB) []byte {
	tb.Helper()
	parts, err := filepath.Glob("../testdata/runs/testengine-sequences/seq4-a/requests/*" + partSuffix)
	if err != nil || len(parts) == 0 {
		tb.Fatalf("no requests part: %v", err)
	}
	data, err := os.ReadFile(parts[0])
	if err != nil {
		tb.Fatal(err)
	}
	return data
}
