package compare

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/rundir"
)

// Load reads what a comparison needs of a run directory: the manifest, the
// probe tables, levels, requests, per-level statistics and GPU telemetry
// (power, for the cost). It leaves out the per-chunk tokens table, server
// metrics, client samples and the server log, which a comparison does not
// show, so an archive of runs loads quickly; ITL and the diagnosis are
// therefore not compared.
func Load(dir string) (*analyze.Run, error) {
	r, err := rundir.Open(dir)
	if err != nil {
		return nil, err
	}
	run := &analyze.Run{Dir: dir, Manifest: r.Manifest}
	// One listing of the run says which tables exist, so absent tables
	// cost no further system calls (an archive has many runs).
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	present := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() {
			present[e.Name()] = true
		}
	}
	type reader struct {
		table string
		read  func() error
	}
	for _, rd := range []reader{
		{rundir.TableProbeGEMM, func() (err error) {
			run.GEMM, err = rundir.ReadTable[rundir.ProbeGEMMRow](dir, rundir.TableProbeGEMM)
			return
		}},
		{rundir.TableProbeBandwidth, func() (err error) {
			run.Bandwidth, err = rundir.ReadTable[rundir.ProbeBandwidthRow](dir, rundir.TableProbeBandwidth)
			return
		}},
		{rundir.TableLevels, func() (err error) {
			run.Levels, err = rundir.ReadTable[rundir.LevelRow](dir, rundir.TableLevels)
			return
		}},
		{rundir.TableRequests, func() (err error) {
			run.Requests, err = rundir.ReadTable[rundir.RequestRow](dir, rundir.TableRequests)
			return
		}},
		{rundir.TableLevelStats, func() (err error) {
			run.LevelStat, err = rundir.ReadTable[rundir.LevelStatsRow](dir, rundir.TableLevelStats)
			return
		}},
		{rundir.TableGPUTelemetry, func() (err error) {
			run.GPU, err = rundir.ReadTable[rundir.GPUTelemetryRow](dir, rundir.TableGPUTelemetry)
			return
		}},
	} {
		if !present[rd.table] {
			continue
		}
		if err := rd.read(); err != nil {
			return nil, err
		}
	}
	if run.Manifest.HasKind(rundir.KindProbe) && len(run.GEMM) == 0 {
		return nil, fmt.Errorf("%s: the manifest says this run holds a probe, but table %s has no rows", dir, rundir.TableProbeGEMM)
	}
	return run, nil
}

// LoadAll loads runs concurrently, one worker per CPU, keeping their
// order. It stops at the first error, which names the run.
func LoadAll(ctx context.Context, dirs []string) ([]*analyze.Run, error) {
	runs := make([]*analyze.Run, len(dirs))
	err := parallel(ctx, len(dirs), func(i int) error {
		r, err := Load(dirs[i])
		runs[i] = r
		return err
	})
	return runs, err
}

// parallel calls f(0..n-1) on GOMAXPROCS workers and returns the first
// error (by index), or the context's.
func parallel(ctx context.Context, n int, f func(int) error) error {
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), max(n, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = f(i)
			}
		}()
	}
feed:
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
