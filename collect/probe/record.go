package probe

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/headroom-llm/headroom/collect/hostinfo"
	"github.com/headroom-llm/headroom/internal/buildinfo"
	"github.com/headroom-llm/headroom/rundir"
)

// Record runs the probe into a new run directory, as sweep.Record does for
// a sweep: it measures, writes the tables, and finishes the manifest
// (complete, or stopped with where and why). When nothing could be
// measured (no driver, no GPU, no cuBLAS) it writes no directory and
// returns a nil run with the error. Otherwise the run is valid and
// readable whatever happened; the error says what went wrong
// (context.Canceled when interrupted). The Result is returned for a
// printout (Result.WriteSummary).
func (p *Prober) Record(ctx context.Context, dir string) (*rundir.Run, *Result, error) {
	var mu sync.Mutex
	var last Progress // the point in progress, for the manifest of a stopped probe
	q := &Prober{cfg: p.cfg}
	report := p.cfg.progress
	q.cfg.progress = func(pr Progress) {
		mu.Lock()
		last = pr
		mu.Unlock()
		if report != nil {
			report(pr)
		}
	}
	res, runErr := q.Run(ctx)
	if len(res.Devices) == 0 {
		return nil, res, runErr
	}
	run, err := rundir.Create(dir, &rundir.Manifest{
		HeadroomVersion: buildinfo.Version(),
		StartTime:       res.Started.UTC(),
		Host:            hostinfo.Collect(),
	})
	if err != nil {
		return nil, res, errors.Join(runErr, fmt.Errorf("probe: %w", err))
	}
	if err := res.WriteTo(run); err != nil {
		return run, res, errors.Join(runErr, err)
	}
	var stopped *rundir.Stopped
	if runErr != nil {
		reason := "error"
		if errors.Is(runErr, context.Canceled) {
			reason = "interrupted"
		}
		mu.Lock()
		stopped = &rundir.Stopped{Reason: reason, Error: runErr.Error(), Phase: last.Where()}
		mu.Unlock()
	}
	return run, res, errors.Join(runErr, run.Finish(stopped))
}

// Point names what is measured: "GEMM B=64" or "bandwidth copy_kernel 256 MiB".
func (p Progress) Point() string {
	switch p.Phase {
	case "bandwidth":
		return fmt.Sprintf("bandwidth %s %d MiB", p.Method, p.BufferBytes>>20)
	case "gemm_fp8":
		return fmt.Sprintf("GEMM FP8 B=%d", p.Batch)
	case "model_gemm":
		return fmt.Sprintf("model %s %s B=%d", p.Op, p.DType, p.Batch)
	}
	return fmt.Sprintf("GEMM B=%d", p.Batch)
}

// Where says which point was in progress, for the manifest of a probe
// that stopped: "probe GPU 0 solo: GEMM B=64 (point 9 of 23)".
func (p Progress) Where() string {
	if p.Steps == 0 {
		return "probe (before the first point)"
	}
	return fmt.Sprintf("probe GPU %d %s: %s (point %d of %d)", p.Ordinal, p.Mode, p.Point(), p.Step, p.Steps)
}
