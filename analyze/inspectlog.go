package analyze

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/headroom-llm/headroom/analyze/serverlog"
	"github.com/headroom-llm/headroom/rundir"
	"github.com/headroom-llm/headroom/stats"
)

// LogInspection is what `headroom inspect-log` found in one server log.
type LogInspection struct {
	// File is the log read (RUN/server.log for a run directory).
	File string
	// Options are those the log was read with, the run's year, engine and
	// clock included; Engine is EngineUnknown when it was detected.
	Options serverlog.Options
	Summary serverlog.Summary
	// ClockOffset is the median of the client's receive time minus the
	// engine's stamp over ClockLines lines (at most maxClockLines); 0
	// lines when the log has no receive times.
	ClockOffset time.Duration
	ClockLines  int
}

// ErrNoLogEvents says that a log held no line of any engine headroom reads.
var ErrNoLogEvents = errors.New("no vLLM, SGLang, llama.cpp, test-engine or transformers-cb lines")

// maxClockLines bounds the offsets kept for the clock's median: enough for
// a stable estimate, a bounded memory on a 1 GiB log.
const maxClockLines = 100000

// InspectLog scans one log, or a run directory's server.log, and
// summarises it. Given a run directory it takes the year, the engine and
// the log clock from the run.
func InspectLog(path string, opts serverlog.Options) (*LogInspection, error) {
	file := path
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		file = filepath.Join(path, rundir.ServerLogFile)
		if err := runLogContext(path, &opts); err != nil {
			return nil, err
		}
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	opts.File = file

	s := serverlog.NewScanner(f, opts)
	z := serverlog.NewSummarizer()
	var offsets []float64
	for s.Scan() {
		ev := s.Event()
		z.Add(ev)
		if !ev.RecvTime.IsZero() && !ev.Time.IsZero() && ev.TimeQuality != serverlog.TimeRelative && len(offsets) < maxClockLines {
			offsets = append(offsets, float64(ev.RecvTime.Sub(ev.Time)))
		}
	}
	if err := s.Err(); err != nil {
		return nil, err
	}
	z.SetScanner(s)
	li := &LogInspection{File: file, Options: opts, Summary: z.Summary(), ClockLines: len(offsets)}
	if li.Summary.Engine == serverlog.EngineUnknown {
		li.Summary.Engine = s.Engine()
	}
	if li.Summary.Engine == serverlog.EngineUnknown && li.Summary.Counts.Events == 0 {
		return nil, fmt.Errorf("%s: %w among %d lines", file, ErrNoLogEvents, li.Summary.Counts.Lines)
	}
	if len(offsets) > 0 {
		li.ClockOffset = time.Duration(stats.Median(stats.Sorted(offsets)))
	}
	return li, nil
}

// runLogContext takes the zone-free start time and the engine of a run
// directory's manifest, and its log clock.
func runLogContext(dir string, opts *serverlog.Options) error {
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		return err
	}
	if !m.StartTime.IsZero() {
		opts.Reference = m.StartTime
	}
	if opts.Engine == serverlog.EngineUnknown && m.Engine != nil {
		if e, err := serverlog.ParseEngine(m.Engine.Name); err == nil {
			opts.Engine = e
		}
	}
	rows, err := rundir.ReadTable[rundir.ServerLogLineRow](dir, rundir.TableServerLogLines)
	if err != nil {
		return err
	}
	if len(rows) > 0 {
		clock, err := rundir.NewLogClock(rows)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		opts.Clock = clock
	}
	return nil
}
