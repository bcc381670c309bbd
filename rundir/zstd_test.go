package rundir

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
)

// Pages compressed with the kept encoders are the bytes the library's own
// codec writes, at its default level and at others, for pages empty,
// small, repetitive and incompressible, and whether encoders are new or
// reused from other goroutines; and they decompress to the page.
func TestZstdEncodesAsTheLibrary(t *testing.T) {
	codec, err := compress.GetCodec(compress.Codecs.Zstd)
	if err != nil {
		t.Fatal(err)
	}
	ours, ok := codec.(boundedZstd)
	if !ok {
		t.Fatalf("the registered zstd codec is %T, not headroom's", codec)
	}
	pages := [][]byte{{}, []byte("one small page"), bytes.Repeat([]byte("level_index,concurrency;"), 1000)}
	noise := make([]byte, 20_000)
	for i, x := 0, uint32(1); i < len(noise); i++ {
		x = x*1664525 + 1013904223
		noise[i] = byte(x >> 24)
	}
	pages = append(pages, noise)
	var wg sync.WaitGroup
	for _, level := range []int{compress.DefaultCompressionLevel, 1, 3, 9, 19} {
		for i, page := range pages {
			want := ours.Codec.EncodeLevel(nil, page, level)
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					name := fmt.Sprintf("level %d, page %d, goroutine %d", level, i, g)
					got := ours.EncodeLevel(nil, page, level)
					if !bytes.Equal(got, want) {
						t.Errorf("%s: %d bytes, the library's codec %d", name, len(got), len(want))
						return
					}
					back, err := ours.DecodeWithError(nil, got)
					if err != nil || !bytes.Equal(back, page) {
						t.Errorf("%s: does not decompress to the page (%v)", name, err)
					}
				}()
			}
		}
	}
	wg.Wait()
}
