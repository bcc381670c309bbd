package rundir

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"reflect"
	"strings"
	"sync"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// The direct reader fills rows straight from the file's column chunks,
// without building Arrow arrays and tables first, and reads only the
// columns the row type has. A run's tables are small files (a few KiB),
// so setting up Arrow readers and buffers for every column, including
// ones the rows ignore (run_id), cost more than decoding the values. It
// takes the plain columns headroom writes (int32, int64, double, boolean,
// UTF-8 strings, not nested); for anything else, and for row types with
// extended fields (time, map, list), decodeParquet reads the file through
// Arrow as before.

// directBatch is how many values are read from a column at a time.
const directBatch = 4096

// directPlan maps each codec field to its leaf column in the file (-1:
// the file lacks it). ok is false when the file or T needs the Arrow path.
func directPlan(c *rowCodec, sch *schema.Schema) (leaves []int, ok bool) {
	root := sch.Root()
	leaves = make([]int, len(c.fields))
	present := false
	for i, f := range c.fields {
		if f.ext {
			return nil, false
		}
		leaves[i] = -1
		for j := 0; j < root.NumFields(); j++ {
			n := root.Field(j)
			if n.Name() != f.name {
				continue
			}
			p, prim := n.(*schema.PrimitiveNode)
			if !prim || n.RepetitionType() == parquet.Repetitions.Repeated || directTypeName(p) == "" {
				return nil, false
			}
			if leaves[i] = sch.ColumnIndexByNode(n); leaves[i] < 0 {
				return nil, false
			}
			present = true
			break
		}
	}
	// With none of T's columns in the file, only the Arrow path knows how
	// many (all-null) rows it holds.
	return leaves, present
}

// directTypeName is the name of the Go type a plain column holds, as the
// Arrow path names it in errors, or "" for a column the direct reader
// leaves to the Arrow path (annotated as a date, time, decimal, unsigned
// or narrow integer, binary...).
func directTypeName(p *schema.PrimitiveNode) string {
	lt := p.LogicalType()
	if !lt.IsValid() || lt.Equals(schema.NullLogicalType{}) {
		return ""
	}
	intOf := func(bits int8) bool {
		if lt.IsNone() {
			return true
		}
		it, ok := lt.(schema.IntLogicalType)
		return ok && it.BitWidth() == bits && it.IsSigned()
	}
	switch p.PhysicalType() {
	case parquet.Types.Int32:
		if intOf(32) {
			return "int32"
		}
	case parquet.Types.Int64:
		if intOf(64) {
			return "int64"
		}
	case parquet.Types.Double:
		return "float64"
	case parquet.Types.Boolean:
		return "bool"
	case parquet.Types.ByteArray:
		if _, ok := lt.(schema.StringLogicalType); ok {
			return "string"
		}
	}
	return ""
}

// decodeDirect reads the rows of pf with the direct reader; ok is false
// when the file needs the Arrow path (found before reading, or by the page
// reader on a page it leaves to the library), and no row is returned.
func decodeDirect[T any](c *rowCodec, pf *file.Reader, src io.ReaderAt) (rows []T, ok bool, err error) {
	sch := pf.MetaData().Schema
	leaves, ok := directPlan(c, sch)
	if !ok {
		return nil, false, nil
	}
	for i, f := range c.fields {
		if leaves[i] < 0 && !f.nullable {
			return nil, true, fmt.Errorf("missing column %q", f.name)
		}
	}
	// The rows grow as values are decoded rather than from the row count
	// the footer declares, so a damaged footer cannot make one large
	// allocation.
	rows = make([]T, 0, min(max(pf.NumRows(), 0), directBatch))
	rt := reflect.TypeFor[T]()
	b := directPool.Get().(*directBuffers)
	defer directPool.Put(b)
	base := 0
	for g := 0; g < pf.NumRowGroups(); g++ {
		rg := pf.RowGroup(g)
		n := -1 // rows in this row group, from its first column read
		for i, f := range c.fields {
			if leaves[i] < 0 {
				continue
			}
			got, err := readDirectColumn(&rows, base, pf.MetaData(), src, rg, leaves[i], f, rt.Field(f.index).Type, b)
			if errors.Is(err, errNeedLibrary) {
				return nil, false, nil
			}
			if err != nil {
				return nil, true, fmt.Errorf("column %q: %w", f.name, err)
			}
			if n >= 0 && got != n {
				return nil, true, fmt.Errorf("corrupt Parquet data: column %q has %d values where another has %d", f.name, got, n)
			}
			n = got
		}
		base += n
	}
	if int64(base) != pf.NumRows() {
		return nil, true, fmt.Errorf("corrupt Parquet data: %d rows where the file says %d", base, pf.NumRows())
	}
	return rows[:base], true, nil
}

// directBuffers are the value and level buffers the columns of a file
// reuse, and the next file's (directPool): they hold no value once a
// column is read, the strings being copied out.
type directBuffers struct {
	// chunk, page, dict: the page reader's (parquet_pages.go) column chunk,
	// decompressed data page and dictionary page
	chunk, page, dict []byte
	defs              []int16
	i32               []int32
	i64               []int64
	f64               []float64
	bl                []bool
	ba                []parquet.ByteArray
}

var directPool = sync.Pool{New: func() any { return &directBuffers{} }}

func bufOf[V any](p *[]V) []V {
	if *p == nil {
		*p = make([]V, directBatch)
	}
	return *p
}

// batchReader is what the typed column chunk readers have in common.
type batchReader[V any] interface {
	ReadBatch(batchSize int64, values []V, defLvls, repLvls []int16) (total int64, valuesRead int, err error)
	HasNext() bool
	Err() error
	Close() error
}

// readDirectColumn fills field f of rows[base:] from leaf column leaf of
// the row group and says how many rows the column holds. The page reader
// reads the column where it can; else the Parquet library's column reader.
func readDirectColumn[T any](rows *[]T, base int, fm *metadata.FileMetaData, src io.ReaderAt, rg *file.RowGroupReader, leaf int, f codecField, ft reflect.Type, b *directBuffers) (int, error) {
	descr := fm.Schema.Column(leaf)
	misfit := columnFitsName(directTypeName(descr.SchemaNode().(*schema.PrimitiveNode)), f.kind)
	col := directColumn[T]{rows: rows, base: base, f: f, misfit: misfit, maxDef: descr.MaxDefinitionLevel()}
	if f.nullable {
		col.elem = ft.Elem()
	}
	if col.maxDef > 0 {
		col.defs = bufOf(&b.defs)
	}
	cc, err := rg.MetaData().ColumnChunk(leaf)
	if err != nil {
		return 0, fmt.Errorf("corrupt Parquet data: %w", err)
	}
	loc := chunkAt{src: src, fm: fm, cc: cc, leaf: leaf, rg: rg, b: b}
	switch descr.PhysicalType() {
	case parquet.Types.Int32:
		return readChunk(&col, loc, plainInt32, bufOf(&b.i32), nil, func(dst reflect.Value, v int32) { dst.SetInt(int64(v)) })
	case parquet.Types.Int64:
		return readChunk(&col, loc, plainInt64, bufOf(&b.i64), nil, func(dst reflect.Value, v int64) { dst.SetInt(v) })
	case parquet.Types.Double:
		return readChunk(&col, loc, plainFloat64, bufOf(&b.f64), nil, func(dst reflect.Value, v float64) { dst.SetFloat(v) })
	case parquet.Types.Boolean:
		return readChunk(&col, loc, plainBool, bufOf(&b.bl), nil, func(dst reflect.Value, v bool) { dst.SetBool(v) })
	case parquet.Types.ByteArray:
		// The batch's strings are copied into one string, of which each
		// value is a part: one allocation per batch, not per value, and
		// nothing left pointing into the reader's buffers.
		var all string
		var at int
		prepare := func(vals []parquet.ByteArray) {
			n := 0
			for _, v := range vals {
				n += len(v)
			}
			var sb strings.Builder
			sb.Grow(n)
			for _, v := range vals {
				sb.Write(v)
			}
			all, at = sb.String(), 0
		}
		return readChunk(&col, loc, plainByteArray, bufOf(&b.ba), prepare, func(dst reflect.Value, v parquet.ByteArray) {
			dst.SetString(all[at : at+len(v)])
			at += len(v)
		})
	}
	return 0, fmt.Errorf("unsupported Parquet type %v", descr.PhysicalType())
}

// chunkAt is where a column chunk lies: the file, its footer and the row
// group.
type chunkAt struct {
	src  io.ReaderAt
	fm   *metadata.FileMetaData
	cc   *metadata.ColumnChunkMetaData
	leaf int
	rg   *file.RowGroupReader
	b    *directBuffers
}

// readChunk reads one column chunk into the rows: with the page reader, or
// with the library's column reader where the chunk is not one the page
// reader takes (another codec, encryption).
func readChunk[T, V any](col *directColumn[T], loc chunkAt, plain func(*plainCursor) (V, bool), vals []V, prepare func([]V), set func(reflect.Value, V)) (int, error) {
	pc, err := newPageChunk(loc.src, loc.fm, loc.cc, col.maxDef, plain, loc.b)
	if err == nil {
		return readDirect(col, pc, vals, prepare, set)
	}
	if !errors.Is(err, errNeedLibrary) {
		return 0, fmt.Errorf("corrupt Parquet data: %w", err)
	}
	cr, err := loc.rg.Column(loc.leaf)
	if err != nil {
		return 0, fmt.Errorf("corrupt Parquet data: %w", err)
	}
	br, ok := cr.(batchReader[V])
	if !ok {
		cr.Close()
		return 0, fmt.Errorf("unsupported Parquet type %v", cr.Descriptor().PhysicalType())
	}
	return readDirect(col, br, vals, prepare, set)
}

// directColumn is one column being read into one field of the rows.
type directColumn[T any] struct {
	rows   *[]T
	base   int
	f      codecField
	elem   reflect.Type // the pointed-to type of a nullable field
	misfit error        // the column's type does not fit the field: said at its first value
	maxDef int16
	defs   []int16 // definition levels of a nullable column; nil when required
}

func readDirect[T, V any](c *directColumn[T], cr batchReader[V], vals []V, prepare func([]V), set func(reflect.Value, V)) (int, error) {
	defer cr.Close()
	total := 0
	for cr.HasNext() {
		lvls, nv, err := cr.ReadBatch(int64(len(vals)), vals, c.defs, nil)
		if err != nil {
			return 0, fmt.Errorf("corrupt Parquet data: %w", err)
		}
		if lvls <= 0 {
			break
		}
		if nv < 0 || nv > len(vals) || int(lvls) > len(vals) {
			return 0, fmt.Errorf("corrupt Parquet data: %d values in a batch of %d", nv, len(vals))
		}
		start := c.base + total
		if need := start + int(lvls); need > len(*c.rows) {
			*c.rows = append(*c.rows, make([]T, need-len(*c.rows))...)
		}
		if prepare != nil {
			prepare(vals[:nv])
		}
		var slab reflect.Value // a nullable field's values, one allocation per batch
		if c.elem != nil && nv > 0 {
			slab = reflect.MakeSlice(reflect.SliceOf(c.elem), nv, nv)
		}
		rv := reflect.ValueOf(*c.rows)
		j := 0
		for i := 0; i < int(lvls); i++ {
			if c.defs != nil && c.defs[i] < c.maxDef {
				if !c.f.nullable {
					return 0, fmt.Errorf("null in non-nullable column at row %d", start+i)
				}
				continue
			}
			if c.misfit != nil {
				return 0, c.misfit
			}
			if j >= nv {
				return 0, fmt.Errorf("corrupt Parquet data: fewer values than levels at row %d", start+i)
			}
			dst := rv.Index(start + i).Field(c.f.index)
			if c.elem != nil {
				p := slab.Index(j).Addr()
				dst.Set(p)
				dst = p.Elem()
			}
			set(dst, vals[j])
			j++
		}
		total += int(lvls)
	}
	if err := cr.Err(); err != nil {
		return 0, fmt.Errorf("corrupt Parquet data: %w", err)
	}
	return total, nil
}

// recycler is the memory.Allocator of the Parquet reader on the direct
// path. Each column chunk's page reader takes a 16 KiB buffer and more,
// which went to the garbage collector after every column of every small
// file (about 0.7 GiB for a compare of 1,000 runs); the direct reader
// closes its column readers when done, which frees them here, and the
// next column gets them back, cleared as the Go allocator's are. The
// values the rows keep never point into these buffers: ReadBatch copies
// strings out, and readDirect copies them again into the rows' own.
type recycler struct {
	classes [recycleMaxClass + 1]sync.Pool // by log2 of the capacity
}

const (
	recycleMinClass = 6  // 64 B
	recycleMaxClass = 22 // 4 MiB; larger buffers are left to the collector
	recycleAlign    = 64 // as memory.GoAllocator aligns
)

var pageBuffers = &recycler{}

func (a *recycler) Allocate(size int) []byte {
	c := max(bits.Len(uint(max(size, 1)-1)), recycleMinClass)
	if c > recycleMaxClass {
		return memory.DefaultAllocator.Allocate(size)
	}
	if p, ok := a.classes[c].Get().(*[]byte); ok {
		b := (*p)[:size]
		clear(b)
		return b
	}
	raw := make([]byte, 1<<c+recycleAlign)
	shift := 0
	if r := int(uintptr(unsafe.Pointer(unsafe.SliceData(raw))) % recycleAlign); r != 0 {
		shift = recycleAlign - r
	}
	return raw[shift : shift+size : shift+1<<c]
}

func (a *recycler) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		// As a new buffer would be: what lies past the old length is zero.
		nb := b[:size]
		if size > len(b) {
			clear(nb[len(b):])
		}
		return nb
	}
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

func (a *recycler) Free(b []byte) {
	c := bits.Len(uint(cap(b))) - 1
	if cap(b) == 0 || cap(b) != 1<<c || c < recycleMinClass || c > recycleMaxClass {
		return // not one of ours
	}
	b = b[:0]
	a.classes[c].Put(&b)
}
