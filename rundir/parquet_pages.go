package rundir

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// The page reader decodes the pages of one column chunk of the direct
// path itself, where the Parquet library's column reader would set up,
// for every column of every small file, a page reader, a decompressor
// state and level and dictionary-index decoders that each allocate a
// 4 KiB unpacking buffer: for a run's requests table of 191 rows that
// set-up was most of the file's reading cost, and reading the requests
// tables most of an index of an archive (docs/performance.md). It takes
// what headroom and other plain writers produce: version 1 data pages,
// uncompressed or zstd, RLE definition levels, PLAIN values or a PLAIN
// dictionary with RLE_DICTIONARY (or PLAIN_DICTIONARY) indices. Anything
// else (version 2 pages, other codecs or encodings, encryption) is
// errNeedLibrary: the chunk, or the whole file, is read by the library
// instead. The footer is still parsed by the library.

// errNeedLibrary says that a chunk holds something the page reader leaves
// to the Parquet library; nothing of it has been taken as data.
var errNeedLibrary = errors.New("column chunk needs the Parquet library's reader")

// Parquet's enum values (parquet.thrift), as they stand in page headers.
const (
	pageData       = 0
	pageIndex      = 1
	pageDictionary = 2

	encPlain     = 0
	encPlainDict = 2
	encRLE       = 3
	encRLEDict   = 8
)

// pageChunk reads one column chunk's values of Go type V, in the shape of
// the library's typed column readers (batchReader).
type pageChunk[V any] struct {
	rest   []byte // the chunk's pages not read yet
	codec  compress.Compression
	maxDef int16
	plain  func(*plainCursor) (V, bool)
	// values left in the chunk as its metadata counts them: a page that
	// declares more is left to the library (errNeedLibrary).
	chunkLeft int64

	dict    []V
	dictBuf []byte // the dictionary page's bytes, which dict's byte arrays point into
	pageBuf []byte // the current data page's bytes (reused page after page)
	bufs    *directBuffers

	left   int64 // levels left in the current page
	levels hybrid
	useIdx bool // values are dictionary indices (idx), not plain (vals)
	idx    hybrid
	vals   plainCursor
	done   bool
}

// newPageChunk returns the page reader of column chunk cc of the file
// read through r (whose footer is fm), or errNeedLibrary where the chunk
// is not one it reads. b's chunk, page and dictionary buffers are reused.
func newPageChunk[V any](r io.ReaderAt, fm *metadata.FileMetaData, cc *metadata.ColumnChunkMetaData, maxDef int16, plain func(*plainCursor) (V, bool), b *directBuffers) (*pageChunk[V], error) {
	codec := cc.Compression()
	if codec != compress.Codecs.Uncompressed && codec != compress.Codecs.Zstd || cc.CryptoMetadata() != nil ||
		fm.WriterVersion().LessThan(metadata.Parquet816FixedVersion) || maxDef > 1 {
		// An old parquet-mr's chunk sizes leave out its dictionary page
		// header; nested columns (maxDef > 1) are not headroom's.
		return nil, errNeedLibrary
	}
	start := chunkStart(cc)
	size, fileSize := cc.TotalCompressedSize(), fm.GetSourceFileSize()
	if start < 0 || size < 0 || size > fileSize || start > fileSize-size {
		return nil, fmt.Errorf("column chunk at %d of %d bytes lies outside the file (%d bytes)", start, size, fileSize)
	}
	b.chunk = slices.Grow(b.chunk[:0], int(size))[:size]
	if _, err := r.ReadAt(b.chunk, start); err != nil {
		return nil, err
	}
	return &pageChunk[V]{rest: b.chunk, codec: codec, maxDef: maxDef, plain: plain, chunkLeft: cc.NumValues(),
		dictBuf: b.dict[:0], pageBuf: b.page[:0], bufs: b}, nil
}

// chunkStart is where column chunk cc's first page lies: its dictionary
// page where it has one, else its first data page.
func chunkStart(cc *metadata.ColumnChunkMetaData) int64 {
	start := cc.DataPageOffset()
	if cc.HasDictionaryPage() && cc.DictionaryPageOffset() > 0 && cc.DictionaryPageOffset() < start {
		start = cc.DictionaryPageOffset()
	}
	return start
}

func (c *pageChunk[V]) HasNext() bool { return c.left > 0 || !c.done && len(c.rest) > 0 }
func (c *pageChunk[V]) Err() error    { return nil }

// Close gives the decompression buffers back for the next column: the
// values read have been copied out of them.
func (c *pageChunk[V]) Close() error {
	if c.codec == compress.Codecs.Zstd {
		c.bufs.dict, c.bufs.page = c.dictBuf[:0], c.pageBuf[:0]
	}
	return nil
}

// ReadBatch reads up to batchSize levels, and the values of those that are
// not null, as the library's column readers do. A batch ends at the end of
// a page: its byte arrays point into the page's buffer, which the next
// page reuses.
func (c *pageChunk[V]) ReadBatch(batchSize int64, values []V, defLvls, _ []int16) (int64, int, error) {
	var n int64
	nv := 0
	for n < batchSize {
		if c.left == 0 {
			if n > 0 {
				break
			}
			err := c.nextPage()
			if err == io.EOF {
				c.done = true
				break
			}
			if err != nil {
				return 0, 0, err
			}
			continue
		}
		def := c.maxDef
		if c.maxDef > 0 {
			d, err := c.levels.next()
			if err != nil || d > uint32(c.maxDef) {
				return 0, 0, errors.New("bad definition levels")
			}
			def = int16(d)
			defLvls[n] = def
		}
		if def == c.maxDef {
			if nv >= len(values) {
				return 0, 0, errors.New("more values than the batch holds")
			}
			v, err := c.value()
			if err != nil {
				return 0, 0, err
			}
			values[nv] = v
			nv++
		}
		n++
		c.left--
	}
	return n, nv, nil
}

func (c *pageChunk[V]) value() (V, error) {
	var zero V
	if !c.useIdx {
		v, ok := c.plain(&c.vals)
		if !ok {
			return zero, errors.New("page ends before its values")
		}
		return v, nil
	}
	i, err := c.idx.next()
	if err != nil {
		return zero, errors.New("bad dictionary indices")
	}
	if int64(i) >= int64(len(c.dict)) {
		return zero, fmt.Errorf("dictionary index %d out of %d values", i, len(c.dict))
	}
	return c.dict[i], nil
}

// nextPage reads pages up to and including the next data page and sets
// the decoders on it; io.EOF when the chunk has none left.
func (c *pageChunk[V]) nextPage() error {
	for len(c.rest) > 0 {
		h, n, err := readPageHeader(c.rest)
		if err != nil {
			return fmt.Errorf("page header: %w", err)
		}
		if h.compressed < 0 || int64(h.compressed) > int64(len(c.rest)-n) {
			return fmt.Errorf("page of %d bytes where the chunk has %d left", h.compressed, len(c.rest)-n)
		}
		body := c.rest[n : n+int(h.compressed)]
		c.rest = c.rest[n+int(h.compressed):]
		switch h.typ {
		case pageIndex:
			continue
		case pageDictionary:
			if !h.hasDict || c.dict != nil {
				return errors.New("misplaced dictionary page")
			}
			if h.encoding != encPlain && h.encoding != encPlainDict {
				return errNeedLibrary
			}
			if c.dictBuf, err = c.decompress(body, h.uncompressed, c.dictBuf); err != nil {
				return err
			}
			// Each PLAIN value takes at least one byte (a boolean has no
			// dictionary), so a count past the page's size is corrupt.
			if h.numValues < 0 || int(h.numValues) > len(c.dictBuf) {
				return fmt.Errorf("dictionary of %d values in %d bytes", h.numValues, len(c.dictBuf))
			}
			cur := plainCursor{b: c.dictBuf}
			c.dict = make([]V, h.numValues)
			for i := range c.dict {
				v, ok := c.plain(&cur)
				if !ok {
					return errors.New("dictionary page ends before its values")
				}
				c.dict[i] = v
			}
			continue
		case pageData:
		default:
			return errNeedLibrary // version 2 data pages, or unknown
		}
		if !h.hasData {
			return errors.New("data page without its header")
		}
		if h.numValues < 0 || int64(h.numValues) > c.chunkLeft {
			// Pages and metadata that disagree: the library's judgement,
			// as before this reader.
			return errNeedLibrary
		}
		c.chunkLeft -= int64(h.numValues)
		if c.pageBuf, err = c.decompress(body, h.uncompressed, c.pageBuf); err != nil {
			return err
		}
		data := c.pageBuf
		if c.maxDef > 0 {
			if h.defEncoding != encRLE {
				return errNeedLibrary
			}
			if len(data) < 4 {
				return errors.New("page ends before its definition levels")
			}
			ln := binary.LittleEndian.Uint32(data)
			if int64(ln) > int64(len(data)-4) {
				return errors.New("definition levels longer than the page")
			}
			c.levels = hybrid{b: data[4 : 4+ln], width: 1}
			data = data[4+ln:]
		}
		switch h.encoding {
		case encPlain:
			c.useIdx, c.vals = false, plainCursor{b: data}
		case encPlainDict, encRLEDict:
			if c.dict == nil {
				return errors.New("dictionary-encoded page without a dictionary")
			}
			if len(data) < 1 || data[0] > 32 {
				return errors.New("bad dictionary index width")
			}
			c.useIdx, c.idx = true, hybrid{b: data[1:], width: uint(data[0])}
		default:
			return errNeedLibrary
		}
		c.left = int64(h.numValues)
		return nil
	}
	return io.EOF
}

// decompress returns a page's bytes in buf (grown as needed).
func (c *pageChunk[V]) decompress(body []byte, size int32, buf []byte) ([]byte, error) {
	if size < 0 || size > maxPageBytes {
		return nil, fmt.Errorf("page of %d bytes uncompressed", size)
	}
	if c.codec == compress.Codecs.Uncompressed {
		if int(size) != len(body) {
			return nil, fmt.Errorf("uncompressed page of %d bytes declares %d", len(body), size)
		}
		return body, nil
	}
	if cap(buf) < int(size) {
		buf = make([]byte, 0, size)
	}
	out, err := zstdDecoder.DecodeAll(body, buf[:0])
	if err != nil {
		return nil, err
	}
	if len(out) != int(size) {
		return nil, fmt.Errorf("page decompresses to %d bytes, declares %d", len(out), size)
	}
	return out, nil
}

// hybrid decodes Parquet's RLE / bit-packed hybrid encoding of values of
// width bits (definition levels, dictionary indices), one at a time.
type hybrid struct {
	b     []byte
	pos   int    // the next run's header
	width uint   // 0 to 32
	rle   uint64 // values left in the current run of one value
	val   uint32
	bp    uint64 // values left in the current bit-packed run
	bit   uint64 // where the next bit-packed value starts, in bits
}

var errRuns = errors.New("runs end before their values")

func (h *hybrid) next() (uint32, error) {
	for h.rle == 0 && h.bp == 0 {
		if h.pos >= len(h.b) {
			return 0, errRuns
		}
		hdr, n := binary.Uvarint(h.b[h.pos:])
		if n <= 0 {
			return 0, errRuns
		}
		h.pos += n
		if hdr&1 == 0 {
			nb := int((h.width + 7) / 8)
			if h.pos+nb > len(h.b) {
				return 0, errRuns
			}
			var v uint32
			for i := range nb {
				v |= uint32(h.b[h.pos+i]) << (8 * i)
			}
			h.pos += nb
			h.rle, h.val = hdr>>1, v
			continue
		}
		// Groups of 8 values of width bits, width bytes a group; a writer
		// may leave out the last group's unused bytes, so the run is what
		// the bytes hold.
		groups := min(hdr>>1, 1<<40)
		h.bp = groups * 8
		bytes := uint64(0)
		if h.width > 0 {
			avail := uint64(len(h.b) - h.pos)
			bytes = min(groups*uint64(h.width), avail)
			h.bp = min(h.bp, bytes*8/uint64(h.width))
		}
		h.bit = uint64(h.pos) * 8
		h.pos += int(bytes)
	}
	if h.rle > 0 {
		h.rle--
		return h.val, nil
	}
	h.bp--
	if h.width == 0 {
		return 0, nil
	}
	at, shift := int(h.bit>>3), h.bit&7
	var x uint64
	for i := 0; i < 5 && at+i < len(h.b); i++ {
		x |= uint64(h.b[at+i]) << (8 * i)
	}
	h.bit += uint64(h.width)
	return uint32(x>>shift) & uint32(1<<h.width-1), nil
}

// plainCursor walks PLAIN-encoded values.
type plainCursor struct {
	b   []byte
	pos int
	bit int // booleans: the next bit
}

func plainInt32(c *plainCursor) (int32, bool) {
	if len(c.b)-c.pos < 4 {
		return 0, false
	}
	v := int32(binary.LittleEndian.Uint32(c.b[c.pos:]))
	c.pos += 4
	return v, true
}

func plainInt64(c *plainCursor) (int64, bool) {
	if len(c.b)-c.pos < 8 {
		return 0, false
	}
	v := int64(binary.LittleEndian.Uint64(c.b[c.pos:]))
	c.pos += 8
	return v, true
}

func plainFloat64(c *plainCursor) (float64, bool) {
	v, ok := plainInt64(c)
	return math.Float64frombits(uint64(v)), ok
}

func plainBool(c *plainCursor) (bool, bool) {
	at := c.bit >> 3
	if at >= len(c.b) {
		return false, false
	}
	v := c.b[at]>>(c.bit&7)&1 == 1
	c.bit++
	return v, true
}

func plainByteArray(c *plainCursor) (parquet.ByteArray, bool) {
	if len(c.b)-c.pos < 4 {
		return nil, false
	}
	n := binary.LittleEndian.Uint32(c.b[c.pos:])
	if uint64(n) > uint64(len(c.b)-c.pos-4) {
		return nil, false
	}
	v := parquet.ByteArray(c.b[c.pos+4 : c.pos+4+int(n) : c.pos+4+int(n)])
	c.pos += 4 + int(n)
	return v, true
}
