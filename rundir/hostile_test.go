package rundir

import (
	"bytes"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// Strings from servers (error bodies, finish reasons) may be any bytes;
// Parquet strings must be UTF-8 or DuckDB and pyarrow refuse the file. The
// writer replaces invalid sequences with U+FFFD and keeps the rest.
func TestInvalidUTF8IsReplaced(t *testing.T) {
	dir := t.TempDir()
	rows := []RequestRow{
		{RequestID: "a", Status: StatusServerError, Error: "bad \xff\xfe bytes", FinishReason: "len\xc3"},
		{RequestID: "b", Status: StatusOK, Error: "größe 行"},
	}
	if err := WriteTable(dir, TableRequests, rows); err != nil {
		t.Fatal(err)
	}
	got, err := ReadTable[RequestRow](dir, TableRequests)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"bad \uFFFD bytes", "len\uFFFD", "größe 行"}
	for i, s := range []string{got[0].Error, got[0].FinishReason, got[1].Error} {
		if s != want[i] || !utf8.ValidString(s) {
			t.Errorf("string %d: got %q, want %q", i, s, want[i])
		}
	}
}

// FuzzReadParquet feeds arbitrary bytes to the Parquet reader as a part
// file: it must return rows or an error naming the file, never panic.
func FuzzReadParquet(f *testing.F) {
	dir := f.TempDir()
	rows := randomRows[RequestRow](rand.New(rand.NewPCG(3, 3)), 20)
	if err := WriteTable(dir, TableRequests, rows); err != nil {
		f.Fatal(err)
	}
	parts, _ := TableParts(dir, TableRequests)
	data, err := os.ReadFile(parts[0])
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Add(data[len(data)-64:])
	f.Add([]byte("PAR1PAR1"))
	f.Fuzz(func(t *testing.T, data []byte) {
		// decodeParquet is what ReadTable and ReadParquetFile run on each
		// file; reading from memory keeps the fuzzer fast.
		if _, err := decodeParquet[RequestRow](bytes.NewReader(data)); err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("error of several lines: %q", err)
		}
	})
}
