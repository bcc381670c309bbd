package analyze

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/headroom-llm/headroom/analyze/serverlog"
	"github.com/headroom-llm/headroom/analyze/servermetrics"
	"github.com/headroom-llm/headroom/rundir"
	"github.com/headroom-llm/headroom/stats"
)

// LogInspection is what `headroom inspect-log` found in one server log,
// or in saved /metrics dumps, or both, and the wall they alone support.
type LogInspection struct {
	// File is the log read (RUN/server.log for a run directory); "" when
	// only dumps were read.
	File string `json:"file,omitempty"`
	// Options are those the log was read with, the run's year, engine and
	// clock included; Engine is EngineUnknown when it was detected.
	Options serverlog.Options `json:"-"`
	Summary serverlog.Summary `json:"summary"`
	// ClockOffset is the median of the client's receive time minus the
	// engine's stamp over ClockLines lines (at most maxClockLines); 0
	// lines when the log has no receive times.
	ClockOffset time.Duration `json:"clock_offset_ns,omitempty"`
	ClockLines  int           `json:"clock_lines,omitempty"`
	// Dumps are the /metrics dumps read, with the log or alone.
	Dumps []DumpInspection `json:"dumps,omitempty"`
	// Verdict is the wall the log and the dumps alone support.
	Verdict LogVerdict `json:"verdict"`
}

// DumpInspection is what one saved /metrics dump holds.
type DumpInspection struct {
	File       string `json:"file"`
	Engine     string `json:"engine"`
	Generation string `json:"generation,omitempty"`
	Scrapes    int    `json:"scrapes"`
	// Timed: every scrape has a time; First and Last are then the first
	// and last scrape's (Unix ns).
	Timed       bool  `json:"timed"`
	First, Last int64 `json:"-"`
	// Families is the number of metric families; Samples of samples.
	Families int `json:"families"`
	Samples  int `json:"samples"`
	// The largest readings over the scrapes, -1 when the dump lacks them.
	RunningMax  float64 `json:"running_max"`
	WaitingMax  float64 `json:"waiting_max"`
	KVUsageMax  float64 `json:"kv_usage_max"`
	Preemptions int     `json:"preemptions"` // the counter's increase, or its total for one scrape; -1 when absent
	// Warnings are the reader's (a scale that looks wrong, a histogram cut);
	// Error is why the dump's quantities could not be read.
	Warnings []servermetrics.Warning `json:"warnings,omitempty"`
	Error    string                  `json:"error,omitempty"`
}

// IsMetricsDump reports whether the file at path is a saved Prometheus text
// dump rather than a log.
func IsMetricsDump(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 64*1024)
	n, _ := io.ReadFull(f, head)
	return servermetrics.LooksLikeDump(head[:n])
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
	return Inspect(path, nil, opts)
}

// Inspect scans a log (path; "" for none) and saved /metrics dumps, and
// judges the wall they alone support. A path holding a dump is read as
// one.
func Inspect(path string, dumps []string, opts serverlog.Options) (*LogInspection, error) {
	set := Default()
	if path != "" && !isDir(path) && IsMetricsDump(path) {
		dumps, path = append([]string{path}, dumps...), ""
	}
	ls := newLogSeries()
	li := &LogInspection{Options: opts}
	if path != "" {
		if err := inspectLogFile(path, opts, li, ls, set); err != nil {
			return nil, err
		}
	}
	engine := string(li.Summary.Engine)
	for _, p := range dumps {
		di, err := inspectDump(p, ls, set)
		if err != nil {
			return nil, err
		}
		li.Dumps = append(li.Dumps, di)
		if engine == "" || engine == string(serverlog.EngineUnknown) {
			engine = di.Engine
		}
	}
	kvObservable := false
	if path != "" {
		lg := li.Summary.PreemptionLogging()
		kvObservable = lg == serverlog.PreemptionsAll || lg == serverlog.PreemptionsSampled
		ls.flags = flagsOf(li.Summary.NonDefaultArgs)
	}
	src := ls.sources(path != "", len(dumps) > 0, kvObservable, engine)
	var crashAt *Evidence
	if li.Summary.Crash != "" {
		crashAt = &Evidence{Kind: EvCrashLog, Source: EvidenceLog, Line: li.Summary.CrashAt.Line, Text: li.Summary.CrashAt.Raw, Name: li.Summary.Crash}
	}
	li.Verdict = judgeLog(ls, src, li.Summary.Crash, crashAt, set)
	return li, nil
}

// EvCrashLog is a log line with the engine's fatal error (Name: its class).
const EvCrashLog = "crash_log"

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}

func inspectDump(path string, ls *logSeries, set Settings) (DumpInspection, error) {
	f, err := os.Open(path)
	if err != nil {
		return DumpInspection{}, err
	}
	defer f.Close()
	d, err := servermetrics.ReadDump(f)
	if err != nil {
		return DumpInspection{}, fmt.Errorf("%s: %w", path, err)
	}
	di := DumpInspection{File: path, Engine: d.Engine, Generation: d.Generation, Scrapes: len(d.Snapshots), Timed: d.Timed,
		RunningMax: -1, WaitingMax: -1, KVUsageMax: -1, Preemptions: -1}
	if d.Timed {
		di.First, di.Last = d.Snapshots[0].TimeNS, d.Snapshots[len(d.Snapshots)-1].TimeNS
	}
	for _, s := range d.Snapshots {
		di.Samples += len(s.Samples)
	}
	di.Families = len(d.Help)
	r, warns, err := ls.addDump(d, set)
	if err != nil {
		di.Error = err.Error()
		return di, nil
	}
	di.RunningMax, di.WaitingMax, di.KVUsageMax, di.Preemptions = r.runningMax, r.waitingMax, r.kvMax, r.preemptions
	di.Warnings = append(di.Warnings, warns...)
	return di, nil
}

func inspectLogFile(path string, opts serverlog.Options, li *LogInspection, ls *logSeries, set Settings) error {
	file := path
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		file = filepath.Join(path, rundir.ServerLogFile)
		if err := runLogContext(path, &opts); err != nil {
			return err
		}
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	opts.File = file

	s := serverlog.NewScanner(f, opts)
	z := serverlog.NewSummarizer()
	var offsets []float64
	for s.Scan() {
		ev := s.Event()
		z.Add(ev)
		ls.add(ev, set)
		if !ev.RecvTime.IsZero() && !ev.Time.IsZero() && ev.TimeQuality != serverlog.TimeRelative && len(offsets) < maxClockLines {
			offsets = append(offsets, float64(ev.RecvTime.Sub(ev.Time)))
		}
	}
	if err := s.Err(); err != nil {
		return err
	}
	z.SetScanner(s)
	li.File, li.Options, li.Summary, li.ClockLines = file, opts, z.Summary(), len(offsets)
	if li.Summary.Engine == serverlog.EngineUnknown {
		li.Summary.Engine = s.Engine()
	}
	if li.Summary.Engine == serverlog.EngineUnknown && li.Summary.Counts.Events == 0 {
		return fmt.Errorf("%s: %w among %d lines", file, ErrNoLogEvents, li.Summary.Counts.Lines)
	}
	if len(offsets) > 0 {
		li.ClockOffset = time.Duration(stats.Median(stats.Sorted(offsets)))
	}
	return nil
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
		clock, err := logClock(rows)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		opts.Clock = clock
	}
	return nil
}
