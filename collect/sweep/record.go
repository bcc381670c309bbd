package sweep

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/headroom-llm/headroom/collect/hostinfo"
	"github.com/headroom-llm/headroom/collect/server"
	"github.com/headroom-llm/headroom/collect/telemetry"
	"github.com/headroom-llm/headroom/internal/buildinfo"
	"github.com/headroom-llm/headroom/rundir"
)

// serverStopGrace is how long a started server gets to exit after SIGTERM.
const serverStopGrace = 10 * time.Second

// runRecorder writes a sweep's rows into a run directory. Requests, tokens
// and levels are flushed at the end of each level (one part file per level
// and table), so a killed sweep loses at most the level in progress.
type runRecorder struct {
	requests *rundir.TableWriter[rundir.RequestRow]
	tokens   *rundir.TableWriter[rundir.TokenRow]
	levels   *rundir.TableWriter[rundir.LevelRow]
	samples  *rundir.TableWriter[rundir.ClientSampleRow]
	metrics  *rundir.TableWriter[rundir.ServerMetricRow]
	gpu      *rundir.TableWriter[rundir.GPUTelemetryRow]
	log      *server.LogCapture
	// levelSaved, when set, runs after a level's rows are on disk (the
	// manifest is rewritten there).
	levelSaved func(rundir.LevelRow) error
}

func newRunRecorder(dir string) (*runRecorder, error) {
	var r runRecorder
	var err error
	open := func(f func() error) {
		if err == nil {
			err = f()
		}
	}
	open(func() (e error) {
		r.requests, e = rundir.NewTableWriter[rundir.RequestRow](dir, rundir.TableRequests, 0)
		return
	})
	open(func() (e error) {
		r.tokens, e = rundir.NewTableWriter[rundir.TokenRow](dir, rundir.TableTokens, 0)
		return
	})
	open(func() (e error) {
		r.levels, e = rundir.NewTableWriter[rundir.LevelRow](dir, rundir.TableLevels, 0)
		return
	})
	open(func() (e error) {
		r.samples, e = rundir.NewTableWriter[rundir.ClientSampleRow](dir, rundir.TableClientSamples, 0)
		return
	})
	if err != nil {
		return nil, err
	}
	return &r, nil
}

func (r *runRecorder) Request(row rundir.RequestRow, tokens []rundir.TokenRow) {
	r.requests.Add(row)
	r.tokens.Add(tokens...)
}

func (r *runRecorder) ClientSample(row rundir.ClientSampleRow) { r.samples.Add(row) }

// LevelDone flushes every table, so the level is on disk. The level's own
// rows go first: a level whose requests or tokens could not be written is
// recorded as not complete, so a resume runs it again.
func (r *runRecorder) LevelDone(row rundir.LevelRow) error {
	errs := []error{r.requests.Flush(), r.tokens.Flush()}
	if errs[0] != nil || errs[1] != nil {
		row.Complete = false
	}
	r.levels.Add(row)
	errs = append(errs, r.levels.Flush(), r.samples.Flush())
	if r.metrics != nil {
		errs = append(errs, r.metrics.Flush())
	}
	if r.gpu != nil {
		errs = append(errs, r.gpu.Flush())
	}
	if r.log != nil {
		errs = append(errs, r.log.Flush())
	}
	if r.levelSaved != nil {
		errs = append(errs, r.levelSaved(row))
	}
	return errors.Join(errs...)
}

func (r *runRecorder) stop() error {
	errs := []error{r.requests.Stop(), r.tokens.Stop(), r.levels.Stop(), r.samples.Stop()}
	if r.metrics != nil {
		errs = append(errs, r.metrics.Stop())
	}
	if r.gpu != nil {
		errs = append(errs, r.gpu.Stop())
	}
	return errors.Join(errs...)
}

// Record runs the sweep into a new run directory: it starts or follows the
// server if asked, scrapes /metrics and samples GPUs alongside, writes every
// row, and finishes the manifest (complete, or stopped with where and why).
// The run is valid and readable whatever happens; the error says what went
// wrong (context.Canceled when interrupted).
func (s *Sweep) Record(ctx context.Context, dir string) (*rundir.Run, error) {
	c := &s.cfg
	m := &rundir.Manifest{
		HeadroomVersion: buildinfo.Version(),
		Kinds:           []string{rundir.KindSweep},
		Label:           c.label,
		Tags:            c.tags,
		Host:            hostinfo.Collect(),
		Engine:          &rundir.Engine{Name: "unknown", BaseURL: s.BaseURL(), Model: c.model, Description: c.engineDesc},
	}
	if c.serverCmd != "" {
		m.Engine.Flags = server.RedactFlags(server.SplitCommand(c.serverCmd), c.apiKey)
	}
	run, err := rundir.Create(dir, m)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	return s.record(ctx, run, nil)
}

// record runs the sweep into run, from level s.startLevel. beforeLevels,
// when not nil, runs once the server answered and the sweep is prepared,
// just before the first level (a resume moves the interrupted level's rows
// aside there).
func (s *Sweep) record(ctx context.Context, run *rundir.Run, beforeLevels func() error) (*rundir.Run, error) {
	c := &s.cfg
	dir, m := run.Dir, run.Manifest
	s.runID = m.RunID
	if m.Engine != nil {
		m.Engine.BaseURL = s.BaseURL() // a resume may target a new address
	}
	rec, err := newRunRecorder(dir)
	if err != nil {
		return run, s.abandon(run, "setup", err)
	}
	header := http.Header{}
	if c.apiKey != "" {
		header.Set("Authorization", "Bearer "+c.apiKey)
	}
	secrets := s.secretValues

	// Everything alongside the requests runs until the sweep has finished.
	bg, stopBG := context.WithCancel(context.Background())
	var bgWG sync.WaitGroup
	defer func() { stopBG(); bgWG.Wait() }()
	goBG := func(f func()) {
		bgWG.Add(1)
		go func() { defer bgWG.Done(); f() }()
	}

	var proc *server.Process
	stopServer := func() {
		if proc != nil {
			if err := proc.Stop(serverStopGrace); err != nil {
				s.warn(err.Error())
			}
			proc = nil
		}
	}
	defer stopServer()
	if c.serverLog != "" || c.serverCmd != "" {
		if rec.log, err = server.NewLogCapture(dir, s.clock.ns); err != nil {
			return run, s.abandon(run, "setup", err)
		}
		rec.log.Redact(secrets...)
		defer rec.log.Close()
	}
	if c.serverLog != "" {
		from := int64(-1)
		if s.startLevel == 0 {
			// The server started before the sweep: its start-up lines
			// (version, configuration, arguments) are at the top of the file.
			// They are kept first, then the lines appended from now on.
			lines, next, whole, err := server.ReadHead(c.serverLog, serverLogHeadBytes)
			if err == nil && len(lines) > 0 {
				now := time.Now()
				for _, l := range lines {
					rec.log.Line(l, now)
				}
				if whole {
					from = next
				} else {
					s.note(fmt.Sprintf("server.log holds the first %d lines of %s (the server's start-up), then the lines written during the sweep", len(lines), c.serverLog))
				}
			}
		}
		goBG(func() {
			if err := server.FollowFrom(bg, c.serverLog, from, 0, rec.log.Line); err != nil {
				s.warn(fmt.Sprintf("following the server log %s failed: %v", c.serverLog, err))
			}
		})
	}
	if c.serverCmd != "" {
		s.cfg.logf("starting the server: %s", strings.Join(server.RedactFlags(server.SplitCommand(c.serverCmd), c.apiKey), " "))
		if proc, err = server.Start(c.serverCmd, rec.log.Line); err != nil {
			return run, s.abandon(run, "start server", err)
		}
		if err := proc.WaitReady(ctx, s.client, s.url(""), c.serverTimeout, header); err != nil {
			return run, s.abandon(run, "start server", err)
		}
		s.cfg.logf("the server answers at %s", s.BaseURL())
	}

	if err := s.Prepare(ctx); err != nil {
		return run, s.abandon(run, "prepare", err)
	}
	var head []string
	if rec.log != nil {
		head = rec.log.Head()
	}
	e := server.Detect(ctx, s.client, s.url(""), header, head)
	if e.Name != "" {
		if m.Engine.Name != "unknown" && m.Engine.Name != "" && (m.Engine.Name != e.Name || m.Engine.Version != e.Version) {
			s.warn(fmt.Sprintf("the engine changed on resume: %s %s before, %s %s now", m.Engine.Name, m.Engine.Version, e.Name, e.Version))
		}
		m.Engine.Name = e.Name
	}
	m.Engine.Version, m.Engine.Model, m.Engine.MaxContextTokens = e.Version, s.model, e.MaxContextTokens
	if len(e.Config) > 0 {
		m.Engine.Config = e.Config
	}
	if e.Source != "" {
		s.note("engine " + e.Name + " " + e.Version + " identified from " + e.Source)
	}

	gpuHere := c.noGPU || c.gpu != nil || c.serverCmd != "" || hostinfo.IsLocal(ctx, s.base.Hostname())
	if !gpuHere {
		// NVML sees this machine's GPUs, which would be the wrong ones.
		s.note(fmt.Sprintf("no GPU telemetry: the server at %s is not on this machine; run headroom sweep on the server's host for it", s.base.Hostname()))
	}
	if !c.noGPU && gpuHere {
		src := c.gpu
		if src == nil {
			var gerr error
			if src, gerr = telemetry.OpenGPU(); gerr != nil {
				s.note(gerr.Error())
			}
		}
		if devs := src.Devices(); len(devs) > 0 {
			m.GPUs = devs
			if rec.gpu, err = rundir.NewTableWriter[rundir.GPUTelemetryRow](dir, rundir.TableGPUTelemetry, 0); err != nil {
				return run, s.abandon(run, "setup", err)
			}
			goBG(func() {
				err := telemetry.SampleGPUs(bg, src, telemetry.DefaultGPUInterval, s.clock.nowNS, func(rows []rundir.GPUTelemetryRow) { rec.gpu.Add(rows...) })
				if err != nil {
					s.note("GPU sampling: " + err.Error())
				}
				src.Close()
			})
		} else {
			src.Close()
		}
	}
	var scraper *telemetry.Scraper
	if c.metricsInterval > 0 {
		if rec.metrics, err = rundir.NewTableWriter[rundir.ServerMetricRow](dir, rundir.TableServerMetrics, 0); err != nil {
			return run, s.abandon(run, "setup", err)
		}
		scraper = &telemetry.Scraper{
			URL: s.url("/metrics"), Client: s.client, Interval: c.metricsInterval, Now: s.clock.nowNS, Header: header,
			Sink: func(rows []rundir.ServerMetricRow) { rec.metrics.Add(redactMetrics(rows, secrets)...) },
		}
		goBG(func() {
			if err := scraper.Run(bg); errors.Is(err, telemetry.ErrNoMetrics) {
				s.note(err.Error() + ": no server_metrics")
			}
		})
	}
	if beforeLevels != nil {
		if err := beforeLevels(); err != nil {
			return run, s.abandon(run, "resume", err)
		}
	}
	if m.Workload == nil {
		// Written now, not only at the end: a sweep killed with kill -9
		// must still say what it was sending, for --resume.
		m.Workload = s.Workload()
	}
	redactManifest(m, secrets)
	if err := run.SaveManifest(); err != nil {
		return run, s.abandon(run, "setup", err)
	}
	// Warnings and notes as of the levels done, on top of those the run had
	// (a resumed run's): rewritten after every level, so that a sweep killed
	// with kill -9 keeps them too; counts in them change as levels finish.
	baseWarnings, baseNotes := slices.Clone(m.Warnings), slices.Clone(m.Notes)
	caveats := func(levels []rundir.LevelRow) {
		m.Warnings = appendNew(slices.Clone(baseWarnings), s.Warnings(levels)...)
		m.Notes = appendNew(slices.Clone(baseNotes), s.Notes()...)
	}
	var done []rundir.LevelRow
	rec.levelSaved = func(row rundir.LevelRow) error {
		if row.Complete {
			done = append(done, row)
		}
		caveats(done)
		redactManifest(m, secrets)
		return run.SaveManifest()
	}

	res, runErr := s.Run(ctx, rec)

	stopBG()
	bgWG.Wait()
	if scraper != nil {
		if n, failed, last := scraper.Stats(); failed > 0 && !errors.Is(last, telemetry.ErrNoMetrics) {
			s.note(fmt.Sprintf("%d of %d /metrics scrapes failed (last: %v)", failed, n, last))
		}
	}
	w := s.Workload()
	if prev := m.Workload; prev != nil && s.startLevel > 0 && !prev.FixedOutput {
		// A resumed sweep: lengths varied before, so they vary in the run,
		// for the reason recorded then (a server that refused min_tokens
		// resumes with fixed output off, but the user did ask for it).
		w.FixedOutput, w.FixedOutputNote = false, prev.FixedOutputNote
	}
	m.Workload = w
	caveats(res.Levels)
	if rec.log != nil {
		rec.log.Flush()
	}
	if err := rec.stop(); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("sweep: writing %s: %w", dir, err))
		if res.Stopped == nil {
			res.Stopped = &rundir.Stopped{Reason: "error", Phase: "write", Error: err.Error()}
		}
	}
	if res.Stopped != nil {
		res.Stopped.Error = s.redact(res.Stopped.Error)
	}
	redactManifest(m, secrets)
	if err := run.Finish(res.Stopped); err != nil {
		runErr = errors.Join(runErr, err)
	}
	if runErr != nil {
		runErr = s.redactErr(runErr)
	}
	// The data is safe; now the server may take its time to stop, and its
	// last lines still reach server.log.
	stopServer()
	return run, runErr
}

// appendNew appends the values not already in dst.
func appendNew(dst []string, vals ...string) []string {
	for _, v := range vals {
		if !slices.Contains(dst, v) {
			dst = append(dst, v)
		}
	}
	return dst
}

// serverLogHeadBytes is how much of the top of a followed log is kept: a
// vLLM or SGLang start-up, arguments and configuration included, fits.
const serverLogHeadBytes = 64 << 10

// redactManifest replaces the secrets wherever they occur in the
// manifest's string values: a server may report its own API key among the
// facts that engine detection keeps, or echo it in an error that becomes a
// note. Only string values change (never field names, numbers or times),
// so the manifest keeps every field whatever the secret looks like.
func redactManifest(m *rundir.Manifest, secrets []string) {
	if len(secrets) == 0 {
		return
	}
	redactStrings(reflect.ValueOf(m).Elem(), func(v string) string {
		for _, sec := range secrets {
			v = strings.ReplaceAll(v, sec, server.Redacted)
		}
		return v
	})
}

// redactStrings applies fix to every exported string reachable from v:
// fields, slice elements, pointers and map values. Unexported fields (inside
// time.Time, for one) and byte slices (raw JSON) are left alone.
func redactStrings(v reflect.Value, fix func(string) string) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			v.SetString(fix(v.String()))
		}
	case reflect.Pointer:
		if !v.IsNil() {
			redactStrings(v.Elem(), fix)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				redactStrings(v.Field(i), fix)
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		for i := range v.Len() {
			redactStrings(v.Index(i), fix)
		}
	case reflect.Map:
		if v.Type().Elem().Kind() != reflect.String {
			return
		}
		for _, k := range v.MapKeys() {
			v.SetMapIndex(k, reflect.ValueOf(fix(v.MapIndex(k).String())).Convert(v.Type().Elem()))
		}
	}
}

// redactMetrics replaces the secrets in scraped label values.
func redactMetrics(rows []rundir.ServerMetricRow, secrets []string) []rundir.ServerMetricRow {
	for i := range rows {
		for _, sec := range secrets {
			if strings.Contains(rows[i].Labels, sec) {
				rows[i].Labels = strings.ReplaceAll(rows[i].Labels, sec, server.Redacted)
			}
		}
	}
	return rows
}

// abandon finishes a run that could not start its sweep.
func (s *Sweep) abandon(run *rundir.Run, phase string, err error) error {
	reason := "error"
	if errors.Is(err, context.Canceled) {
		reason = "interrupted"
	}
	run.Manifest.Notes = appendNew(run.Manifest.Notes, s.Notes()...)
	run.Manifest.Warnings = appendNew(run.Manifest.Warnings, s.Warnings(nil)...)
	redactManifest(run.Manifest, s.secretValues)
	if ferr := run.Finish(&rundir.Stopped{Reason: reason, Phase: phase, Error: s.redact(err.Error())}); ferr != nil {
		return errors.Join(s.redactErr(err), ferr)
	}
	return fmt.Errorf("sweep: %s: %w", phase, s.redactErr(err))
}

// redactErr hides the secrets in an error's message (it is printed),
// keeping what it wraps for errors.Is.
func (s *Sweep) redactErr(err error) error {
	if msg := s.redact(err.Error()); msg != err.Error() {
		return &redactedError{msg: msg, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
