package rundir

import (
	"io"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/zstd"
)

// boundedZstd is the Parquet library's zstd codec with a bound on what one
// page may decompress to. The library's decoder trusts the size a zstd frame
// declares, so a damaged page of a few bytes could ask for gigabytes (found
// by FuzzReadParquet); with the bound it is an error naming the file.
// Writing is the library's own.
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
