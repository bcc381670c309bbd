package rundir

import (
	"os"
	"path/filepath"
)

// SummaryFile is headroom's own summary of a closed run: what `headroom
// compare` and `headroom index` keep of the run's analysis, written when
// the run closes, so that they read one small file per run instead of its
// tables and server log. It is derived data, not part of the run's record:
// it names the manifest it was made from and the headroom version and
// analysis settings that made it, and a reader that finds any of them
// changed ignores it and analyses the run again. Other readers (DuckDB,
// pandas) ignore it; deleting it loses nothing. Its encoding is private to
// headroom (docs/run-format.md).
const SummaryFile = "summary.headroom"

// WriteSummaryFile puts data in place as dir's summary file, atomically.
func WriteSummaryFile(dir string, data []byte) error {
	return writeFileAtomic(filepath.Join(dir, SummaryFile), data)
}

// hasSummary reports whether the run directory dir holds a summary file.
func hasSummary(dir string) bool {
	st, err := os.Stat(filepath.Join(dir, SummaryFile))
	return err == nil && st.Mode().IsRegular()
}
