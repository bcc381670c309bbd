// Package analyze reads run directories into one report model: roofline,
// per-level statistics, knees, goodput, the roofline gap, diagnosis and
// cost. It is pure: no network, no GPU, no printing. The renderer turns the
// model into HTML and Markdown; the same model is written as analysis.json.
package analyze

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/headroom-llm/headroom/rundir"
)

// Run is everything read from one run directory.
type Run struct {
	Dir       string
	Manifest  *rundir.Manifest
	GEMM      []rundir.ProbeGEMMRow
	Bandwidth []rundir.ProbeBandwidthRow
	ModelGEMM []rundir.ProbeModelGEMMRow
	Levels    []rundir.LevelRow
	Requests  []rundir.RequestRow
	Tokens    []rundir.TokenRow
	Metrics   []rundir.ServerMetricRow
	GPU       []rundir.GPUTelemetryRow
	Client    []rundir.ClientSampleRow
	LogLines  []rundir.ServerLogLineRow
	LevelStat []rundir.LevelStatsRow
	ServerCPU []rundir.ServerCPURow
	CPUEnergy []rundir.CPUEnergyRow
	// LogPath is the run's server.log, "" when the run has none.
	LogPath string
	// ReplicaLogs are the logs of a run spread over several replicas, by
	// replica index ("" where a replica's log was not kept).
	ReplicaLogs []string
	// logFile is the file LogPath names inside the run ("": server.log).
	logFile string
	// File is a bare server log or saved /metrics dump given in place of a
	// run directory: the report gives the wall it alone supports.
	File string
	// Files lists the data files of the run, relative to Dir.
	Files []string
	// Notes say what was left out of the rows as read, and what the data
	// says about itself (inputs.go).
	Notes []Note

	src       rundir.Dir // where the run was read; zero for a run made in memory
	sanitized bool       // sanitize has run: once at load, or in Analyze for a run made in memory
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
	// RowsOnly reads the manifest, levels and requests and nothing else:
	// enough for a dataset's rows (headroom index) when the run's analysis
	// is already known, not for an analysis.
	RowsOnly bool
	// Manifest, when set, is the run's manifest as the caller has read it
	// (headroom index reads it first for the run's id): it is not read
	// again.
	Manifest *rundir.Manifest
	// Levels, when set, are the run's levels rows as the caller has them
	// (from the run's own summary, which keeps them as its analysis read
	// them): the levels table is not read.
	Levels *[]rundir.LevelRow
}

// LoadWith is Load with options.
func LoadWith(dir string, o LoadOptions) (*Run, error) {
	if st, err := os.Stat(dir); err == nil && st.Mode().IsRegular() {
		return loadFile(dir)
	}
	return LoadFrom(rundir.LocalDir(dir), o)
}

// LoadFrom is LoadWith for a run directory anywhere: on this machine or in
// object storage (rundir.RemoteDir). Run.Dir is then the run's URL.
func LoadFrom(d rundir.Dir, o LoadOptions) (*Run, error) {
	m := o.Manifest
	if m == nil {
		var err error
		if m, err = d.Manifest(); err != nil {
			return nil, err
		}
	}
	dir := d.Name
	run := &Run{Dir: dir, Manifest: m, src: d}
	// One listing of the run says which tables and files exist, so absent
	// tables cost no further system calls (an archive has many runs).
	names, err := d.Entries()
	if err != nil {
		return nil, err
	}
	present := map[string]bool{}
	for _, n := range names {
		present[n] = true
	}
	read := func(table string, f func() error) error {
		if !present[table] || table == rundir.TableTokens && o.SkipTokens {
			return nil
		}
		if o.RowsOnly && table != rundir.TableLevels && table != rundir.TableRequests {
			return nil
		}
		if table == rundir.TableLevels && o.Levels != nil {
			run.Levels = *o.Levels
			return nil
		}
		return f()
	}
	reads := []error{
		read(rundir.TableProbeGEMM, func() error { return readInto(d, rundir.TableProbeGEMM, &run.GEMM) }),
		read(rundir.TableProbeBandwidth, func() error { return readInto(d, rundir.TableProbeBandwidth, &run.Bandwidth) }),
		read(rundir.TableProbeModelGEMM, func() error { return readInto(d, rundir.TableProbeModelGEMM, &run.ModelGEMM) }),
		read(rundir.TableLevels, func() error { return readInto(d, rundir.TableLevels, &run.Levels) }),
		read(rundir.TableRequests, func() error { return readInto(d, rundir.TableRequests, &run.Requests) }),
		read(rundir.TableTokens, func() error { return readInto(d, rundir.TableTokens, &run.Tokens) }),
		read(rundir.TableServerMetrics, func() error { return readInto(d, rundir.TableServerMetrics, &run.Metrics) }),
		read(rundir.TableGPUTelemetry, func() error { return readInto(d, rundir.TableGPUTelemetry, &run.GPU) }),
		read(rundir.TableClientSamples, func() error { return readInto(d, rundir.TableClientSamples, &run.Client) }),
		read(rundir.TableServerLogLines, func() error { return readInto(d, rundir.TableServerLogLines, &run.LogLines) }),
		read(rundir.TableLevelStats, func() error { return readInto(d, rundir.TableLevelStats, &run.LevelStat) }),
		read(rundir.TableServerCPU, func() error { return readInto(d, rundir.TableServerCPU, &run.ServerCPU) }),
		read(rundir.TableCPUEnergy, func() error { return readInto(d, rundir.TableCPUEnergy, &run.CPUEnergy) }),
	}
	for _, err := range reads {
		if err != nil {
			return nil, err
		}
	}
	run.sanitize()
	if run.Manifest.HasKind(rundir.KindProbe) && len(run.GEMM) == 0 && !o.RowsOnly {
		return nil, fmt.Errorf("%s: the manifest says this run holds a probe, but table %s has no rows", dir, rundir.TableProbeGEMM)
	}
	if present[rundir.ServerLogFile] && d.IsRegular(rundir.ServerLogFile) {
		run.LogPath = d.Path(rundir.ServerLogFile)
	}
	if reps := m.Replicas; len(reps) > 1 {
		run.ReplicaLogs = make([]string, len(reps))
		for i, rp := range reps {
			if rp.Index == i && rp.ServerLog != "" && present[rp.ServerLog] && d.IsRegular(rp.ServerLog) {
				run.ReplicaLogs[i] = d.Path(rp.ServerLog)
			}
		}
	}
	if !o.SkipFiles {
		run.Files = dataFiles(d)
	}
	return run, nil
}

// openLog opens the run's server log: from where the run was read, or the
// file LogPath names for a run made in memory.
func (r *Run) openLog() (io.ReadCloser, error) {
	if r.src.Name != "" {
		if r.logFile != "" {
			return r.src.OpenFile(r.logFile)
		}
		return r.src.OpenFile(rundir.ServerLogFile)
	}
	return os.Open(r.LogPath)
}

func readInto[T any](d rundir.Dir, table string, dst *[]T) error {
	rows, err := rundir.ReadDirTable[T](d, table)
	if err != nil {
		return err
	}
	*dst = rows
	return nil
}

// dataFiles lists the manifest, the log and every table part of a run.
func dataFiles(d rundir.Dir) []string {
	var files []string
	files = append(files, rundir.ManifestFile, rundir.ServerLogFile)
	if m, err := d.Manifest(); err == nil {
		for _, r := range m.Replicas {
			if r.ServerLog != "" {
				files = append(files, r.ServerLog)
			}
		}
	}
	files = slices.DeleteFunc(files, func(f string) bool { return !d.IsRegular(f) })
	for _, t := range rundir.AllTables {
		parts, _ := d.Parts(t)
		files = append(files, parts...)
	}
	return files
}

// loadFile takes a bare server log or /metrics dump as a run without a
// sweep: its manifest names only the file.
func loadFile(path string) (*Run, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	kind := "server-log"
	if IsMetricsDump(path) {
		kind = "metrics-dump"
	}
	m := &rundir.Manifest{Kinds: []string{kind}, Label: filepath.Base(path), StartTime: st.ModTime().UTC(),
		Source: &rundir.Source{File: path, Tool: kind},
		Notes:  []string{"a bare " + strings.ReplaceAll(kind, "-", " ") + ", reported without a run directory: start_time is the file's modification time"}}
	return &Run{Dir: path, Manifest: m, File: path}, nil
}
