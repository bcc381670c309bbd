package sweep

import (
	"errors"

	"github.com/headroom-llm/headroom/collect/server"
	"github.com/headroom-llm/headroom/internal/fdreserve"
	"github.com/headroom-llm/headroom/rundir"
)

// runRecorder writes a sweep's rows into a run directory. Requests, tokens
// and levels are flushed at the end of each level (one part file per level
// and table), so a killed sweep loses at most the level in progress.
type runRecorder struct {
	requests *rundir.TableWriter[rundir.RequestRow]
	tokens   *rundir.TableWriter[rundir.TokenRow]
	levels   *rundir.TableWriter[rundir.LevelRow]
	samples  *rundir.TableWriter[rundir.ClientSampleRow]
	metrics  *rundir.TableWriter[rundir.ServerMetricRow]
	gpu      *rundir.TableWriter[rundir.GPUTelemetryRow]
	cpu      *rundir.TableWriter[rundir.ServerCPURow]
	energy   *rundir.TableWriter[rundir.CPUEnergyRow]
	log      *server.LogCapture
	// Several replicas: one capture per replica's log, their line times in
	// one shared server_log_lines writer.
	replicaLogs     []*server.LogCapture
	replicaLogLines *rundir.TableWriter[rundir.ServerLogLineRow]
	// reserve holds a few descriptors through each level, handed back for
	// the level's writes: streams near the open-files limit take the rest.
	reserve *fdreserve.Reserve
	// levelEnded, when set, runs first when a level ends: an error marks the
	// level not complete, and is returned (the run stops).
	levelEnded func(rundir.LevelRow) error
	// levelSaved, when set, runs after a level's rows are on disk (the
	// manifest is rewritten there).
	levelSaved func(rundir.LevelRow) error
}

// reservedFDs is how many descriptors the recorder keeps for its writes:
// one part file is written at a time, and the manifest after them.
const reservedFDs = 8

func newRunRecorder(dir string) (*runRecorder, error) {
	r := runRecorder{reserve: fdreserve.New(reservedFDs)}
	var err error
	open := func(f func() error) {
		if err == nil {
			err = f()
		}
	}
	open(func() (e error) {
		r.requests, e = rundir.NewTableWriter[rundir.RequestRow](dir, rundir.TableRequests, 0)
		return
	})
	open(func() (e error) {
		r.tokens, e = rundir.NewTableWriter[rundir.TokenRow](dir, rundir.TableTokens, 0)
		return
	})
	open(func() (e error) {
		r.levels, e = rundir.NewTableWriter[rundir.LevelRow](dir, rundir.TableLevels, 0)
		return
	})
	open(func() (e error) {
		r.samples, e = rundir.NewTableWriter[rundir.ClientSampleRow](dir, rundir.TableClientSamples, 0)
		return
	})
	if err != nil {
		r.reserve.Release()
		return nil, err
	}
	return &r, nil
}

func (r *runRecorder) Request(row rundir.RequestRow, tokens []rundir.TokenRow) {
	r.requests.Add(row)
	r.tokens.Add(tokens...)
}

func (r *runRecorder) ClientSample(row rundir.ClientSampleRow) { r.samples.Add(row) }

// LevelDone flushes every table, so the level is on disk. The level's own
// rows go first: a level whose requests or tokens could not be written is
// recorded as not complete, so a resume runs it again.
func (r *runRecorder) LevelDone(row rundir.LevelRow) error {
	var ended error
	if r.levelEnded != nil {
		if ended = r.levelEnded(row); ended != nil {
			row.Complete = false
		}
	}
	r.reserve.Release()
	defer r.reserve.Refill()
	errs := []error{r.requests.Flush(), r.tokens.Flush()}
	if errs[0] != nil || errs[1] != nil {
		row.Complete = false
	}
	r.levels.Add(row)
	errs = append(errs, r.levels.Flush(), r.samples.Flush())
	if r.metrics != nil {
		errs = append(errs, r.metrics.Flush())
	}
	if r.gpu != nil {
		errs = append(errs, r.gpu.Flush())
	}
	if r.cpu != nil {
		errs = append(errs, r.cpu.Flush())
	}
	if r.energy != nil {
		errs = append(errs, r.energy.Flush())
	}
	if r.log != nil {
		errs = append(errs, r.log.Flush())
	}
	if r.replicaLogLines != nil {
		errs = append(errs, r.replicaLogLines.Flush())
	}
	if r.levelSaved != nil {
		errs = append(errs, r.levelSaved(row))
	}
	return errors.Join(append([]error{ended}, errs...)...)
}

func (r *runRecorder) stop() error {
	r.reserve.Release() // for the last writes, and the manifest after them
	errs := []error{r.requests.Stop(), r.tokens.Stop(), r.levels.Stop(), r.samples.Stop()}
	if r.metrics != nil {
		errs = append(errs, r.metrics.Stop())
	}
	if r.gpu != nil {
		errs = append(errs, r.gpu.Stop())
	}
	if r.cpu != nil {
		errs = append(errs, r.cpu.Stop())
	}
	if r.energy != nil {
		errs = append(errs, r.energy.Stop())
	}
	return errors.Join(errs...)
}

// closeReplicaLogs closes every replica's log file, then their shared
// line-time writer (its last rows written).
func (r *runRecorder) closeReplicaLogs() {
	for _, c := range r.replicaLogs {
		c.Close()
	}
	r.replicaLogs = nil
	if r.replicaLogLines != nil {
		r.replicaLogLines.Stop()
		r.replicaLogLines = nil
	}
}
