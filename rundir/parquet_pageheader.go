package rundir

import (
	"encoding/binary"
	"errors"
	"math"
)

// pageHeader is what the page reader needs of a Parquet PageHeader
// (parquet.thrift), read from Thrift's compact protocol.
type pageHeader struct {
	typ          int32
	uncompressed int32
	compressed   int32
	// data page (hasData) or dictionary page (hasDict): the header's
	// num_values and encoding, and a data page's definition_level_encoding.
	hasData, hasDict bool
	numValues        int32
	encoding         int32
	defEncoding      int32
}

var errThrift = errors.New("malformed Thrift")

// readPageHeader decodes the page header at the start of b and says how
// many bytes it took.
func readPageHeader(b []byte) (pageHeader, int, error) {
	var h pageHeader
	r := compactReader{b: b}
	// A DataPageHeader and a DictionaryPageHeader both begin num_values,
	// encoding; a data page's field 3 is its definition_level_encoding (a
	// dictionary page's is a boolean, is_sorted, and is skipped).
	pageFields := func() {
		r.fields(1, func(id int16, typ byte) {
			switch {
			case id == 1 && typ == ctI32:
				h.numValues = r.i32()
			case id == 2 && typ == ctI32:
				h.encoding = r.i32()
			case id == 3 && typ == ctI32:
				h.defEncoding = r.i32()
			default:
				r.skip(typ, 2)
			}
		})
	}
	r.fields(0, func(id int16, typ byte) {
		switch {
		case id == 1 && typ == ctI32:
			h.typ = r.i32()
		case id == 2 && typ == ctI32:
			h.uncompressed = r.i32()
		case id == 3 && typ == ctI32:
			h.compressed = r.i32()
		case id == 5 && typ == ctStruct:
			h.hasData = true
			pageFields()
		case id == 7 && typ == ctStruct:
			h.hasDict = true
			pageFields()
		default:
			r.skip(typ, 1)
		}
	})
	return h, r.pos, r.err
}

// Thrift compact protocol types.
const (
	ctStop   = 0
	ctTrue   = 1
	ctFalse  = 2
	ctByte   = 3
	ctI16    = 4
	ctI32    = 5
	ctI64    = 6
	ctDouble = 7
	ctBinary = 8
	ctList   = 9
	ctSet    = 10
	ctMap    = 11
	ctStruct = 12
)

// maxThriftDepth bounds nesting, so that a damaged header cannot recurse
// without end.
const maxThriftDepth = 16

// compactReader reads Thrift's compact protocol from b; the first error
// stops it and stays in err.
type compactReader struct {
	b   []byte
	pos int
	err error
}

func (r *compactReader) fail() {
	if r.err == nil {
		r.err = errThrift
	}
	r.pos = len(r.b)
}

func (r *compactReader) byte() byte {
	if r.pos >= len(r.b) {
		r.fail()
		return 0
	}
	c := r.b[r.pos]
	r.pos++
	return c
}

func (r *compactReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b[r.pos:])
	if n <= 0 {
		r.fail()
		return 0
	}
	r.pos += n
	return v
}

func (r *compactReader) varint() int64 {
	u := r.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (r *compactReader) i32() int32 {
	v := r.varint()
	if v < math.MinInt32 || v > math.MaxInt32 {
		r.fail()
		return 0
	}
	return int32(v)
}

// fields reads a struct's fields up to its stop byte, calling f with each
// field's id and type; f reads (or skips) the value.
func (r *compactReader) fields(depth int, f func(id int16, typ byte)) {
	if depth > maxThriftDepth {
		r.fail()
		return
	}
	var id int16
	for r.err == nil {
		c := r.byte()
		if r.err != nil || c == ctStop {
			return
		}
		typ := c & 0x0f
		if d := c >> 4; d != 0 {
			id += int16(d)
		} else {
			v := r.varint()
			if v < math.MinInt16 || v > math.MaxInt16 {
				r.fail()
				return
			}
			id = int16(v)
		}
		f(id, typ)
	}
}

// skip passes over a value of type typ (a field's: booleans are in the
// type itself).
func (r *compactReader) skip(typ byte, depth int) {
	if depth > maxThriftDepth {
		r.fail()
		return
	}
	switch typ {
	case ctTrue, ctFalse:
	case ctByte:
		r.byte()
	case ctI16, ctI32, ctI64:
		r.uvarint()
	case ctDouble:
		r.bytes(8)
	case ctBinary:
		r.bytes(r.uvarint())
	case ctList, ctSet:
		c := r.byte()
		n, elem := uint64(c>>4), c&0x0f
		if n == 15 {
			n = r.uvarint()
		}
		r.elements(n, elem, depth)
	case ctMap:
		n := r.uvarint()
		if n == 0 {
			return
		}
		kv := r.byte()
		for i := uint64(0); i < n && r.err == nil; i++ {
			r.element(kv>>4, depth)
			r.element(kv&0x0f, depth)
		}
	case ctStruct:
		r.fields(depth+1, func(_ int16, typ byte) { r.skip(typ, depth+1) })
	default:
		r.fail()
	}
}

// elements passes over n list elements of type elem; each takes at least
// one byte, so a count past what is left is an error at once.
func (r *compactReader) elements(n uint64, elem byte, depth int) {
	if n > uint64(len(r.b)-r.pos) {
		r.fail()
		return
	}
	for i := uint64(0); i < n && r.err == nil; i++ {
		r.element(elem, depth)
	}
}

// element passes over one list, set or map element: there a boolean is a
// byte of its own.
func (r *compactReader) element(typ byte, depth int) {
	if typ == ctTrue || typ == ctFalse {
		r.byte()
		return
	}
	r.skip(typ, depth+1)
}

func (r *compactReader) bytes(n uint64) {
	if n > uint64(len(r.b)-r.pos) {
		r.fail()
		return
	}
	r.pos += int(n)
}
