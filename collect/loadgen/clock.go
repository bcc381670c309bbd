package loadgen

import "time"

// Clock turns time.Time readings (which carry Go's monotonic clock) into
// Unix nanoseconds anchored on one wall-clock reading, so that differences
// between timestamps of a run are exact even if the system clock steps.
// Everything recorded alongside a load (server log lines, /metrics, GPU
// samples) should use the generator's Clock, so that it shares the time base.
type Clock struct {
	start   time.Time // has a monotonic reading
	startNS int64     // its wall-clock time
}

// NewClock starts a time base now.
func NewClock() Clock {
	now := time.Now()
	return Clock{start: now, startNS: now.UnixNano()}
}

// NS is t as Unix nanoseconds on the time base.
func (c Clock) NS(t time.Time) int64 { return c.startNS + int64(t.Sub(c.start)) }

// NowNS is the current time on the time base.
func (c Clock) NowNS() int64 { return c.NS(time.Now()) }

// Time is the monotonic time of a timestamp ns on the time base (NS's
// inverse), to schedule from a recorded time.
func (c Clock) Time(ns int64) time.Time { return c.start.Add(time.Duration(ns - c.startNS)) }

// isZero reports a Clock that was never started.
func (c Clock) isZero() bool { return c.start.IsZero() }
