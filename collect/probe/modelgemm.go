package probe

import (
	"context"
	"errors"
	"fmt"

	"github.com/headroom-llm/headroom/cuda"
)

// modelPoints counts the model GEMM points a run measures, for progress.
func (c *config) modelPoints() int {
	if c.model == nil {
		return 0
	}
	n := 0
	for _, b := range c.modelBatches {
		n += len(c.model.DecodeGEMMs(b))
	}
	if c.fp8 {
		n *= 2
	}
	return n
}

// modelGEMMs times each decode GEMM of the model at each batch in one
// dtype: bf16 through cuBLAS (as GemmBF16), or E4M3 through lt. It opens a
// cuBLAS handle of its own so that it depends on nothing the standard sweep
// leaves open.
func (r *deviceRun) modelGEMMs(ctx context.Context, dtype string, lt *cuda.Lt) (err error) {
	cfg := r.cfg
	blas, err := r.c.OpenBLAS(cfg.libs, 0)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, blas.Close()) }()
	var maxW, maxX, maxY int
	for _, b := range cfg.modelBatches {
		for _, g := range cfg.model.DecodeGEMMs(b) {
			rows := roundUp(g.Tokens, FP8Alignment)
			maxW, maxX, maxY = max(maxW, g.K*g.N), max(maxX, rows*g.K), max(maxY, rows*g.N)
		}
	}
	return r.modelGEMMsOf(ctx, dtype, blas, lt, maxW, maxX, maxY, make([]byte, 2*maxY))
}

func (r *deviceRun) modelGEMMsOf(ctx context.Context, dtype string, blas *cuda.BLAS, lt *cuda.Lt, maxW, maxX, maxY int, out []byte) (err error) {
	cfg := r.cfg
	o, err := r.newOperands(dtype, maxW, maxX, maxY)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, o.free(r.c)) }()
	elem := o.elem
	for _, b := range cfg.modelBatches {
		for _, g := range cfg.model.DecodeGEMMs(b) {
			if err := ctx.Err(); err != nil {
				return err
			}
			r.progress(Progress{Phase: "model_gemm", Batch: b, Op: g.Op, DType: dtype})
			k, n := g.K, g.N
			call := func(rows int) error { return blas.GemmBF16(o.x, o.w, o.y, rows, k, n) }
			if dtype == DTypeFP8 {
				call = func(rows int) error { return lt.GemmFP8(o.x, o.w, o.y, rows, k, n) }
			}
			started := cfg.now()
			m, err := r.measureProduct(ctx, o, product{tokens: g.Tokens, k: k, n: n, call: call}, out)
			if err != nil {
				return fmt.Errorf("%s at batch %d: %w", g.Op, b, err)
			}
			p := ModelGEMMPoint{Batch: b, Op: g.Op, DType: dtype, Tokens: g.Tokens, RunTokens: m.runTokens, K: k, N: n,
				Count: g.Count, FLOPs: GEMMFLOPs(m.runTokens, k, n), Bytes: gemmBytes(m.runTokens, k, n, elem),
				Validation: m.validation, Started: started, Finished: cfg.now()}
			fillRepeats(&p.CallsPerRepeat, &p.RepeatTimesMS, &p.TimeMS, m.t)
			r.res.ModelGEMM = append(r.res.ModelGEMM, p)
		}
	}
	return nil
}
