package sweep

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/headroom-llm/headroom/collect/hostinfo"
	"github.com/headroom-llm/headroom/collect/loadgen"
	"github.com/headroom-llm/headroom/collect/server"
	"github.com/headroom-llm/headroom/collect/telemetry"
	"github.com/headroom-llm/headroom/internal/cputime"
	"github.com/headroom-llm/headroom/rundir"
)

// A sweep against several replicas of one model (--base-url URL1,URL2)
// treats them as one box: the load generator spreads the requests
// (collect/loadgen's balancer) and every request row names its replica;
// here the session does per replica what it does for one server: follow
// its log into server-<i>.log, scrape its /metrics (all replicas in the
// same ticks), sample its process's CPU, and identify its engine.

// parseBaseURLs reads one base URL or several separated by commas.
func parseBaseURLs(s string) ([]*url.URL, error) {
	var out []*url.URL
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" && strings.Contains(s, ",") {
			return nil, fmt.Errorf("base URLs %q: an empty address between commas", s)
		}
		u, err := parseBaseURL(part)
		if err != nil {
			return nil, err
		}
		key := u.Scheme + "://" + u.Host + u.Path
		if seen[key] {
			return nil, fmt.Errorf("base URL %s given twice: each replica is one server", server.RedactURL(u.String()))
		}
		seen[key] = true
		out = append(out, u)
	}
	return out, nil
}

// checkReplicas refuses settings that do not fit n servers.
func (c *config) checkReplicas(n int) error {
	if n == 1 {
		if len(c.replicaLogs) > 0 {
			return fmt.Errorf("%d server logs for one server: give one --server-log per --base-url", len(c.replicaLogs))
		}
		return nil
	}
	if c.serverCmd != "" {
		return errors.New("--server-cmd starts one server, and several base URLs were given: start the replicas yourself and give one --server-log per replica")
	}
	if c.serverLog != "" || (len(c.replicaLogs) > 0 && len(c.replicaLogs) != n) {
		return fmt.Errorf("%d server logs for %d replicas: give one --server-log per --base-url, in the same order", max(len(c.replicaLogs), 1), n)
	}
	return nil
}

// Replicas is the number of servers the load is spread over (1 for one).
func (s *Sweep) Replicas() int { return len(s.bases) }

// replicaURL is path on replica i.
func (s *Sweep) replicaURL(i int, path string) string {
	u := *s.bases[i]
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	return u.String()
}

// replicaBaseURL is replica i's address without credentials.
func (s *Sweep) replicaBaseURL(i int) string { return server.RedactURL(s.bases[i].String()) }

// probeReplicas sends the first short request to every replica but the
// first (which Prepare checked): one that does not answer, or does not
// serve the model, stops the sweep before the first level.
func (s *Sweep) probeReplicas(ctx context.Context) error {
	for i := 1; i < len(s.bases); i++ {
		row, _ := s.gen.DoAt(ctx, i, loadgen.Request{ID: "probe", Prompt: " " + strings.Join(promptWords[:8], " "), MaxTokens: 4, Extra: s.extra})
		if row.Status != rundir.StatusOK && row.Status != rundir.StatusNoTokens {
			return fmt.Errorf("sweep: first request to replica %d (%s) failed: %s", i, s.replicaURL(i, s.endpointPath()), row.Error)
		}
	}
	return nil
}

// replicasManifest lists the replicas for the manifest (nil for one).
func (s *Sweep) replicasManifest() []rundir.Replica {
	if len(s.bases) < 2 {
		return nil
	}
	out := make([]rundir.Replica, len(s.bases))
	for i := range s.bases {
		out[i] = rundir.Replica{Index: i, BaseURL: s.replicaBaseURL(i)}
		if len(s.cfg.replicaLogs) > 0 {
			out[i].ServerLog = rundir.ReplicaLogFile(i)
		}
	}
	return out
}

// setReplicas records the replicas in the manifest; a resumed run must
// keep their number.
func (ss *session) setReplicas() error {
	s, m := ss.s, ss.run.Manifest
	if s.Replicas() < 2 {
		if len(m.Replicas) > 1 {
			return fmt.Errorf("the run spread its load over %d replicas; give all %d base URLs", len(m.Replicas), len(m.Replicas))
		}
		return nil
	}
	if len(m.Replicas) > 0 && len(m.Replicas) != s.Replicas() {
		return fmt.Errorf("the run spread its load over %d replicas, %d base URLs given now", len(m.Replicas), s.Replicas())
	}
	prev := m.Replicas
	m.Replicas = s.replicasManifest()
	for i := range prev { // a resume keeps what the replicas reported
		m.Replicas[i].Engine = prev[i].Engine
	}
	return nil
}

// captureReplicaLogs follows each replica's log file into server-<i>.log,
// the line times in the run's one server_log_lines table.
func (ss *session) captureReplicaLogs() error {
	s, paths := ss.s, ss.s.cfg.replicaLogs
	if len(paths) == 0 {
		return nil
	}
	rows, err := rundir.NewTableWriter[rundir.ServerLogLineRow](ss.run.Dir, rundir.TableServerLogLines, 5*time.Second)
	if err != nil {
		return err
	}
	ss.rec.replicaLogLines = rows
	var cpus []func() time.Duration
	for i, path := range paths {
		if err := server.CheckRegular(path); err != nil {
			return fmt.Errorf("replica %d: %w", i, err)
		}
		c, err := server.NewReplicaLogCapture(ss.run.Dir, i, rows, s.clock.NS)
		if err != nil {
			return fmt.Errorf("replica %d: %w", i, err)
		}
		c.Redact(s.secrets)
		ss.rec.replicaLogs = append(ss.rec.replicaLogs, c)
		from := int64(-1)
		if s.startLevel == 0 {
			// As for one server: the start-up lines first, then what the
			// replica writes during the sweep.
			if lines, next, whole, err := server.ReadHead(path, serverLogHeadBytes); err == nil && len(lines) > 0 {
				now := time.Now()
				for _, l := range lines {
					c.Line(l, now)
				}
				if whole {
					from = next
				}
			}
		}
		follower := &server.Follower{Path: path, From: from, Sink: c.Line}
		cpus = append(cpus, follower.CPU)
		ss.goBG(func() {
			if err := follower.Run(ss.bg); err != nil {
				s.warn(fmt.Sprintf("following replica %d's log %s failed: %v", i, path, err))
			}
		})
	}
	ss.followerCPUOf = func() time.Duration {
		var sum time.Duration
		for _, f := range cpus {
			sum += f()
		}
		return sum
	}
	return nil
}

// identifyReplicas records what each replica reports (its /version, its
// log's first lines) and warns when they are not the same engine and
// model: the set is then not one model served N times.
func (ss *session) identifyReplicas(ctx context.Context) {
	s, m := ss.s, ss.run.Manifest
	for i := range m.Replicas {
		var head []string
		if i < len(ss.rec.replicaLogs) {
			head = ss.rec.replicaLogs[i].Head()
		}
		e := server.Detect(ctx, s.HTTPClient(), s.replicaURL(i, ""), ss.header, head)
		eng := &rundir.Engine{Name: e.Name, Version: e.Version, BaseURL: s.replicaBaseURL(i), Model: s.model,
			MaxContextTokens: e.MaxContextTokens, Config: e.Config}
		if eng.Name == "" {
			eng.Name = "unknown"
		}
		m.Replicas[i].Engine = eng
		if i == 0 {
			continue
		}
		first := m.Replicas[0].Engine
		if first.Name != eng.Name || first.Version != eng.Version {
			s.warn(fmt.Sprintf("the replicas are not the same engine: replica 0 is %s %s, replica %d is %s %s", first.Name, first.Version, i, eng.Name, eng.Version))
		}
		if first.MaxContextTokens != eng.MaxContextTokens && first.MaxContextTokens > 0 && eng.MaxContextTokens > 0 {
			s.warn(fmt.Sprintf("the replicas hold different contexts: %d tokens on replica 0, %d on replica %d", first.MaxContextTokens, eng.MaxContextTokens, i))
		}
	}
	if m.Engine != nil && len(m.Replicas) > 0 && m.Replicas[0].Engine != nil {
		// The set's engine is replica 0's, with the address of the set.
		base := m.Engine.BaseURL
		*m.Engine = *m.Replicas[0].Engine
		m.Engine.BaseURL, m.Engine.Description = base, s.cfg.engineDesc
	}
}

// startReplicaTelemetry scrapes every replica's /metrics in the same
// ticks, and samples the CPU of each replica whose process runs here.
func (ss *session) startReplicaTelemetry(ctx context.Context) error {
	s, c, dir := ss.s, &ss.s.cfg, ss.run.Dir
	var cpu *rundir.TableWriter[rundir.ServerCPURow]
	for i, u := range s.bases {
		if !hostinfo.IsLocal(ctx, u.Hostname()) {
			s.note(fmt.Sprintf("no server CPU samples of replica %d: %s is not on this machine", i, u.Hostname()))
			continue
		}
		pid, ok := cputime.ListeningPID(portOf(u))
		if !ok {
			s.note(fmt.Sprintf("no server CPU samples of replica %d: no readable process listens on port %d of this host", i, portOf(u)))
			continue
		}
		if cpu == nil {
			var err error
			if cpu, err = rundir.NewTableWriter[rundir.ServerCPURow](dir, rundir.TableServerCPU, 0); err != nil {
				return err
			}
			ss.rec.cpu = cpu
		}
		replica := int32(i)
		ss.goBG(func() {
			err := telemetry.SampleServerCPU(ss.bg, pid, telemetry.DefaultServerCPUInterval, s.clock.NowNS, func(rows []rundir.ServerCPURow) {
				for j := range rows {
					rows[j].Replica = &replica
				}
				cpu.Add(rows...)
			})
			if err != nil {
				s.note(fmt.Sprintf("server CPU sampling of replica %d: %v", i, err))
			}
		})
	}
	if c.metricsInterval <= 0 {
		return nil
	}
	metrics, err := rundir.NewTableWriter[rundir.ServerMetricRow](dir, rundir.TableServerMetrics, 0)
	if err != nil {
		return err
	}
	ss.rec.metrics = metrics
	set := &telemetry.ScrapeSet{Interval: c.metricsInterval, Now: s.clock.NowNS,
		Sink: func(_ int, rows []rundir.ServerMetricRow) {
			for i := range rows {
				rows[i].Labels = s.secrets.String(rows[i].Labels)
			}
			metrics.Add(rows...)
		},
		NoMetrics: func(i int, err error) { s.note(fmt.Sprintf("replica %d: %v: no server_metrics from it", i, err)) },
	}
	for i := range s.bases {
		set.Scrapers = append(set.Scrapers, &telemetry.Scraper{URL: s.replicaURL(i, "/metrics"), Client: s.HTTPClient(), Header: ss.header})
	}
	ss.scrapeSet = set
	ss.goBG(func() { set.Run(ss.bg) })
	return nil
}

// replicaScrapeNotes says how many scrapes of each replica failed.
func (ss *session) replicaScrapeNotes() {
	if ss.scrapeSet == nil {
		return
	}
	for i, sc := range ss.scrapeSet.Scrapers {
		if n, failed, last := sc.Stats(); failed > 0 && !errors.Is(last, telemetry.ErrNoMetrics) {
			ss.s.note(fmt.Sprintf("replica %d: %d of %d /metrics scrapes failed (last: %v)", i, failed, n, last))
		}
	}
}
