package sweep

import (
	"context"
	"errors"
	"fmt"
	"net/http"
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

// LevelDone flushes every table, so the level is on disk.
func (r *runRecorder) LevelDone(row rundir.LevelRow) error {
	r.levels.Add(row)
	errs := []error{r.requests.Flush(), r.tokens.Flush(), r.levels.Flush(), r.samples.Flush()}
	if r.metrics != nil {
		errs = append(errs, r.metrics.Flush())
	}
	if r.gpu != nil {
		errs = append(errs, r.gpu.Flush())
	}
	if r.log != nil {
		errs = append(errs, r.log.Flush())
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
	rec, err := newRunRecorder(dir)
	if err != nil {
		return run, s.abandon(run, "setup", err)
	}
	header := http.Header{}
	if c.apiKey != "" {
		header.Set("Authorization", "Bearer "+c.apiKey)
	}

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
		rec.log.Redact(c.apiKey)
		defer rec.log.Close()
	}
	if c.serverLog != "" {
		goBG(func() {
			if err := server.Follow(bg, c.serverLog, 0, rec.log.Line); err != nil {
				s.warn(fmt.Sprintf("following the server log %s failed: %v", c.serverLog, err))
			}
		})
	}
	if c.serverCmd != "" {
		s.cfg.logf("starting the server: %s", strings.Join(m.Engine.Flags, " "))
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
		m.Engine.Name = e.Name
	}
	m.Engine.Version, m.Engine.Model, m.Engine.MaxContextTokens = e.Version, s.model, e.MaxContextTokens
	if len(e.Config) > 0 {
		m.Engine.Config = e.Config
	}
	if e.Source != "" {
		s.note("engine " + e.Name + " " + e.Version + " identified from " + e.Source)
	}

	if !c.noGPU {
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
			Sink: func(rows []rundir.ServerMetricRow) { rec.metrics.Add(rows...) },
		}
		goBG(func() {
			if err := scraper.Run(bg); errors.Is(err, telemetry.ErrNoMetrics) {
				s.note(err.Error() + ": no server_metrics")
			}
		})
	}
	if err := run.SaveManifest(); err != nil {
		return run, s.abandon(run, "setup", err)
	}

	res, runErr := s.Run(ctx, rec)

	stopBG()
	bgWG.Wait()
	if scraper != nil {
		if n, failed, last := scraper.Stats(); failed > 0 && !errors.Is(last, telemetry.ErrNoMetrics) {
			s.note(fmt.Sprintf("%d of %d /metrics scrapes failed (last: %v)", failed, n, last))
		}
	}
	m.Workload = s.Workload()
	m.Warnings = append(m.Warnings, s.Warnings(res.Levels)...)
	m.Notes = append(m.Notes, s.Notes()...)
	if rec.log != nil {
		rec.log.Flush()
	}
	if err := rec.stop(); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("sweep: writing %s: %w", dir, err))
		if res.Stopped == nil {
			res.Stopped = &rundir.Stopped{Reason: "error", Phase: "write", Error: err.Error()}
		}
	}
	if err := run.Finish(res.Stopped); err != nil {
		runErr = errors.Join(runErr, err)
	}
	// The data is safe; now the server may take its time to stop, and its
	// last lines still reach server.log.
	stopServer()
	return run, runErr
}

// abandon finishes a run that could not start its sweep.
func (s *Sweep) abandon(run *rundir.Run, phase string, err error) error {
	reason := "error"
	if errors.Is(err, context.Canceled) {
		reason = "interrupted"
	}
	run.Manifest.Notes = append(run.Manifest.Notes, s.Notes()...)
	run.Manifest.Warnings = append(run.Manifest.Warnings, s.Warnings(nil)...)
	if ferr := run.Finish(&rundir.Stopped{Reason: reason, Phase: phase, Error: s.redact(err.Error())}); ferr != nil {
		return errors.Join(err, ferr)
	}
	return fmt.Errorf("sweep: %s: %w", phase, err)
}
