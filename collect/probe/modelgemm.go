package probe

import (
	"context"
	"errors"
	"fmt"

	"github.com/headroom-llm/headroom/cuda"
	"github.com/headroom-llm/headroom/modelspec"
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

// StepFloor is the measured GEMM floor of one decode step: the sum over the
// model's decode GEMMs of count × median time, per decode batch and dtype.
type StepFloor struct {
	Batch int
	DType string
	// GEMMSeconds is Σ count × median time of the step's weight GEMMs.
	GEMMSeconds float64
	// WeightBytes is the weight bytes those GEMMs read.
	WeightBytes float64
}

// StepFloors sums a device's model GEMM points into floors, in batch order
// (bf16 first at each batch). A batch missing any of the model's GEMMs in a
// dtype (the probe stopped part way) has no floor in that dtype.
func StepFloors(points []ModelGEMMPoint, model *modelspec.Spec) []StepFloor {
	type key struct {
		batch int
		dtype string
	}
	sums := map[key]*StepFloor{}
	seen := map[key]int{}
	var order []key
	for _, p := range points {
		k := key{p.Batch, p.DType}
		f, ok := sums[k]
		if !ok {
			f = &StepFloor{Batch: p.Batch, DType: p.DType}
			sums[k] = f
			order = append(order, k)
		}
		f.GEMMSeconds += p.Count * p.TimeMS.Median / 1e3
		elem := 2.0
		if p.DType == DTypeFP8 {
			elem = 1
		}
		f.WeightBytes += p.Count * float64(p.K) * float64(p.N) * elem
		seen[k]++
	}
	var out []StepFloor
	for _, k := range order {
		if model != nil && seen[k] != len(model.DecodeGEMMs(k.batch)) {
			continue
		}
		out = append(out, *sums[k])
	}
	return out
}
