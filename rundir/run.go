package rundir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// Run is an open run directory.
type Run struct {
	Dir      string
	Manifest *Manifest
}

// Create makes a new run directory and writes its manifest marked
// incomplete. The directory must not exist or must be empty, so a new run
// never mixes with an old one.
func Create(dir string, m *Manifest) (*Run, error) {
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("%s: directory exists and is not empty; choose a new run directory", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create run directory: %w", err)
	}
	m.FormatVersion = FormatVersion
	if m.RunID == "" {
		m.RunID = NewRunID()
	}
	if m.StartTime.IsZero() {
		m.StartTime = time.Now().UTC()
	}
	m.Complete = false
	r := &Run{Dir: dir, Manifest: m}
	if err := r.SaveManifest(); err != nil {
		return nil, err
	}
	return r, nil
}

// Open reads a run directory's manifest. It checks every table it finds
// only when Check is called, so opening stays cheap for large archives.
func Open(dir string) (*Run, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s: not a directory", dir)
	}
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	return &Run{Dir: dir, Manifest: m}, nil
}

// SaveManifest rewrites the manifest atomically.
func (r *Run) SaveManifest() error {
	r.Manifest.FormatVersion = FormatVersion
	return WriteManifest(r.Dir, r.Manifest)
}

// Finish records the end of collection. With stopped == nil the run is
// marked complete; otherwise it stays incomplete and records why.
func (r *Run) Finish(stopped *Stopped) error {
	now := time.Now().UTC()
	r.Manifest.EndTime = now
	r.Manifest.Complete = stopped == nil
	if stopped != nil && stopped.Time.IsZero() {
		stopped.Time = now
	}
	r.Manifest.Stopped = stopped
	return r.SaveManifest()
}

// Path returns the path of a file or table inside the run.
func (r *Run) Path(name string) string { return filepath.Join(r.Dir, name) }

// tableTypes pairs every table this format defines with a reader of its
// rows as their Go type: the one list Check, ReadRows and AllTables share.
var tableTypes = []struct {
	name string
	read func(dir, table string) (any, error)
}{
	{TableProbeGEMM, readRows[ProbeGEMMRow]},
	{TableProbeBandwidth, readRows[ProbeBandwidthRow]},
	{TableProbeModelGEMM, readRows[ProbeModelGEMMRow]},
	{TableLevels, readRows[LevelRow]},
	{TableRequests, readRows[RequestRow]},
	{TableTokens, readRows[TokenRow]},
	{TableServerMetrics, readRows[ServerMetricRow]},
	{TableGPUTelemetry, readRows[GPUTelemetryRow]},
	{TableClientSamples, readRows[ClientSampleRow]},
	{TableServerLogLines, readRows[ServerLogLineRow]},
	{TableLevelStats, readRows[LevelStatsRow]},
	{TableServerCPU, readRows[ServerCPURow]},
	{TableCPUEnergy, readRows[CPUEnergyRow]},
}

func readRows[T any](dir, table string) (any, error) {
	rows, err := ReadTable[T](dir, table)
	return rows, err
}

// AllTables lists every table this format defines.
var AllTables = func() []string {
	names := make([]string, len(tableTypes))
	for i, t := range tableTypes {
		names[i] = t.name
	}
	return names
}()

// ReadRows reads every row of one of AllTables as a slice of its row type
// ([]RequestRow for TableRequests, ...), for code that handles every table
// alike. A table this format does not define is an error.
func ReadRows(dir, table string) (any, error) {
	for _, t := range tableTypes {
		if t.name == table {
			return t.read(dir, table)
		}
	}
	return nil, fmt.Errorf("%s: not a table of run format %d", table, FormatVersion)
}

// Check reads every table of the run with its row type, so that a corrupt
// or truncated part file is found before any analysis starts. The error
// names the file and the problem.
func (r *Run) Check() error {
	for _, t := range tableTypes {
		if _, err := t.read(r.Dir, t.name); err != nil {
			return err
		}
	}
	return nil
}

// IsRun reports whether dir holds a manifest (it may still be invalid).
func IsRun(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, ManifestFile))
	return err == nil
}

// FindRuns walks root and returns every directory holding a manifest, in
// lexical order. It does not descend into a run's own folders.
func FindRuns(root string) ([]string, error) {
	var runs []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if IsRun(path) {
			runs = append(runs, path)
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil && !errors.Is(err, filepath.SkipDir) {
		return nil, err
	}
	return runs, nil
}
