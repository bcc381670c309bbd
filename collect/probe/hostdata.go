package probe

import (
	"encoding/binary"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/headroom-llm/headroom/cuda"
)

// chunkElements is the unit of parallel, reproducible random generation:
// chunk i is always drawn from the seed (seed, i), whatever the core count.
const chunkElements = 1 << 20

// randomBF16 returns n standard-normal values rounded to bf16 (as
// torch.randn in bf16 makes them), little-endian, drawn reproducibly from
// seed and stream on all cores. Random non-zero data matters: a GEMM on
// zeros runs faster and would hide unwritten outputs.
func randomBF16(n int, seed, stream uint64) []byte {
	out := make([]byte, 2*n)
	chunks := (n + chunkElements - 1) / chunkElements
	var wg sync.WaitGroup
	next := make(chan int, chunks)
	for i := 0; i < chunks; i++ {
		next <- i
	}
	close(next)
	for w := 0; w < min(runtime.GOMAXPROCS(0), chunks); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range next {
				rng := rand.New(rand.NewPCG(seed^stream*0x9e3779b97f4a7c15, uint64(c)))
				lo, hi := c*chunkElements, min((c+1)*chunkElements, n)
				for i := lo; i < hi; i++ {
					v := cuda.BF16FromFloat32(float32(rng.NormFloat64()))
					binary.LittleEndian.PutUint16(out[2*i:], v)
				}
			}
		}()
	}
	wg.Wait()
	return out
}

// bf16Values decodes little-endian bf16 bytes into float64s.
func bf16Values(b []byte) []float64 {
	v := make([]float64, len(b)/2)
	for i := range v {
		v[i] = float64(cuda.BF16ToFloat32(binary.LittleEndian.Uint16(b[2*i:])))
	}
	return v
}

// sumWords adds the little-endian 32-bit words of b as unsigned integers,
// wrapping at 2⁶⁴, as the sum kernel does.
func sumWords(b []byte) uint64 {
	var s uint64
	for i := 0; i+4 <= len(b); i += 4 {
		s += uint64(binary.LittleEndian.Uint32(b[i:]))
	}
	return s
}

// pattern is a buffer filled by repeating chunk; prefixSum is the sum kernel's
// result over its first n bytes (n a multiple of 4).
type pattern struct {
	chunk    []byte
	chunkSum uint64
}

func newPattern(chunk []byte) pattern { return pattern{chunk: chunk, chunkSum: sumWords(chunk)} }

func (p pattern) prefixSum(n uint64) uint64 {
	c := uint64(len(p.chunk))
	return n/c*p.chunkSum + sumWords(p.chunk[:n%c])
}
