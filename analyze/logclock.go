package analyze

import (
	"fmt"

	"github.com/headroom-llm/headroom/analyze/serverlog"
	"github.com/headroom-llm/headroom/rundir"
)

// maxLogClockGap bounds how far the highest line number may lie beyond
// the row count. The collector writes one row per line, so a real table's
// highest line equals its row count; the slack admits a table that lost
// some rows (a part file removed) without letting a corrupt line number
// allocate gigabytes.
const maxLogClockGap = 1 << 20

// logClock is the one place a run's server_log_lines table becomes the
// clock of its server.log (the client's receive time of each line), for
// the report and for inspect-log. Rows may come in any order; a line
// below 1 is ignored; a line number far beyond the number of rows is an
// error naming the table.
func logClock(rows []rundir.ServerLogLineRow) (serverlog.RecvTimes, error) {
	var maxLine int64
	for _, r := range rows {
		maxLine = max(maxLine, r.Line)
	}
	if maxLine > int64(len(rows))+maxLogClockGap {
		return nil, fmt.Errorf("%s: line %d in a table of %d rows: the table is corrupt", rundir.TableServerLogLines, maxLine, len(rows))
	}
	c := make(serverlog.RecvTimes, maxLine)
	for _, r := range rows {
		if r.Line >= 1 {
			c[r.Line-1] = r.RecvNS
		}
	}
	return c, nil
}
