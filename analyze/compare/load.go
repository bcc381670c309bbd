package compare

import (
	"context"
	"runtime"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/internal/workers"
	"github.com/headroom-llm/headroom/rundir"
)

// Load reads what a comparison needs of a run directory with the report's
// own loader (analyze.LoadWith): every table the per-run analysis and its
// diagnosis use (levels, requests, server metrics, GPU telemetry, client
// samples, server log and its receive times, the probe), so a run's wall
// in a comparison is the wall its own report names. It leaves out the
// per-chunk tokens table, the largest, which only the ITL needs, and the
// list of data files; ITL is therefore not compared.
func Load(dir string) (*analyze.Run, error) {
	return analyze.LoadWith(dir, loadOptions)
}

var loadOptions = analyze.LoadOptions{SkipTokens: true, SkipFiles: true}

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
	return parallelOn(ctx, runtime.GOMAXPROCS(0), n, f)
}

// remoteWorkers is how many runs in object storage load at once: a run
// read from the summary cache costs one GET of its manifest, which waits
// on the network, not the CPU.
const remoteWorkers = 16

// workersFor is the number of workers for dirs: one per CPU, or
// remoteWorkers when any run is in object storage.
func workersFor(dirs []rundir.Dir) int {
	for _, d := range dirs {
		if !d.IsLocal() {
			return max(runtime.GOMAXPROCS(0), remoteWorkers)
		}
	}
	return runtime.GOMAXPROCS(0)
}

// parallelOn is parallel on the given number of workers.
func parallelOn(ctx context.Context, procs, n int, f func(int) error) error {
	return workers.Each(ctx, procs, n, f)
}

// LoadDirs is LoadAll for run directories anywhere: local or in object
// storage (rundir.RemoteDir).
func LoadDirs(ctx context.Context, dirs []rundir.Dir) ([]*analyze.Run, error) {
	runs := make([]*analyze.Run, len(dirs))
	err := parallel(ctx, len(dirs), func(i int) error {
		r, err := analyze.LoadFrom(dirs[i], loadOptions)
		runs[i] = r
		return err
	})
	return runs, err
}
