package rundir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// A rowCodec maps a row struct type to an Arrow schema and back. Columns
// come from `parquet:"name"` tags; supported field types are int32, int64,
// float64, string and bool, and pointers to those for nullable columns.
type rowCodec struct {
	schema *arrow.Schema
	fields []codecField
}

type codecField struct {
	index    int // struct field index
	name     string
	kind     reflect.Kind
	nullable bool
	ext      bool    // a type of columns_ext.go: time, map, list
	offset   uintptr // the field's offset in the struct (encodeParquet)
	time     bool    // a time.Time field (not a pointer)
}

var codecs sync.Map // reflect.Type -> *rowCodec

func codecFor[T any]() (*rowCodec, error) {
	t := reflect.TypeFor[T]()
	if c, ok := codecs.Load(t); ok {
		return c.(*rowCodec), nil
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("rundir: row type %v is not a struct", t)
	}
	c := &rowCodec{}
	var afields []arrow.Field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := f.Tag.Get("parquet")
		if name == "" || name == "-" {
			continue
		}
		ft, nullable := f.Type, false
		if ft.Kind() == reflect.Pointer {
			ft, nullable = ft.Elem(), true
		}
		var dt arrow.DataType
		if x, ok := extendedType(ft); ok {
			c.fields = append(c.fields, codecField{index: i, name: name, kind: ft.Kind(), nullable: nullable, ext: true,
				offset: f.Offset, time: ft == timeType && !nullable})
			afields = append(afields, arrow.Field{Name: name, Type: x, Nullable: nullable || ft == timeType})
			continue
		}
		switch ft.Kind() {
		case reflect.Int32:
			dt = arrow.PrimitiveTypes.Int32
		case reflect.Int64:
			dt = arrow.PrimitiveTypes.Int64
		case reflect.Float64:
			dt = arrow.PrimitiveTypes.Float64
		case reflect.String:
			dt = arrow.BinaryTypes.String
		case reflect.Bool:
			dt = arrow.FixedWidthTypes.Boolean
		default:
			return nil, fmt.Errorf("rundir: %v.%s: unsupported column type %v", t, f.Name, f.Type)
		}
		c.fields = append(c.fields, codecField{index: i, name: name, kind: ft.Kind(), nullable: nullable, offset: f.Offset})
		afields = append(afields, arrow.Field{Name: name, Type: dt, Nullable: nullable})
	}
	c.schema = arrow.NewSchema(afields, nil)
	codecs.Store(t, c)
	return c, nil
}

// writerProps are the Parquet settings of every file: zstd, statistics on,
// and dictionary encoding where dict says. A run's tables keep it; the
// files written for other programs to query (EncodeParquet,
// WriteParquetFile: the dataset of `headroom index`, runs.parquet) do not:
// those are many files of a few thousand rows, most of whose columns hold
// distinct values (ids, times, latencies), and there a dictionary page per
// column chunk made the files larger (the 100-run dataset 1.20 MB against
// 0.96 MB plain) and cost a third of the write's CPU (docs/performance.md,
// "Archives at scale").
func writerProps(dict bool) *parquet.WriterProperties {
	return parquet.NewWriterProperties(
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithCreatedBy("headroom"),
		parquet.WithStats(true),
		parquet.WithDictionaryDefault(dict),
	)
}

// maxPageBytes bounds a page's declared size when reading. headroom's
// writer makes pages of about 1 MiB; a damaged header declaring gigabytes
// must be an error, not an allocation that takes the machine's memory.
const maxPageBytes = 64 << 20

// readerProps are the reader settings, with buffers from mem.
func readerProps(mem memory.Allocator) *parquet.ReaderProperties {
	p := parquet.NewReaderProperties(mem)
	p.MaxCompressedPageSize, p.MaxUncompressedPageSize = maxPageBytes, maxPageBytes
	return p
}

// encodeParquet writes rows as one Parquet file (one row group) to w, with
// dictionary encoding when dict is set (see writerProps). With a runID, the
// file's first column is run_id holding it on every row (see RunIDColumn),
// unless T has a run_id column of its own.
func encodeParquet[T any](w io.Writer, rows []T, runID string, dict bool) error {
	return encodeParquetParts(w, [][]T{rows}, runID, dict)
}

// encodeParquetParts is encodeParquet of the rows of every part in turn,
// as one file, without first copying them into one slice.
func encodeParquetParts[T any](w io.Writer, parts [][]T, runID string, dict bool) error {
	c, err := codecFor[T]()
	if err != nil {
		return err
	}
	n := 0
	for _, rows := range parts {
		n += len(rows)
	}
	schema, first := c.schema, 0
	if runID != "" && len(schema.FieldIndices(RunIDColumn)) == 0 {
		fields := append([]arrow.Field{{Name: RunIDColumn, Type: arrow.BinaryTypes.String}}, schema.Fields()...)
		schema, first = arrow.NewSchema(fields, nil), 1
	}
	mem := memory.DefaultAllocator
	b := array.NewRecordBuilder(mem, schema)
	defer b.Release()
	if first == 1 {
		ib := b.Field(0).(*array.StringBuilder)
		ib.Reserve(n)
		ib.ReserveData(n * len(runID))
		for range n {
			ib.Append(runID)
		}
	}
	for i, f := range c.fields {
		fb := b.Field(first + i)
		fb.Reserve(n)
		for _, rows := range parts {
			appendColumn(fb, f, rows)
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	fw, err := pqarrow.NewFileWriter(schema, w, writerProps(dict), pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return err
	}
	werr := fw.Write(rec)
	return errors.Join(werr, fw.Close())
}

// appendColumn appends field f of every row to fb. The plain types are
// read at the field's offset (the type was checked by codecFor, once);
// the types of columns_ext.go but time.Time go through reflection.
func appendColumn[T any](fb array.Builder, f codecField, rows []T) {
	if len(rows) == 0 {
		return
	}
	field := func(r int) unsafe.Pointer { return unsafe.Add(unsafe.Pointer(&rows[r]), f.offset) }
	if f.nullable && !f.ext {
		// A pointer field: null where it is nil, else the value it points to.
		for r := range rows {
			p := *(*unsafe.Pointer)(field(r))
			if p == nil {
				fb.AppendNull()
				continue
			}
			appendValue(fb, f.kind, p)
		}
		return
	}
	switch {
	case f.time:
		tb := fb.(*array.TimestampBuilder)
		for r := range rows {
			t := (*time.Time)(field(r))
			if t.IsZero() {
				tb.AppendNull()
				continue
			}
			tb.Append(arrow.Timestamp(t.UnixMicro()))
		}
	case f.ext:
		for r := range rows {
			v := reflect.ValueOf(&rows[r]).Elem().Field(f.index)
			if f.nullable {
				if v.IsNil() {
					fb.AppendNull()
					continue
				}
				v = v.Elem()
			}
			appendExtended(fb, v)
		}
	case f.kind == reflect.Int64:
		ib := fb.(*array.Int64Builder)
		for r := range rows {
			ib.Append(*(*int64)(field(r)))
		}
	case f.kind == reflect.Float64:
		xb := fb.(*array.Float64Builder)
		for r := range rows {
			xb.Append(*(*float64)(field(r)))
		}
	default:
		for r := range rows {
			appendValue(fb, f.kind, field(r))
		}
	}
}

// appendValue appends the value of the given kind at p to fb.
func appendValue(fb array.Builder, kind reflect.Kind, p unsafe.Pointer) {
	switch kind {
	case reflect.Int32:
		fb.(*array.Int32Builder).Append(*(*int32)(p))
	case reflect.Int64:
		fb.(*array.Int64Builder).Append(*(*int64)(p))
	case reflect.Float64:
		fb.(*array.Float64Builder).Append(*(*float64)(p))
	case reflect.String:
		fb.(*array.StringBuilder).Append(validUTF8(*(*string)(p)))
	case reflect.Bool:
		fb.(*array.BooleanBuilder).Append(*(*bool)(p))
	}
}

// validUTF8 replaces invalid UTF-8 with U+FFFD. Parquet strings must be
// UTF-8 (DuckDB and pyarrow refuse the file otherwise), and some values come
// from servers that may send anything: error bodies, finish reasons.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// decodeParquetFile reads every row of one Parquet file into T, matching
// columns by name. Columns the file has and T lacks are ignored; a column T
// needs that the file lacks is an error.
func decodeParquetFile[T any](path string) (rows []T, err error) {
	f, size, err := openRegularSize(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// A run's table parts are small: one read of the whole file costs one
	// system call where reading each column chunk where it lies costs one
	// per column (the reader copies each chunk into memory either way).
	if size <= wholeFileBytes {
		data := make([]byte, size)
		if _, err := io.ReadFull(f, data); err != nil {
			return nil, err
		}
		return decodeParquet[T](bytes.NewReader(data))
	}
	return decodeParquet[T](f)
}

// wholeFileBytes is the largest table part read into memory at once.
const wholeFileBytes = 4 << 20

// decodeParquet reads every row of one Parquet file from r: with the
// direct reader (parquet_direct.go) where it can, else through Arrow.
func decodeParquet[T any](r parquet.ReaderAtSeeker) (rows []T, err error) {
	return decodeParquetWith[T](r, true)
}

// decodeParquetWith is decodeParquet; with direct false it always reads
// through Arrow (the tests compare the two).
func decodeParquetWith[T any](r parquet.ReaderAtSeeker, direct bool) (rows []T, err error) {
	c, err := codecFor[T]()
	if err != nil {
		return nil, err
	}
	defer func() {
		// The Parquet reader can panic on some corrupt inputs; a damaged
		// file must become an error naming it, never a crash.
		if r := recover(); r != nil {
			rows, err = nil, fmt.Errorf("corrupt Parquet: %v", r)
		}
	}()
	open := func(mem memory.Allocator) (*file.Reader, error) {
		pf, err := file.NewParquetReader(r, file.WithReadProps(readerProps(mem)))
		if err != nil {
			return nil, fmt.Errorf("not a readable Parquet file: %w", err)
		}
		// Read the columns by their Parquet types, not through the Arrow
		// schema that the writer stores in the file's metadata: a damaged
		// stored schema can make the Arrow decoder allocate without bound
		// (found by FuzzReadParquet), and the Parquet types are all the
		// rows need.
		pf.MetaData().FileMetaData.KeyValueMetadata = nil
		return pf, nil
	}
	if direct {
		pf, err := open(pageBuffers)
		if err != nil {
			return nil, err
		}
		if rows, ok, err := decodeDirect[T](c, pf, r); ok {
			pf.Close()
			if err != nil {
				return nil, err
			}
			return rows, nil
		}
		// Left unclosed, as closing would close r, read again below; any
		// column the library read for it was closed when read, so it holds
		// none of the recycler's buffers.
	}
	pf, err := open(memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	mem := memory.DefaultAllocator
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, mem)
	if err != nil {
		return nil, fmt.Errorf("not a readable Parquet file: %w", err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		return nil, fmt.Errorf("corrupt Parquet data: %w", err)
	}
	defer tbl.Release()

	n := int(tbl.NumRows())
	rows = make([]T, n)
	schema := tbl.Schema()
	for _, f := range c.fields {
		if f.ext {
			if err := fillExtended(rows, f, tbl); err != nil {
				return nil, fmt.Errorf("column %q: %w", f.name, err)
			}
			continue
		}
		idx := schema.FieldIndices(f.name)
		if len(idx) == 0 {
			if f.nullable {
				continue // an optional column added after the file was written: null
			}
			return nil, fmt.Errorf("missing column %q", f.name)
		}
		col := tbl.Column(idx[0])
		r := 0
		for _, chunk := range col.Data().Chunks() {
			if err := fillColumn(rows, r, f, chunk); err != nil {
				return nil, fmt.Errorf("column %q: %w", f.name, err)
			}
			r += chunk.Len()
		}
	}
	return rows, nil
}

func fillColumn[T any](rows []T, start int, f codecField, chunk arrow.Array) error {
	// The chunk's type is the same on every row: whether it fits the field
	// is known once, and said at the first value it would have to fill.
	misfit := columnFits(chunk, f.kind)
	for i := 0; i < chunk.Len(); i++ {
		dst := reflect.ValueOf(&rows[start+i]).Elem().Field(f.index)
		if chunk.IsNull(i) {
			if !f.nullable {
				return fmt.Errorf("null in non-nullable column at row %d", start+i)
			}
			continue
		}
		if misfit != nil {
			return misfit
		}
		if f.nullable {
			p := reflect.New(dst.Type().Elem())
			dst.Set(p)
			dst = p.Elem()
		}
		switch a := chunk.(type) {
		case *array.Int32:
			dst.SetInt(int64(a.Value(i)))
		case *array.Int64:
			dst.SetInt(a.Value(i))
		case *array.Float64:
			dst.SetFloat(a.Value(i))
		case *array.String:
			dst.SetString(a.Value(i))
		case *array.LargeString:
			dst.SetString(a.Value(i))
		case *array.Boolean:
			dst.SetBool(a.Value(i))
		}
	}
	return nil
}

// columnFits says whether an Arrow column of chunk's type can fill a field
// of the given kind (an int32 column fills int64 fields too): nil, or the
// error that says why not.
func columnFits(chunk arrow.Array, kind reflect.Kind) error {
	var name string
	switch chunk.(type) {
	case *array.Int32:
		name = "int32"
	case *array.Int64:
		name = "int64"
	case *array.Float64:
		name = "float64"
	case *array.String, *array.LargeString:
		name = "string"
	case *array.Boolean:
		name = "bool"
	default:
		return fmt.Errorf("unsupported Arrow type %v", chunk.DataType())
	}
	return columnFitsName(name, kind)
}

// columnFitsName is columnFits for a column holding Go values of the named
// type (int32, int64, float64, string, bool).
func columnFitsName(name string, kind reflect.Kind) error {
	var fits bool
	switch name {
	case "int32":
		fits = kind == reflect.Int32 || kind == reflect.Int64
	case "int64", "float64", "string", "bool":
		fits = kind.String() == name
	}
	if !fits {
		return fmt.Errorf("type %s does not fit %v", name, kind)
	}
	return nil
}
