package sweep

import "time"

// clock turns time.Time readings (which carry Go's monotonic clock) into
// Unix nanoseconds anchored on one wall-clock reading, so that differences
// between timestamps of a run are exact even if the system clock steps.
type clock struct {
	start   time.Time // has a monotonic reading
	startNS int64     // its wall-clock time
}

func newClock() clock {
	now := time.Now()
	return clock{start: now, startNS: now.UnixNano()}
}

// ns is t as Unix nanoseconds on the run's time base.
func (c clock) ns(t time.Time) int64 { return c.startNS + int64(t.Sub(c.start)) }

// nowNS is the current time on the run's time base.
func (c clock) nowNS() int64 { return c.ns(time.Now()) }
