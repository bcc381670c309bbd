package analyze

import (
	"strconv"

	"github.com/headroom-llm/headroom/promtext"
	"github.com/headroom-llm/headroom/rundir"
)

// A sweep spread over several replicas of one model (manifest replicas[])
// is analyzed as one box with all their GPUs: throughput, latency, knees,
// goodput and cost over every request; the servers' metrics added scrape
// by scrape (each replica is one label set, as a data-parallel engine's
// ranks are); every replica's log read. Then each replica alone, from its
// own requests, metrics and log, for the balance and the walls of each.

// ReplicaAnalysis is one server of such a set.
type ReplicaAnalysis struct {
	Index         int    `json:"index"`
	BaseURL       string `json:"base_url"`
	Engine        string `json:"engine,omitempty"`
	EngineVersion string `json:"engine_version,omitempty"`
	// Requests and OK are its measured requests over every level, and
	// Share its part of the set's measured requests.
	Requests int     `json:"requests"`
	OK       int     `json:"ok"`
	Share    float64 `json:"share"`
	// PeakOutputTokPerS is its best level's output rate.
	PeakOutputTokPerS float64        `json:"peak_output_tok_per_s"`
	Levels            []ReplicaLevel `json:"levels"`
	// Wall is the wall its own data shows (Diagnosis.Wall), with how sure.
	Wall       string     `json:"wall"`
	Confidence Confidence `json:"confidence"`
	// LogFile is its log in the run directory ("" when none was kept).
	LogFile string `json:"log_file,omitempty"`
}

// ReplicaLevel is one replica at one level of the set's load.
type ReplicaLevel struct {
	LevelIndex    int     `json:"level_index"`
	Load          LoadKey `json:"load"` // the set's load
	Requests      int     `json:"requests"`
	Errors        int     `json:"errors"`
	Share         float64 `json:"share"` // of the set's measured requests at this level
	OutputTokPerS float64 `json:"output_tok_per_s"`
	TTFTP50S      float64 `json:"ttft_p50_s,omitempty"`
	TPOTP50S      float64 `json:"tpot_p50_s,omitempty"`
}

// replicaCount is the number of servers a run spread its load over (1 for
// one server).
func replicaCount(run *Run) int {
	if run.Manifest == nil || len(run.Manifest.Replicas) < 2 {
		return 1
	}
	return len(run.Manifest.Replicas)
}

// replicaRun is replica i alone: its requests and their tokens, its
// metrics, its log and CPU, in the set's level windows. GPU samples are
// left out: which GPUs a replica used is not recorded, and another
// replica's would stand in for its own.
func (r *Run) replicaRun(i int) *Run {
	m := *r.Manifest
	m.Replicas = nil
	rep := r.Manifest.Replicas[i]
	if rep.Engine != nil {
		e := *rep.Engine
		m.Engine = &e
	}
	sub := &Run{Dir: r.Dir, Manifest: &m, Levels: r.Levels, Client: r.Client, src: r.src}
	is := func(p *int32) bool { return p != nil && int(*p) == i }
	ids := map[string]bool{}
	for _, q := range r.Requests {
		if is(q.Replica) {
			sub.Requests = append(sub.Requests, q)
			ids[q.RequestID] = true
		}
	}
	for _, t := range r.Tokens {
		if ids[t.RequestID] {
			sub.Tokens = append(sub.Tokens, t)
		}
	}
	for _, s := range r.Metrics {
		if is(s.Replica) {
			s.Replica = nil
			sub.Metrics = append(sub.Metrics, s)
		}
	}
	for _, c := range r.ServerCPU {
		if is(c.Replica) {
			sub.ServerCPU = append(sub.ServerCPU, c)
		}
	}
	if i < len(r.ReplicaLogs) && r.ReplicaLogs[i] != "" {
		sub.LogPath, sub.logFile = r.ReplicaLogs[i], rep.ServerLog
		for _, l := range r.LogLines {
			if is(l.Replica) {
				sub.LogLines = append(sub.LogLines, l)
			}
		}
	}
	return sub
}

// replicaLogRuns are the set's logs, one run each holding only the log,
// for observing the set: each replica's log on its own clock.
func (r *Run) replicaLogRuns() []*Run {
	var out []*Run
	for i := range replicaCount(r) {
		if i >= len(r.ReplicaLogs) || r.ReplicaLogs[i] == "" {
			continue
		}
		sub := r.replicaRun(i)
		out = append(out, &Run{Dir: r.Dir, Manifest: sub.Manifest, LogPath: sub.LogPath, logFile: sub.logFile,
			LogLines: sub.LogLines, src: r.src})
	}
	return out
}

// metricSamples are a run's server metrics for the analysis; a replica's
// samples carry a replica label, so that each server is one label set.
func metricSample(m rundir.ServerMetricRow) promtext.Sample {
	s := promtext.Sample(m)
	if m.Replica == nil {
		return s
	}
	labels, err := promtext.ParseLabels(s.Labels)
	if err != nil || labels == nil {
		labels = map[string]string{}
	}
	labels["replica"] = strconv.Itoa(int(*m.Replica))
	s.Labels, s.Replica = promtext.CanonicalLabels(labels), nil
	return s
}

// analyzeReplicas analyzes each replica of a set alone and measures the
// balance against the set's levels.
func analyzeReplicas(run *Run, set *SweepAnalysis, probe *Roofline, probeDir string, st Settings) ([]ReplicaAnalysis, error) {
	n := replicaCount(run)
	if n < 2 {
		return nil, nil
	}
	total := map[int]int{}
	all := 0
	for _, l := range set.Levels {
		total[l.LevelIndex] = l.Requests
		all += l.Requests
	}
	var out []ReplicaAnalysis
	for i := range n {
		sub := run.replicaRun(i)
		ra := ReplicaAnalysis{Index: i, BaseURL: run.Manifest.Replicas[i].BaseURL, LogFile: sub.logFile}
		if e := sub.Manifest.Engine; e != nil {
			ra.Engine, ra.EngineVersion = e.Name, e.Version
		}
		sw, _, err := analyzeSweep(sub, probe, probeDir, st)
		if err != nil {
			return nil, err
		}
		ra.Wall, ra.Confidence = sw.Diagnosis.Wall, sw.Diagnosis.Confidence
		byIndex := map[int]LevelStats{}
		for _, l := range sw.Levels {
			byIndex[l.LevelIndex] = l
		}
		for _, setLevel := range set.Levels {
			l := byIndex[setLevel.LevelIndex]
			rl := ReplicaLevel{LevelIndex: setLevel.LevelIndex, Load: setLevel.Load, Requests: l.Requests, Errors: l.Errors,
				OutputTokPerS: l.OutputTokPerS}
			if t := total[setLevel.LevelIndex]; t > 0 {
				rl.Share = float64(l.Requests) / float64(t)
			}
			if l.TTFT != nil {
				rl.TTFTP50S = l.TTFT.P50S
			}
			if l.TPOT != nil {
				rl.TPOTP50S = l.TPOT.P50S
			}
			ra.Requests += l.Requests
			ra.OK += l.OK
			ra.PeakOutputTokPerS = max(ra.PeakOutputTokPerS, l.OutputTokPerS)
			ra.Levels = append(ra.Levels, rl)
		}
		if all > 0 {
			ra.Share = float64(ra.Requests) / float64(all)
		}
		out = append(out, ra)
	}
	return out, nil
}
