package probe

import (
	"slices"
	"sync"
)

// inputs are the host-side data every GPU gets: random bf16 matrices for
// the GEMM and a random chunk that fills the bandwidth buffers.
type inputs struct {
	maxBatch int
	x        []byte // maxBatch×K row-major bf16
	w        []byte // K×N row-major bf16
	fill     pattern

	fp8Once sync.Once
	fp8     []byte // fill's chunk converted to E4M3, made on first use
}

// fp8Chunk is the bandwidth chunk's values rounded to E4M3: the FP8
// GEMMs' pattern, made once for all GPUs.
func (in *inputs) fp8Chunk() []byte {
	in.fp8Once.Do(func() { in.fp8 = e4m3Pattern(in.fill.chunk) })
	return in.fp8
}

// bandwidthChunkBytes is the random block repeated through the bandwidth
// source buffer; 64 MiB is larger than any L2 cache, so no part of a copy
// reads data that an earlier part left in the cache.
const bandwidthChunkBytes = 64 << 20

func makeInputs(cfg *config) *inputs {
	maxBatch := slices.Max(cfg.batches)
	chunk := uint64(bandwidthChunkBytes)
	if len(cfg.bufferSizes) > 0 {
		chunk = min(chunk, slices.Max(cfg.bufferSizes))
	}
	return &inputs{
		maxBatch: maxBatch,
		x:        randomBF16(maxBatch*cfg.k, cfg.seed, 1),
		w:        randomBF16(cfg.k*cfg.n, cfg.seed, 2),
		fill:     newPattern(randomBF16(int(chunk/2), cfg.seed, 3)),
	}
}
