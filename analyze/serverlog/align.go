package serverlog

import (
	"sort"
	"time"
)

// LineClock gives the client receive time of a log line. The capture side
// of a run records, for every line of server.log, when the client read it
// (the run directory's server_log_lines table: line starting at 1,
// recv_time_ns as Unix nanoseconds). Those times share the clock of every
// other client measurement, which the engine's own stamps (second
// resolution, often no year or zone) do not.
type LineClock interface {
	// RecvTimeNS returns the receive time of the 1-based line, in Unix
	// nanoseconds, and whether it is known.
	RecvTimeNS(line int64) (int64, bool)
}

// RecvTimes is a LineClock backed by a slice: RecvTimes[i] is the receive
// time of line i+1 in Unix nanoseconds; 0 means unknown. analyze builds it
// from a run's server_log_lines table.
type RecvTimes []int64

// RecvTimeNS implements LineClock.
func (r RecvTimes) RecvTimeNS(line int64) (int64, bool) {
	if line < 1 || line > int64(len(r)) || r[line-1] == 0 {
		return 0, false
	}
	return r[line-1], true
}

// Align sets RecvTime on each event whose line the clock knows, and
// returns how many it set. Options.Clock does the same while scanning.
func Align(events []Event, c LineClock) int {
	n := 0
	for i := range events {
		if ns, ok := c.RecvTimeNS(events[i].Line); ok {
			events[i].RecvTime = time.Unix(0, ns)
			n++
		}
	}
	return n
}

// ClockOffset estimates how far the engine's clock (as printed, with the
// year and zone from Options) lies behind the client's: the median of
// RecvTime minus Time over events that have both. The estimate includes
// the time a line takes to reach the client, normally milliseconds, and is
// limited by the engine's stamp resolution (one second for vLLM and
// SGLang). It returns the number of events used; zero means no estimate.
func ClockOffset(events []Event) (time.Duration, int) {
	var d []time.Duration
	for i := range events {
		ev := &events[i]
		if ev.RecvTime.IsZero() || ev.Time.IsZero() || ev.TimeQuality == TimeRelative {
			continue
		}
		d = append(d, ev.RecvTime.Sub(ev.Time))
	}
	if len(d) == 0 {
		return 0, 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	m := len(d) / 2
	if len(d)%2 == 1 {
		return d[m], len(d)
	}
	return d[m-1] + (d[m]-d[m-1])/2, len(d)
}
