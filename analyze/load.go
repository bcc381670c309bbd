// Package analyze reads run directories into one report model: roofline,
// per-level statistics, knees, diagnosis and cost. It is pure: no network,
// no GPU, no printing. The renderer turns the model into HTML and Markdown.
package analyze

import (
	"fmt"

	"github.com/headroom-llm/headroom/rundir"
)

// Run is everything read from one run directory.
type Run struct {
	Dir       string
	Manifest  *rundir.Manifest
	GEMM      []rundir.ProbeGEMMRow
	Bandwidth []rundir.ProbeBandwidthRow
	Levels    []rundir.LevelRow
	Requests  []rundir.RequestRow
	LevelStat []rundir.LevelStatsRow
}

// Load opens a run directory and reads the tables the analysis needs. Any
// problem is one error naming the file.
func Load(dir string) (*Run, error) {
	r, err := rundir.Open(dir)
	if err != nil {
		return nil, err
	}
	run := &Run{Dir: dir, Manifest: r.Manifest}
	if err := readInto(dir, rundir.TableProbeGEMM, &run.GEMM); err != nil {
		return nil, err
	}
	if err := readInto(dir, rundir.TableProbeBandwidth, &run.Bandwidth); err != nil {
		return nil, err
	}
	if err := readInto(dir, rundir.TableLevels, &run.Levels); err != nil {
		return nil, err
	}
	if err := readInto(dir, rundir.TableRequests, &run.Requests); err != nil {
		return nil, err
	}
	if err := readInto(dir, rundir.TableLevelStats, &run.LevelStat); err != nil {
		return nil, err
	}
	if run.Manifest.HasKind(rundir.KindProbe) && len(run.GEMM) == 0 {
		return nil, fmt.Errorf("%s: the manifest says this run holds a probe, but table %s has no rows", dir, rundir.TableProbeGEMM)
	}
	return run, nil
}

func readInto[T any](dir, table string, dst *[]T) error {
	rows, err := rundir.ReadTable[T](dir, table)
	if err != nil {
		return err
	}
	*dst = rows
	return nil
}
