package compare

import (
	"os"
	"runtime/debug"

	"github.com/headroom-llm/headroom/rundir"
)

// IndexRow is one run in runs.parquet, the index `headroom compare --index`
// writes so that DuckDB (or pandas, Polars) can query every run of an
// archive at once: the dataset's runs row (see DatasetRun), with the run's
// group filled in. Nullable columns (pointers) are NULL when the run does
// not have the number. docs/compare.md documents the columns.
type IndexRow = DatasetRun

// Index returns one index row per run, in the comparison's order, then the
// runs left out.
func (c *Comparison) Index() []IndexRow {
	rows := make([]IndexRow, 0, len(c.Runs)+len(c.LeftOut))
	for _, r := range c.Runs {
		rows = append(rows, runRow(r, c.manifest(r.Dir), ""))
	}
	for _, l := range c.LeftOut {
		rows = append(rows, runRow(l.Run, c.manifest(l.Dir), l.Why))
	}
	if c.SLO != nil {
		for i := range rows {
			rows[i].SLO = c.SLO.Spec
		}
	}
	return rows
}

// WriteIndex writes the comparison's index as one Parquet file.
func (c *Comparison) WriteIndex(path string) error {
	return rundir.WriteParquetFile(path, c.Index())
}

func ptr[T any](v T) *T { return &v }

func positive(v float64) *float64 {
	if v > 0 {
		return &v
	}
	return nil
}

func positiveInt(v int) *int64 {
	if v > 0 {
		x := int64(v)
		return &x
	}
	return nil
}

func nonEmpty(s string) *string {
	if s != "" {
		return &s
	}
	return nil
}

// The garbage collector's settings for a compare or index of an archive
// (ArchiveGC): each run's rows and summary are garbage once the run is
// done, while what stays live (the comparison's summaries, the index's
// buffered rows) is a few hundred MiB at most at 10,000 runs. A higher
// target makes the collector run a fifth as often; the memory limit keeps
// the process well under 1 GiB all the same, the collector working harder
// only as the heap nears it.
const (
	archiveGCPercent   = 400
	archiveMemoryLimit = 768 << 20
)

// ArchiveGC sets the garbage collector for a compare or index of many runs
// (the GOGC and GOMEMLIMIT environment variables, when set, win) and
// returns the function that restores the settings before.
func ArchiveGC() (restore func()) {
	gc, limit := -2, int64(-1) // -2: left as it was
	if os.Getenv("GOGC") == "" {
		gc = debug.SetGCPercent(archiveGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		limit = debug.SetMemoryLimit(archiveMemoryLimit)
	}
	return func() {
		if gc != -2 {
			debug.SetGCPercent(gc)
		}
		if limit >= 0 {
			debug.SetMemoryLimit(limit)
		}
	}
}
