package rundir

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/headroom-llm/headroom/internal/duckfixture"
)

// The hybrid decoder against the Parquet spec's examples: the bit-packed
// run of 0..7 at width 3 (bytes 10001000 11000110 11111010), an RLE run,
// and a bit-packed run whose last group's unused bytes were left out.
func TestHybridDecoder(t *testing.T) {
	cases := []struct {
		name  string
		b     []byte
		width uint
		want  []uint32
	}{
		{"spec bit-packed 0..7", []byte{0x03, 0x88, 0xc6, 0xfa}, 3, []uint32{0, 1, 2, 3, 4, 5, 6, 7}},
		{"rle 5 × 1 then bit-packed", []byte{0x0a, 0x01, 0x03, 0b10110010}, 1, []uint32{1, 1, 1, 1, 1, 0, 1, 0, 0, 1, 1, 0, 1}},
		{"rle of a 2-byte value", []byte{0x04, 0x34, 0x12}, 13, []uint32{0x1234, 0x1234}},
		{"truncated last group", []byte{0x03, 0x88}, 3, []uint32{0, 1}},
		{"width 0", []byte{0x03}, 0, []uint32{0, 0, 0, 0, 0, 0, 0, 0}},
	}
	for _, c := range cases {
		h := hybrid{b: c.b, width: c.width}
		var got []uint32
		for range len(c.want) {
			v, err := h.next()
			if err != nil {
				t.Fatalf("%s: after %v: %v", c.name, got, err)
			}
			got = append(got, v)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
		if _, err := h.next(); !errors.Is(err, errRuns) {
			t.Errorf("%s: a value past the runs: %v, want %v", c.name, err, errRuns)
		}
	}
}

// Every column chunk of the bundled runs' table parts is one the page
// reader reads itself (none left to the library), each to the count of
// values its metadata gives: TestDirectReaderMatchesArrow then says that
// what it reads is what Arrow reads.
func TestPageReaderTakesHeadroomsParts(t *testing.T) {
	chunks := 0
	eachTestdataPart(t, func(path string, data []byte) {
		if strings.Contains(path, "hostile") {
			return
		}
		if _, err := file.NewParquetReader(bytes.NewReader(data)); err != nil {
			return // not a part this test is about (the corrupt fixtures)
		}
		for _, c := range chunksByPages(t, data) {
			if c.err != nil || c.levels != c.cc.NumValues() {
				t.Fatalf("%s: column %s: %d values read (%v), the metadata says %d", path, c.cc.PathInSchema(), c.levels, c.err, c.cc.NumValues())
			}
			chunks++
		}
	})
	if chunks < 5000 {
		t.Fatalf("only %d column chunks read", chunks)
	}
}

// FuzzPageChunk feeds arbitrary bytes to the page reader as a column
// chunk (its pages, headers included): it must return values or an
// error, never panic, hang or allocate without bound. It calls the reader
// directly, outside decodeParquet's recover, so that a panic of its own
// is seen. The first byte picks the codec, the definition level and the
// value type; the seeds are the chunks of a run's requests part.
func FuzzPageChunk(f *testing.F) {
	data := requestsPart(f)
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		f.Fatal(err)
	}
	rg := pf.RowGroup(0)
	for i := 0; i < pf.MetaData().Schema.NumColumns(); i++ {
		cc, err := rg.MetaData().ColumnChunk(i)
		if err != nil {
			f.Fatal(err)
		}
		start := chunkStart(cc)
		descr := pf.MetaData().Schema.Column(i)
		sel := byte(descr.PhysicalType())<<2 | byte(descr.MaxDefinitionLevel())<<1 | 1 // zstd
		f.Add(append([]byte{sel}, data[start:start+cc.TotalCompressedSize()]...))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		sel, chunk := data[0], data[1:]
		codec := compress.Codecs.Uncompressed
		if sel&1 == 1 {
			codec = compress.Codecs.Zstd
		}
		typ := parquet.Type(sel >> 2 % 8)
		if !slices.Contains(pageReaderTypes, typ) {
			typ = parquet.Types.ByteArray
		}
		_, err := drainAs(typ, chunkSource{raw: chunk, codec: codec, maxDef: int16(sel >> 1 & 1)}, &directBuffers{})
		if errors.Is(err, errMoreValuesThanLevels) {
			t.Fatal(err)
		}
	})
}

// Files the page reader does not take whole (version 2 data pages, which
// it meets mid-chunk; snappy, which it sees in the metadata; a page
// size small enough for many pages a chunk, with and without a
// dictionary) read the same as through Arrow: the first by the Arrow path
// for the whole file, the second by the library's column reader, the
// others by the page reader.
func TestPageReaderLeavesOtherFilesToTheLibrary(t *testing.T) {
	rows := randomRows[RequestRow](rand.New(rand.NewPCG(5, 5)), 3000)
	c, err := codecFor[RequestRow]()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		props []parquet.WriterProperty
		want  error // what the page reader makes of the first column
	}{
		{"version 2 pages", []parquet.WriterProperty{parquet.WithDataPageVersion(parquet.DataPageV2), parquet.WithCompression(compress.Codecs.Zstd)}, errNeedLibrary},
		{"snappy", []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Snappy)}, errNeedLibrary},
		{"small pages, dictionary", []parquet.WriterProperty{parquet.WithDataPageSize(512), parquet.WithCompression(compress.Codecs.Zstd)}, nil},
		{"small pages, plain", []parquet.WriterProperty{parquet.WithDataPageSize(512), parquet.WithDictionaryDefault(false)}, nil},
	} {
		var buf bytes.Buffer
		b := array.NewRecordBuilder(memory.DefaultAllocator, c.schema)
		for i, f := range c.fields {
			appendColumn(b.Field(i), f, rows)
		}
		rec := b.NewRecordBatch()
		fw, err := pqarrow.NewFileWriter(c.schema, &buf, parquet.NewWriterProperties(tc.props...), pqarrow.DefaultWriterProps())
		if err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(fw.Write(rec), fw.Close()); err != nil {
			t.Fatal(err)
		}
		rec.Release()
		b.Release()
		if err := chunksByPages(t, buf.Bytes())[0].err; !errors.Is(err, tc.want) {
			t.Fatalf("%s: the page reader on the first column: %v, want %v", tc.name, err, tc.want)
		}
		sameRows[RequestRow](t, tc.name, buf.Bytes())
		got, err := decodeParquet[RequestRow](bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		checkRows(t, tc.name, got, rows)
	}
}

// Files written by DuckDB (testdata/duckdb): its zstd file is read by the
// page reader, every chunk; its version-2 encodings are left to the
// library; both read the same as through Arrow.
func TestPageReaderOnDuckDBFiles(t *testing.T) {
	for name, want := range map[string]error{"zstd.parquet": nil, "v2-encodings.parquet": errNeedLibrary} {
		data, err := os.ReadFile(filepath.Join("testdata", "duckdb", name))
		if err != nil {
			t.Fatal(err)
		}
		var first error
		for _, c := range chunksByPages(t, data) {
			if c.err != nil && !errors.Is(c.err, errNeedLibrary) {
				t.Fatalf("%s: %v", name, c.err)
			}
			first = cmp.Or(first, c.err)
		}
		if first != want {
			t.Errorf("%s: the page reader says %v, want %v", name, first, want)
		}
		sameRows[duckfixture.Row](t, name, data)
		rows, err := decodeParquet[duckfixture.Row](bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if m := duckfixture.Mismatch(rows); m != "" {
			t.Fatalf("%s: %s", name, m)
		}
	}
}

// chunkRead is what the page reader made of one column chunk: how many
// levels it read, and its error.
type chunkRead struct {
	cc     *metadata.ColumnChunkMetaData
	levels int64
	err    error
}

// chunksByPages reads every flat column chunk of a file with the page
// reader.
func chunksByPages(t *testing.T, data []byte) []chunkRead {
	t.Helper()
	pf, err := file.NewParquetReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	fm := pf.MetaData()
	b := &directBuffers{}
	var out []chunkRead
	for g := 0; g < pf.NumRowGroups(); g++ {
		for i := 0; i < fm.Schema.NumColumns(); i++ {
			cc, err := pf.RowGroup(g).MetaData().ColumnChunk(i)
			if err != nil {
				t.Fatal(err)
			}
			d := fm.Schema.Column(i)
			if d.MaxDefinitionLevel() > 1 {
				continue // nested: not a column the direct reader takes
			}
			if !slices.Contains(pageReaderTypes, d.PhysicalType()) {
				continue
			}
			c := chunkRead{cc: cc}
			c.levels, c.err = drainAs(d.PhysicalType(), chunkSource{data: data, fm: fm, cc: cc, maxDef: d.MaxDefinitionLevel()}, b)
			out = append(out, c)
		}
	}
	return out
}

// pageReaderTypes are the physical types the page reader reads.
var pageReaderTypes = []parquet.Type{parquet.Types.Int32, parquet.Types.Int64, parquet.Types.Double, parquet.Types.Boolean, parquet.Types.ByteArray}

// chunkSource is a column chunk for the page reader: one of a file (data,
// its footer fm and the chunk's metadata cc), opened as the reader opens
// it, or raw pages with their codec (the fuzz target's).
type chunkSource struct {
	data  []byte
	fm    *metadata.FileMetaData
	cc    *metadata.ColumnChunkMetaData
	raw   []byte
	codec compress.Compression

	maxDef int16
}

var errMoreValuesThanLevels = errors.New("more values than levels in a batch")

// drainAs reads a chunk of physical type typ (one of pageReaderTypes) with
// the page reader to its end and says how many levels it read.
func drainAs(typ parquet.Type, src chunkSource, b *directBuffers) (int64, error) {
	switch typ {
	case parquet.Types.Int32:
		return drain(src, plainInt32, b)
	case parquet.Types.Int64:
		return drain(src, plainInt64, b)
	case parquet.Types.Double:
		return drain(src, plainFloat64, b)
	case parquet.Types.Boolean:
		return drain(src, plainBool, b)
	case parquet.Types.ByteArray:
		return drain(src, plainByteArray, b)
	}
	return 0, fmt.Errorf("physical type %v is not the page reader's", typ)
}

func drain[V any](src chunkSource, plain func(*plainCursor) (V, bool), b *directBuffers) (int64, error) {
	var pc *pageChunk[V]
	if src.cc != nil {
		var err error
		if pc, err = newPageChunk(bytes.NewReader(src.data), src.fm, src.cc, src.maxDef, plain, b); err != nil {
			return 0, err
		}
	} else {
		pc = &pageChunk[V]{rest: src.raw, codec: src.codec, maxDef: src.maxDef, plain: plain, chunkLeft: 1 << 16, bufs: b}
	}
	defer pc.Close()
	vals, defs := make([]V, 64), make([]int16, 64)
	var n int64
	for pc.HasNext() {
		lv, nv, err := pc.ReadBatch(64, vals, defs, nil)
		if err != nil || lv == 0 {
			return n, err
		}
		if nv > int(lv) {
			return n, fmt.Errorf("%w: %d values for %d levels", errMoreValuesThanLevels, nv, lv)
		}
		n += lv
	}
	return n, nil
}
