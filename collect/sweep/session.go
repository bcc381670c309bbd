package sweep

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/headroom-llm/headroom/collect/hostinfo"
	"github.com/headroom-llm/headroom/collect/server"
	"github.com/headroom-llm/headroom/collect/telemetry"
	"github.com/headroom-llm/headroom/internal/buildinfo"
	"github.com/headroom-llm/headroom/internal/cputime"
	"github.com/headroom-llm/headroom/internal/uniq"
	"github.com/headroom-llm/headroom/rundir"
)

// serverStopGrace is how long a started server gets to exit after SIGTERM.
const serverStopGrace = 10 * time.Second

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
		Shard:           s.shardManifest(),
		Replicas:        s.replicasManifest(),
	}
	if c.serverCmd != "" {
		m.Engine.Flags = server.RedactFlags(server.SplitCommand(c.serverCmd), c.apiKey)
	}
	s.redactManifest(m)
	run, err := rundir.Create(dir, m)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", s.secrets.Error(err))
	}
	// held while recording: a --resume of this run waits for it to end
	unlock, err := rundir.Lock(dir)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	defer unlock()
	return s.record(ctx, run, nil)
}

// session is one recording of a sweep into a run directory: everything
// around the load generator. It owns the server process (--server-cmd), the
// log follower (--server-log), GPU sampling, the /metrics scraper, the
// table writers and the manifest.
type session struct {
	s      *Sweep
	run    *rundir.Run
	rec    *runRecorder
	header http.Header

	// Everything alongside the requests runs until the sweep has finished.
	bg     context.Context
	stopBG context.CancelFunc
	bgWG   sync.WaitGroup

	proc      *server.Process // until stopped
	started   *server.Process // the server --server-cmd started, if any
	scraper   *telemetry.Scraper
	scrapeSet *telemetry.ScrapeSet    // the replicas' scrapers, for several servers
	stop      context.CancelCauseFunc // ends the sweep with a cause

	followerCPUOf func() time.Duration // the follower's CPU so far, when one runs
	followerCPU   time.Duration        // the follower's CPU when the last level ended

	// The manifest's warnings and notes from before this attempt (a resumed
	// run's), and the levels completed in it.
	baseWarnings, baseNotes []string
	done                    []rundir.LevelRow
}

// record runs the sweep into run, from level s.startLevel. beforeLevels,
// when not nil, runs once the server answered and the sweep is prepared,
// just before the first level (a resume moves the interrupted level's rows
// aside there).
func (s *Sweep) record(ctx context.Context, run *rundir.Run, beforeLevels func() error) (*rundir.Run, error) {
	s.runID = run.Manifest.RunID
	if run.Manifest.Engine != nil {
		run.Manifest.Engine.BaseURL = s.BaseURL() // a resume may target a new address
	}
	// The session may stop the sweep for a reason of its own (the server it
	// started exited): ctx then ends with that cause.
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	ss := &session{s: s, run: run, header: s.header(), stop: stop}
	ss.bg, ss.stopBG = context.WithCancel(context.Background())
	defer ss.close()
	if err := ss.setReplicas(); err != nil {
		return run, s.abandon(run, "setup", err)
	}
	var err error
	if ss.rec, err = newRunRecorder(run.Dir); err != nil {
		return run, s.abandon(run, "setup", err)
	}
	ss.rec.levelEnded = ss.levelEnded
	steps := []struct {
		phase string
		do    func(context.Context) error
	}{
		{"setup", ss.captureLog},
		{"start server", ss.startServer},
		{"prepare", s.Prepare},
		{"setup", ss.identifyEngine},
		{"prepare", ss.checkContext},
		{"setup", ss.measureClock},
		{"setup", ss.startTelemetry},
		{"resume", func(context.Context) error {
			if beforeLevels == nil {
				return nil
			}
			return beforeLevels()
		}},
		{"setup", ss.saveWorkload},
	}
	for _, st := range steps {
		if err := st.do(ctx); err != nil {
			if cause := context.Cause(ctx); ctx.Err() != nil && !errors.Is(cause, context.Canceled) {
				err = cause // the reason the session stopped, not the step's echo of it
			}
			return run, s.abandon(run, st.phase, err)
		}
	}
	res, runErr := s.Run(ctx, ss.rec)
	return run, ss.finish(res, runErr)
}

// goBG runs f alongside the sweep until the session stops it.
func (ss *session) goBG(f func()) {
	ss.bgWG.Add(1)
	go func() { defer ss.bgWG.Done(); f() }()
}

// stopBackground ends everything running alongside the sweep and waits.
func (ss *session) stopBackground() {
	ss.stopBG()
	ss.bgWG.Wait()
}

// close stops what the session started, whatever happened: the background
// work, the log capture, and last the server (which may take its time; its
// last lines still reach server.log before the capture closes).
func (ss *session) close() {
	ss.stopBackground()
	ss.stopServer()
	if ss.rec != nil && ss.rec.log != nil {
		ss.rec.log.Close()
	}
	if ss.rec != nil {
		ss.rec.closeReplicaLogs()
	}
}

func (ss *session) stopServer() {
	if ss.proc == nil {
		return
	}
	if err := ss.proc.Stop(serverStopGrace); err != nil {
		ss.s.warn(err.Error())
	} else {
		server.RemovePIDFile(ss.run.Dir)
	}
	ss.proc = nil
}

// captureLog opens server.log when there is a log to capture, and starts
// following --server-log.
func (ss *session) captureLog(context.Context) error {
	s, c := ss.s, &ss.s.cfg
	if s.Replicas() > 1 {
		return ss.captureReplicaLogs()
	}
	if c.serverLog == "" && c.serverCmd == "" {
		return nil
	}
	var err error
	if ss.rec.log, err = server.NewLogCapture(ss.run.Dir, s.clock.NS); err != nil {
		return err
	}
	ss.rec.log.Redact(s.secrets)
	if c.serverLog == "" {
		return nil
	}
	// A device (/dev/zero) never ends and a pipe blocks: only a file is
	// followed.
	if err := server.CheckRegular(c.serverLog); err != nil {
		return err
	}
	from := int64(-1)
	if s.startLevel == 0 {
		// The server started before the sweep: its start-up lines
		// (version, configuration, arguments) are at the top of the file.
		// They are kept first, then the lines appended from now on.
		lines, next, whole, err := server.ReadHead(c.serverLog, serverLogHeadBytes)
		if err == nil && len(lines) > 0 {
			now := time.Now()
			for _, l := range lines {
				ss.rec.log.Line(l, now)
			}
			if whole {
				from = next
			} else {
				s.note(fmt.Sprintf("server.log holds the first %d lines of %s (the server's start-up), then the lines written during the sweep", len(lines), c.serverLog))
			}
		}
	}
	follower := &server.Follower{Path: c.serverLog, From: from, Sink: ss.rec.log.Line}
	ss.followerCPUOf = follower.CPU
	ss.goBG(func() {
		if err := follower.Run(ss.bg); err != nil {
			s.warn(fmt.Sprintf("following the server log %s failed: %v", c.serverLog, err))
		}
	})
	return nil
}

// startServer runs --server-cmd and waits until it answers: on a port
// that nothing held before, from a process that still runs and, where the
// system shows it, is the one listening. From then on the sweep stops, as
// an error, if that server exits.
func (ss *session) startServer(ctx context.Context) error {
	s, c := ss.s, &ss.s.cfg
	if c.serverCmd == "" {
		return nil
	}
	hostPort := s.hostPort()
	if err := server.CheckPortFree(ctx, hostPort); err != nil {
		return err
	}
	s.cfg.logf("starting the server: %s", strings.Join(server.RedactFlags(server.SplitCommand(c.serverCmd), c.apiKey), " "))
	var err error
	if ss.proc, err = server.Start(c.serverCmd, ss.rec.log.Line); err != nil {
		return err
	}
	if err := ss.proc.WritePIDFile(ss.run.Dir); err != nil {
		s.warn("could not record the server's process id (a resume after kill -9 cannot stop it): " + err.Error())
	}
	if err := ss.proc.WaitReady(ctx, s.HTTPClient(), s.url(""), c.serverTimeout, ss.header); err != nil {
		return err
	}
	if _, port, err := net.SplitHostPort(hostPort); err == nil && hostinfo.IsLocal(ctx, s.base.Hostname()) {
		n, _ := strconv.Atoi(port)
		ok, err := ss.proc.ConfirmListener(n)
		if err != nil {
			return err
		}
		if !ok {
			s.note(fmt.Sprintf("could not confirm that the process listening on port %d is the server headroom started (its socket is not visible to this user: a container's proxy, or another network namespace)", n))
		}
	}
	proc := ss.proc
	ss.goBG(func() {
		select {
		case <-proc.Exited():
			ss.stop(proc.ExitedError())
		case <-ss.bg.Done():
		}
	})
	ss.started = proc
	s.cfg.logf("the server answers at %s", s.BaseURL())
	return nil
}

// levelEnded runs when a level ends, before its rows are written: the
// follower's CPU during the level is part of the client's self-check, and a
// level that ended while the started server was gone is not complete (an
// error), even when it finished before the exit stopped the sweep (its
// requests fail at once).
func (ss *session) levelEnded(row rundir.LevelRow) error {
	ss.checkFollowerCPU(row)
	ss.s.checkShardStart(row)
	proc := ss.started
	if proc == nil {
		return nil
	}
	select {
	case <-proc.Exited():
		return proc.ExitedError()
	default:
	}
	if row.Errors == 0 {
		return nil
	}
	// Failures: give an exit in progress time to show. The exit shows once
	// the child is reaped and its output read to the end, which a loaded
	// host delayed past 200 ms, and a level was recorded complete on a dead
	// server. Only levels with failures wait, and only while the server
	// lives on.
	t := time.NewTimer(exitGrace)
	defer t.Stop()
	select {
	case <-proc.Exited():
		return proc.ExitedError()
	case <-t.C:
		return nil
	}
}

// exitGrace is how long a level that had failures waits for the server
// headroom started to show its exit.
const exitGrace = 2 * time.Second

// followerCPUWarn is the share of one core that following --server-log
// may take during a level before the manifest says so: it runs on the
// client's cores, and the client's timings are only as good as its CPU.
const followerCPUWarn = 0.1

// checkFollowerCPU warns when following the server log took a noticeable
// share of a core during the level.
func (ss *session) checkFollowerCPU(row rundir.LevelRow) {
	if ss.followerCPUOf == nil {
		return
	}
	cpu := ss.followerCPUOf()
	used := cpu - ss.followerCPU
	ss.followerCPU = cpu
	wall := time.Duration(row.EndNS - row.StartNS)
	if wall <= 0 || used.Seconds() < followerCPUWarn*wall.Seconds() {
		return
	}
	ss.s.warn(fmt.Sprintf("following the server log took %.2f s of CPU during level %d (%.0f%% of one core), on the cores the client measures with: client-side latencies of that level may be inflated",
		used.Seconds(), row.LevelIndex, 100*used.Seconds()/wall.Seconds()))
}

// identifyEngine records which engine answers (its /version, its log's
// first lines) in the manifest.
func (ss *session) identifyEngine(ctx context.Context) error {
	s, m := ss.s, ss.run.Manifest
	var head []string
	if ss.rec.log != nil {
		head = ss.rec.log.Head()
	}
	e := server.Detect(ctx, s.HTTPClient(), s.url(""), ss.header, head)
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
	if s.Replicas() > 1 {
		ss.identifyReplicas(ctx)
	}
	return nil
}

// checkContext refuses a workload that asks for more tokens than the
// server's context holds (max_model_len, when the server says it): every
// request would fail, and a length far beyond any context is a mistake.
func (ss *session) checkContext(context.Context) error {
	maxCtx := ss.run.Manifest.Engine.MaxContextTokens
	if maxCtx <= 0 {
		return nil
	}
	return ss.s.checkContext(maxCtx)
}

// startTelemetry starts GPU and server CPU sampling (when the server is on
// this machine) and the /metrics scraper.
func (ss *session) startTelemetry(ctx context.Context) error {
	s, c, dir := ss.s, &ss.s.cfg, ss.run.Dir
	local := c.serverCmd != "" || hostinfo.IsLocal(ctx, s.base.Hostname())
	if s.Replicas() == 1 {
		if err := ss.startServerCPU(local); err != nil {
			return err
		}
	}
	gpuHere := c.noGPU || c.gpu != nil || local
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
			ss.run.Manifest.GPUs = devs
			if l, ok := src.(interface{ Links() []rundir.GPULink }); ok {
				ss.run.Manifest.GPULinks = l.Links()
			}
			var err error
			if ss.rec.gpu, err = rundir.NewTableWriter[rundir.GPUTelemetryRow](dir, rundir.TableGPUTelemetry, 0); err != nil {
				src.Close()
				return err
			}
			gpu := ss.rec.gpu
			ss.goBG(func() {
				err := telemetry.SampleGPUs(ss.bg, src, telemetry.DefaultGPUInterval, s.clock.NowNS, func(rows []rundir.GPUTelemetryRow) { gpu.Add(rows...) })
				if err != nil {
					s.note("GPU sampling: " + err.Error())
				}
				src.Close()
			})
		} else {
			src.Close()
		}
	}
	if local {
		if err := ss.startCPUEnergy(); err != nil {
			return err
		}
	}
	if s.Replicas() > 1 {
		return ss.startReplicaTelemetry(ctx)
	}
	if c.metricsInterval <= 0 {
		return nil
	}
	var err error
	if ss.rec.metrics, err = rundir.NewTableWriter[rundir.ServerMetricRow](dir, rundir.TableServerMetrics, 0); err != nil {
		return err
	}
	metrics := ss.rec.metrics
	ss.scraper = &telemetry.Scraper{
		URL: s.url("/metrics"), Client: s.HTTPClient(), Interval: c.metricsInterval, Now: s.clock.NowNS, Header: ss.header,
		Sink: func(rows []rundir.ServerMetricRow) {
			for i := range rows {
				rows[i].Labels = s.secrets.String(rows[i].Labels)
			}
			metrics.Add(rows...)
		},
	}
	scraper := ss.scraper
	ss.goBG(func() {
		if err := scraper.Run(ss.bg); errors.Is(err, telemetry.ErrNoMetrics) {
			s.note(err.Error() + ": no server_metrics")
		}
	})
	return nil
}

// startServerCPU samples the server process's threads (server_cpu): the
// process --server-cmd started, or the one listening on the server's port
// on this host. A CPU-served engine is judged by it as a GPU engine by its
// utilisation.
func (ss *session) startServerCPU(local bool) error {
	s := ss.s
	pid := 0
	switch {
	case ss.proc != nil:
		pid = ss.proc.Pid()
	case local:
		if p, ok := cputime.ListeningPID(portOf(s.base)); ok {
			pid = p
		}
	}
	if pid <= 0 {
		if local {
			s.note(fmt.Sprintf("no server CPU samples: no readable process listens on port %d of this host", portOf(s.base)))
		} else {
			s.note(fmt.Sprintf("no server CPU samples: the server at %s is not on this machine", s.base.Hostname()))
		}
		return nil
	}
	w, err := rundir.NewTableWriter[rundir.ServerCPURow](ss.run.Dir, rundir.TableServerCPU, 0)
	if err != nil {
		return err
	}
	ss.rec.cpu = w
	ss.goBG(func() {
		err := telemetry.SampleServerCPU(ss.bg, pid, telemetry.DefaultServerCPUInterval, s.clock.NowNS, func(rows []rundir.ServerCPURow) { w.Add(rows...) })
		if err != nil {
			s.note("server CPU sampling: " + err.Error())
		}
	})
	return nil
}

// startCPUEnergy records the host's RAPL counters (cpu_energy) when the
// server runs here and they are readable, for the energy of a CPU-served
// model. A host without them is the common case and says nothing; counters
// that exist but cannot be read get a note saying why.
func (ss *session) startCPUEnergy() error {
	r, err := telemetry.OpenRAPL(ss.s.cfg.powercap)
	if err != nil {
		if !errors.Is(err, telemetry.ErrNoRAPL) {
			ss.s.note(err.Error())
		}
		return nil
	}
	w, err := rundir.NewTableWriter[rundir.CPUEnergyRow](ss.run.Dir, rundir.TableCPUEnergy, 0)
	if err != nil {
		return err
	}
	ss.rec.energy = w
	ss.goBG(func() {
		telemetry.SampleRAPL(ss.bg, r, telemetry.DefaultGPUInterval, ss.s.clock.NowNS, func(rows []rundir.CPUEnergyRow) { w.Add(rows...) })
	})
	return nil
}

// portOf is a URL's port, the scheme's default when it names none.
func portOf(u *url.URL) int {
	if p, err := strconv.Atoi(u.Port()); err == nil {
		return p
	}
	if u.Scheme == "https" {
		return 443
	}
	return 80
}

// saveWorkload writes the manifest with the workload before the first
// level, and arranges for it to be rewritten after every level.
func (ss *session) saveWorkload(context.Context) error {
	s, m := ss.s, ss.run.Manifest
	if m.Workload == nil {
		// Written now, not only at the end: a sweep killed with kill -9
		// must still say what it was sending, for --resume.
		m.Workload = s.Workload()
	}
	ss.baseWarnings, ss.baseNotes = slices.Clone(m.Warnings), slices.Clone(m.Notes)
	ss.rec.levelSaved = func(row rundir.LevelRow) error {
		if row.Complete {
			ss.done = append(ss.done, row)
		}
		ss.caveats(ss.done)
		return ss.save()
	}
	return ss.save()
}

// caveats sets the manifest's warnings and notes as of the levels done, on
// top of those the run had (a resumed run's): rewritten after every level,
// so that a sweep killed with kill -9 keeps them too; counts in them change
// as levels finish.
func (ss *session) caveats(levels []rundir.LevelRow) {
	m := ss.run.Manifest
	m.Warnings = uniq.Append(slices.Clone(ss.baseWarnings), ss.s.Warnings(levels)...)
	m.Notes = uniq.Append(slices.Clone(ss.baseNotes), ss.s.Notes()...)
}

// save writes the manifest, redacted.
func (ss *session) save() error {
	ss.s.redactManifest(ss.run.Manifest)
	return ss.run.SaveManifest()
}

// finish writes what the sweep left: the last rows, the workload as it
// turned out, the caveats, and the manifest marked complete or stopped.
func (ss *session) finish(res *Result, runErr error) error {
	s, m, dir := ss.s, ss.run.Manifest, ss.run.Dir
	ss.stopBackground()
	if ss.scraper != nil {
		if n, failed, last := ss.scraper.Stats(); failed > 0 && !errors.Is(last, telemetry.ErrNoMetrics) {
			s.note(fmt.Sprintf("%d of %d /metrics scrapes failed (last: %v)", failed, n, last))
		}
	}
	ss.replicaScrapeNotes()
	w := s.Workload()
	if prev := m.Workload; prev != nil && s.startLevel > 0 && !prev.FixedOutput {
		// A resumed sweep: lengths varied before, so they vary in the run,
		// for the reason recorded then (a server that refused min_tokens
		// resumes with fixed output off, but the user did ask for it).
		w.FixedOutput, w.FixedOutputNote = false, prev.FixedOutputNote
	}
	m.Workload = w
	ss.caveats(res.Levels)
	if ss.rec.log != nil {
		ss.rec.log.Flush()
	}
	if ss.rec.replicaLogLines != nil {
		ss.rec.replicaLogLines.Flush()
	}
	if err := ss.rec.stop(); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("sweep: writing %s: %w", dir, err))
		if res.Stopped == nil {
			res.Stopped = &rundir.Stopped{Reason: "error", Phase: "write", Error: err.Error()}
		}
	}
	if res.Stopped != nil {
		res.Stopped.Error = s.secrets.String(res.Stopped.Error)
	}
	s.redactManifest(m)
	if err := ss.run.Finish(res.Stopped); err != nil {
		runErr = errors.Join(runErr, err)
	}
	return s.secrets.Error(runErr)
}

// serverLogHeadBytes is how much of the top of a followed log is kept: a
// vLLM or SGLang start-up, arguments and configuration included, fits.
const serverLogHeadBytes = 64 << 10

// redactManifest replaces the secrets wherever they occur in the
// manifest's string values: a server may report its own API key among the
// facts that engine detection keeps, or echo it in an error that becomes a
// note. Only string values change (never field names, numbers or times),
// so the manifest keeps every field whatever the secret looks like.
func (s *Sweep) redactManifest(m *rundir.Manifest) {
	redactStrings(reflect.ValueOf(m).Elem(), s.secrets.String)
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

// abandon finishes a run that could not start its sweep.
func (s *Sweep) abandon(run *rundir.Run, phase string, err error) error {
	reason := "error"
	if errors.Is(err, context.Canceled) {
		reason = "interrupted"
	}
	run.Manifest.Notes = uniq.Append(run.Manifest.Notes, s.Notes()...)
	run.Manifest.Warnings = uniq.Append(run.Manifest.Warnings, s.Warnings(nil)...)
	s.redactManifest(run.Manifest)
	if ferr := run.Finish(&rundir.Stopped{Reason: reason, Phase: phase, Error: s.secrets.String(err.Error())}); ferr != nil {
		return s.secrets.Error(errors.Join(err, ferr))
	}
	return fmt.Errorf("sweep: %s: %w", phase, s.secrets.Error(err))
}
