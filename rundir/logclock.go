package rundir

import "fmt"

// LogClock gives the client receive time of each line of server.log, from
// the server_log_lines table: LogClock[i] is the time the collector read
// line i+1, in Unix nanoseconds, and 0 means unknown. Those times share the
// clock of every other client measurement, which the engine's own stamps
// (second resolution, often no year or zone) do not. It satisfies
// serverlog.LineClock.
type LogClock []int64

// RecvTimeNS returns the receive time of the 1-based line and whether it
// is known.
func (c LogClock) RecvTimeNS(line int64) (int64, bool) {
	if line < 1 || line > int64(len(c)) || c[line-1] == 0 {
		return 0, false
	}
	return c[line-1], true
}

// maxLogClockGap bounds how far the highest line number may lie beyond
// the row count. The collector writes one row per line, so a real table's
// highest line equals its row count; the slack admits a table that lost
// some rows (a part file removed) without letting a corrupt line number
// allocate gigabytes.
const maxLogClockGap = 1 << 20

// NewLogClock builds the clock from the rows of server_log_lines (in any
// order). Rows with a line below 1 are ignored. A line number far beyond
// the number of rows is an error naming the table: the table is corrupt.
func NewLogClock(rows []ServerLogLineRow) (LogClock, error) {
	var maxLine int64
	for _, r := range rows {
		maxLine = max(maxLine, r.Line)
	}
	if maxLine > int64(len(rows))+maxLogClockGap {
		return nil, fmt.Errorf("%s: line %d in a table of %d rows: the table is corrupt", TableServerLogLines, maxLine, len(rows))
	}
	c := make(LogClock, maxLine)
	for _, r := range rows {
		if r.Line >= 1 {
			c[r.Line-1] = r.RecvNS
		}
	}
	return c, nil
}
