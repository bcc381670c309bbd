package rundir

import (
	"io"
	"runtime"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// boundedZstd is the Parquet library's zstd codec with a bound on what one
// page may decompress to. The library's decoder trusts the size a zstd frame
// declares, so a damaged page of a few bytes could ask for gigabytes (found
// by FuzzReadParquet); with the bound it is an error naming the file.
// Writing is the library's, but for where its encoders are kept (below).
type boundedZstd struct{ compress.Codec }

var zstdDecoder, _ = zstd.NewReader(nil, zstd.WithDecoderMaxMemory(maxPageBytes), zstd.WithDecoderConcurrency(0))

func init() {
	lib, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		return // the library always has zstd; nothing to wrap otherwise
	}
	compress.RegisterCodec(compress.Codecs.Zstd, boundedZstd{lib})
}

func (boundedZstd) DecodeWithError(dst, src []byte) ([]byte, error) {
	return zstdDecoder.DecodeAll(src, dst[:0])
}

func (c boundedZstd) Decode(dst, src []byte) []byte {
	out, err := c.DecodeWithError(dst, src)
	if err != nil {
		panic(err) // as the library's codec does; decodeParquetFile recovers
	}
	return out
}

// NewReader decodes a stream with the same bound.
func (boundedZstd) NewReader(r io.Reader) io.ReadCloser {
	d, err := zstd.NewReader(r, zstd.WithDecoderMaxMemory(maxPageBytes), zstd.WithDecoderConcurrency(1))
	if err != nil {
		return io.NopCloser(errReader{err})
	}
	return d.IOReadCloser()
}

// NewWriter and NewWriterLevel are the library's.
func (c boundedZstd) NewWriter(w io.Writer) io.WriteCloser {
	return c.Codec.(compress.StreamingCodec).NewWriter(w)
}

func (c boundedZstd) NewWriterLevel(w io.Writer, level int) (io.WriteCloser, error) {
	return c.Codec.(compress.StreamingCodec).NewWriterLevel(w, level)
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// EncodeLevel compresses a page as the library's codec does (the same
// encoder options, so the same bytes), with encoders kept for the life of
// the process. The library keeps its encoders in a sync.Pool, which every
// garbage collection empties, and a new encoder allocates and clears about
// a megabyte of tables: most of the cost of compressing a small page.
func (boundedZstd) EncodeLevel(dst, src []byte, level int) []byte {
	l := zstd.SpeedDefault
	if level != compress.DefaultCompressionLevel {
		l = zstd.EncoderLevelFromZstd(level)
	}
	var enc *zstd.Encoder
	select {
	case enc = <-zstdEncoders[l]:
	default:
		enc, _ = zstd.NewWriter(nil, zstd.WithZeroFrames(true), zstd.WithEncoderLevel(l),
			zstd.WithEncoderConcurrency(1), zstd.WithAllLitEntropyCompression(true))
	}
	out := enc.EncodeAll(src, dst[:0])
	select {
	case zstdEncoders[l] <- enc:
	default: // as many are kept as run at once, at most one per CPU
	}
	return out
}

// zstdEncoders holds idle encoders by level.
var zstdEncoders = func() map[zstd.EncoderLevel]chan *zstd.Encoder {
	m := map[zstd.EncoderLevel]chan *zstd.Encoder{}
	for l := zstd.SpeedFastest; l <= zstd.SpeedBestCompression; l++ {
		m[l] = make(chan *zstd.Encoder, runtime.GOMAXPROCS(0))
	}
	return m
}()
