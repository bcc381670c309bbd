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
	ServerCPU []rundir.ServerCPURow
	// LogPath is the run's server.log, "" when the run has none.
	LogPath string
	// Files lists the data files of the run, relative to Dir.
	Files []string
	// Input says what was left out of the rows as read, and what the data
	// says about itself (inputs.go).
	Input []InputNote
}

// Load opens a run directory and reads the tables the analysis needs. Any
// problem is one error naming the file.
func Load(dir string) (*Run, error) {
	return LoadWith(dir, LoadOptions{})
}

// LoadOptions leave out what a caller does not show, so that many runs load
// quickly (headroom compare); the zero value reads everything.
type LoadOptions struct {
	// SkipTokens leaves out the per-chunk tokens table, the largest one:
	// only the inter-token latencies (ITL) need it, not the knees, goodput,
	// cost or the diagnosis.
	SkipTokens bool
	// SkipFiles leaves Run.Files empty (the report's list of data files).
	SkipFiles bool
}

// LoadWith is Load with options.
func LoadWith(dir string, o LoadOptions) (*Run, error) {
	r, err := rundir.Open(dir)
	if err != nil {
		return nil, err
	}
	run := &Run{Dir: dir, Manifest: r.Manifest}
	// One listing of the run says which tables and files exist, so absent
	// tables cost no further system calls (an archive has many runs).
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	present := map[string]bool{}
	for _, e := range entries {
		present[e.Name()] = true
	}
	read := func(table string, f func() error) error {
		if !present[table] || table == rundir.TableTokens && o.SkipTokens {
			return nil
		}
		return f()
	}
	reads := []error{
		read(rundir.TableProbeGEMM, func() error { return readInto(dir, rundir.TableProbeGEMM, &run.GEMM) }),
		read(rundir.TableProbeBandwidth, func() error { return readInto(dir, rundir.TableProbeBandwidth, &run.Bandwidth) }),
		read(rundir.TableLevels, func() error { return readInto(dir, rundir.TableLevels, &run.Levels) }),
		read(rundir.TableRequests, func() error { return readInto(dir, rundir.TableRequests, &run.Requests) }),
		read(rundir.TableTokens, func() error { return readInto(dir, rundir.TableTokens, &run.Tokens) }),
		read(rundir.TableServerMetrics, func() error { return readInto(dir, rundir.TableServerMetrics, &run.Metrics) }),
		read(rundir.TableGPUTelemetry, func() error { return readInto(dir, rundir.TableGPUTelemetry, &run.GPU) }),
		read(rundir.TableClientSamples, func() error { return readInto(dir, rundir.TableClientSamples, &run.Client) }),
		read(rundir.TableServerLogLines, func() error { return readInto(dir, rundir.TableServerLogLines, &run.LogLines) }),
		read(rundir.TableLevelStats, func() error { return readInto(dir, rundir.TableLevelStats, &run.LevelStat) }),
		read(rundir.TableServerCPU, func() error { return readInto(dir, rundir.TableServerCPU, &run.ServerCPU) }),
	}
	for _, err := range reads {
		if err != nil {
			return nil, err
		}
	}
	run.sanitize()
	if run.Manifest.HasKind(rundir.KindProbe) && len(run.GEMM) == 0 {
		return nil, fmt.Errorf("%s: the manifest says this run holds a probe, but table %s has no rows", dir, rundir.TableProbeGEMM)
	}
	if present[rundir.ServerLogFile] {
		if st, err := os.Stat(filepath.Join(dir, rundir.ServerLogFile)); err == nil && st.Mode().IsRegular() {
			run.LogPath = filepath.Join(dir, rundir.ServerLogFile)
		}
	}
	if !o.SkipFiles {
		run.Files = dataFiles(dir)
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
