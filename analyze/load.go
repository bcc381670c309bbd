// Package analyze reads run directories into one report model: roofline,
// per-level statistics, knees, goodput, the roofline gap, diagnosis and
// cost. It is pure: no network, no GPU, no printing. The renderer turns the
// model into HTML and Markdown; the same model is written as analysis.json.
package analyze

import (
	"fmt"
	"os"
	"path/filepath"

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
	Tokens    []rundir.TokenRow
	Metrics   []rundir.ServerMetricRow
	GPU       []rundir.GPUTelemetryRow
	Client    []rundir.ClientSampleRow
	LogLines  []rundir.ServerLogLineRow
	LevelStat []rundir.LevelStatsRow
	// LogPath is the run's server.log, "" when the run has none.
	LogPath string
	// Files lists the data files of the run, relative to Dir.
	Files []string
}

// Load opens a run directory and reads the tables the analysis needs. Any
// problem is one error naming the file.
func Load(dir string) (*Run, error) {
	r, err := rundir.Open(dir)
	if err != nil {
		return nil, err
	}
	run := &Run{Dir: dir, Manifest: r.Manifest}
	reads := []error{
		readInto(dir, rundir.TableProbeGEMM, &run.GEMM),
		readInto(dir, rundir.TableProbeBandwidth, &run.Bandwidth),
		readInto(dir, rundir.TableLevels, &run.Levels),
		readInto(dir, rundir.TableRequests, &run.Requests),
		readInto(dir, rundir.TableTokens, &run.Tokens),
		readInto(dir, rundir.TableServerMetrics, &run.Metrics),
		readInto(dir, rundir.TableGPUTelemetry, &run.GPU),
		readInto(dir, rundir.TableClientSamples, &run.Client),
		readInto(dir, rundir.TableServerLogLines, &run.LogLines),
		readInto(dir, rundir.TableLevelStats, &run.LevelStat),
	}
	for _, err := range reads {
		if err != nil {
			return nil, err
		}
	}
	if run.Manifest.HasKind(rundir.KindProbe) && len(run.GEMM) == 0 {
		return nil, fmt.Errorf("%s: the manifest says this run holds a probe, but table %s has no rows", dir, rundir.TableProbeGEMM)
	}
	if st, err := os.Stat(filepath.Join(dir, rundir.ServerLogFile)); err == nil && st.Mode().IsRegular() {
		run.LogPath = filepath.Join(dir, rundir.ServerLogFile)
	}
	run.Files = dataFiles(dir)
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

// dataFiles lists the manifest, the log and every table part of a run.
func dataFiles(dir string) []string {
	var files []string
	for _, f := range []string{rundir.ManifestFile, rundir.ServerLogFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			files = append(files, f)
		}
	}
	for _, t := range rundir.AllTables {
		parts, _ := rundir.TableParts(dir, t)
		for _, p := range parts {
			if rel, err := filepath.Rel(dir, p); err == nil {
				files = append(files, filepath.ToSlash(rel))
			}
		}
	}
	return files
}
