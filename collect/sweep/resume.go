package sweep

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"github.com/headroom-llm/headroom/collect/loadgen"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/headroom-llm/headroom/collect/server"
	"github.com/headroom-llm/headroom/internal/buildinfo"
	"github.com/headroom-llm/headroom/rundir"
)

// SupersededDir is the folder of a run that receives the rows of a level
// that was interrupted and then run again by a resume: kept, never read by
// the analysis, never mixed with the level's new rows.
const SupersededDir = "superseded"

// ErrNothingToResume is returned (wrapped) for a run that is complete.
var ErrNothingToResume = errors.New("the run is complete: nothing to resume")

// ResumeOptions returns the options that send the same workload as the
// sweep recorded in m: endpoint, model, levels or rates, request counts,
// warm-up, lengths, dataset, seed, temperature, timeout, error limit,
// whether fixed output lengths were sent, label, tags and description.
// Connection options (base URL, API key, server command or log, telemetry)
// are the caller's.
func ResumeOptions(m *rundir.Manifest) ([]Option, error) {
	w := m.Workload
	if !m.HasKind(rundir.KindSweep) || w == nil || m.Source != nil {
		return nil, errors.New("not a sweep recorded by headroom sweep (no workload in the manifest)")
	}
	if m.Shard != nil {
		return nil, fmt.Errorf("shard %d of %d of a sweep from several hosts cannot be resumed: its levels start at shared times that have passed; merge what it holds (headroom merge marks its unfinished levels partial) or run the plan again", m.Shard.Index, m.Shard.Count)
	}
	opts := []Option{
		WithEndpoint(Endpoint(cmp.Or(w.EndpointPath, w.Endpoint))),
		WithExtraBody(w.ExtraBody),
		WithStopWhenSaturated(w.StopWhenSaturated),
		WithRequestsPerLevel(w.RequestsPerLevel),
		WithDurationPerLevel(time.Duration(w.DurationPerLevelS * float64(time.Second))),
		WithWarmup(w.WarmupPerLevel),
		WithSharedPrefix(w.SharedPrefixTokens),
		WithSeed(w.Seed),
		WithBalance(loadgen.Balance(w.Balance)),
		WithTemperature(w.Temperature),
		WithLabel(m.Label),
		WithTags(m.Tags...),
	}
	if w.Prompt.Kind != "dataset" && w.Prompt.Kind != "trace" {
		opts = append(opts, WithPromptTokens(distOf(w.Prompt)))
	}
	if w.Output.Kind != "trace" {
		opts = append(opts, WithOutputTokens(distOf(w.Output)))
	}
	if w.Dataset != "" {
		d := Dataset{Path: w.Dataset}
		if ds := w.DatasetSample; ds != nil {
			d.Name, d.DisableShuffle, d.OutputTokens = ds.Format, !ds.Shuffled, ds.OutputOverride
		}
		opts = append(opts, WithNamedDataset(d))
	}
	if w.MaxModelLen > 0 {
		opts = append(opts, WithMaxModelLen(w.MaxModelLen))
	}
	if w.TimeoutPerRequest > 0 {
		opts = append(opts, WithTimeout(time.Duration(w.TimeoutPerRequest*float64(time.Second))))
	}
	if w.MaxErrorRate != nil {
		opts = append(opts, WithMaxErrorRate(*w.MaxErrorRate))
	}
	fixed := w.FixedOutput
	if w.FixedOutputSent != nil {
		fixed = *w.FixedOutputSent
	}
	opts = append(opts, WithFixedOutput(fixed))
	if w.Burstiness > 0 {
		opts = append(opts, WithBurstiness(w.Burstiness))
	}
	if ss := w.Sessions; ss != nil {
		opts = append(opts, WithSessions(Sessions{TurnsMean: ss.TurnsMean, TurnsStddev: ss.TurnsStddev, MaxTurns: ss.MaxTurns,
			ThinkMean: time.Duration(ss.ThinkMeanS * float64(time.Second)), ThinkStddev: time.Duration(ss.ThinkStddevS * float64(time.Second)),
			PerLevel: ss.PerLevel}))
	}
	if w.Search != nil {
		return nil, errors.New("a search (--find-max) cannot be resumed: run it again")
	}
	switch {
	case w.Trace != nil:
		opts = append(opts, WithTrace(Trace{Path: w.Trace.Path, Format: w.Trace.Format, Speeds: w.Trace.Speeds, BlockSize: w.Trace.BlockSize}),
			WithMaxInFlight(w.MaxConcurrency))
	case w.Ramp != nil:
		opts = append(opts, WithRamp(w.Ramp.Kind, w.Ramp.StartRPS, w.Ramp.EndRPS, w.MaxConcurrency))
	case w.Mode == "open":
		opts = append(opts, WithRates(w.MaxConcurrency, w.RatesRPS...))
	case len(w.Levels) > 0:
		opts = append(opts, WithLevels(w.Levels...))
	default:
		return nil, errors.New("the manifest's workload has neither levels nor rates")
	}
	if e := m.Engine; e != nil {
		opts = append(opts, WithModel(e.Model), WithEngineDescription(e.Description))
	}
	return opts, nil
}

func distOf(d rundir.Dist) Dist {
	return Dist{Kind: d.Kind, Mean: d.Mean, StdDev: d.StdDev, Min: d.Min, Max: d.Max}
}

// Resume continues an interrupted sweep in dir (see ResumeOptions for the
// options that send the same workload): the levels that completed are
// kept, and the sweep goes on with the first level that did not. Rows that
// the interrupted level left (a Ctrl-C flushes them) move to
// superseded/resume-N/, and the level runs again with the same requests
// (prompts and lengths are seeded by level and sequence number). The
// manifest records the resume under "resumed".
func (s *Sweep) Resume(ctx context.Context, dir string) (*rundir.Run, error) {
	// Taken before the manifest is read, so that what it says stays true
	// while this resume decides from it.
	unlock, err := rundir.Lock(dir)
	if err != nil {
		return nil, fmt.Errorf("sweep --resume: %w", err)
	}
	defer unlock()
	run, err := rundir.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("sweep --resume: %w", err)
	}
	m := run.Manifest
	if m.Complete {
		return nil, fmt.Errorf("sweep --resume: %s: %w", dir, ErrNothingToResume)
	}
	if m.Workload == nil || !m.HasKind(rundir.KindSweep) {
		return nil, fmt.Errorf("sweep --resume: %s: not a sweep recorded by headroom sweep (no workload in the manifest)", filepath.Join(dir, rundir.ManifestFile))
	}
	// A server that the killed sweep started may still run: it is stopped
	// before anything else, so that nothing measures it.
	if msg, err := server.KillLeftover(dir, serverStopGrace); err != nil {
		s.warn(err.Error())
	} else if msg != "" {
		s.note(msg)
		s.cfg.logf("%s", msg)
	}
	levels := len(s.plan())
	plan, err := planResume(dir, levels)
	if err != nil {
		return nil, fmt.Errorf("sweep --resume: %w", err)
	}
	if plan.next >= levels {
		// Killed after its last level was written, before the manifest
		// said so: nothing is left to send, and no server is needed.
		removeTempFiles(dir)
		m.Notes = append(m.Notes, fmt.Sprintf("resume found all %d levels on disk: the run was only marked complete", levels))
		if err := run.Finish(nil); err != nil {
			return run, fmt.Errorf("sweep --resume: %w", err)
		}
		s.cfg.logf("%s: all %d levels were on disk; marked complete", dir, levels)
		return run, nil
	}
	// What a kill left half-written goes before any writer of this attempt
	// starts.
	removeTempFiles(dir)
	s.startLevel = plan.next
	resume := rundir.Resume{Time: time.Now().UTC(), FromLevel: plan.next, HeadroomVersion: buildinfo.Version()}
	before := func() error {
		if len(plan.supersede) > 0 {
			resume.Superseded = filepath.ToSlash(filepath.Join(SupersededDir, fmt.Sprintf("resume-%d", len(m.Resumed)+1)))
			if err := moveParts(dir, resume.Superseded, plan.supersede); err != nil {
				return err
			}
			s.note(fmt.Sprintf("resumed at level %d of %d: the %d requests (and their tokens and level row) that the interrupted attempt at it left were moved to %s", plan.next+1, levels, plan.supersededRequests, resume.Superseded))
		} else {
			s.note(fmt.Sprintf("resumed at level %d of %d", plan.next+1, levels))
		}
		if s.cfg.serverCmd != "" && m.Engine != nil {
			flags := server.RedactFlags(server.SplitCommand(s.cfg.serverCmd), s.cfg.apiKey)
			switch {
			case len(m.Engine.Flags) == 0:
				m.Engine.Flags = flags
			case !slices.Equal(flags, m.Engine.Flags):
				s.warn(fmt.Sprintf("resumed at level %d of %d with another server command than engine.flags records: %s", plan.next+1, levels, strings.Join(flags, " ")))
			}
		}
		m.Resumed = append(m.Resumed, resume)
		m.Stopped = nil
		m.Complete = false
		return nil
	}
	s.cfg.logf("resuming %s at level %d of %d", dir, plan.next+1, levels)
	return s.record(ctx, run, before)
}

// resumePlan says where a resumed sweep starts and which part files hold
// rows of levels that did not complete.
type resumePlan struct {
	next               int      // first level to run
	supersede          []string // part files, relative to the run
	supersededRequests int
}

// planResume reads the tables written once per level (levels, requests,
// tokens: the recorder flushes them at each level's end, so a part holds
// one level's rows) of dir: the
// levels that completed must be the first ones (0..k-1), and the sweep
// resumes at k. Parts holding only rows of other levels are superseded; a
// part mixing both is an error (no headroom writes one).
func planResume(dir string, levels int) (resumePlan, error) {
	var p resumePlan
	done := map[int32]bool{}
	levelParts, err := rundir.TableParts(dir, rundir.TableLevels)
	if err != nil {
		return p, err
	}
	type part struct {
		path string
		keep bool
	}
	var parts []part
	for _, path := range levelParts {
		rows, err := rundir.ReadParquetFile[rundir.LevelRow](path)
		if err != nil {
			return p, err
		}
		keep := false
		for _, r := range rows {
			if r.Complete {
				done[r.LevelIndex] = true
				keep = true
			}
		}
		for _, r := range rows {
			if !r.Complete && keep {
				return p, fmt.Errorf("%s: holds a complete and an incomplete level; cannot tell which rows to keep", path)
			}
		}
		parts = append(parts, part{path, keep})
	}
	for p.next < levels && done[int32(p.next)] {
		p.next++
	}
	for li := range done {
		if int(li) >= p.next {
			return p, fmt.Errorf("%s: level %d completed but level %d did not; cannot resume a sweep with a gap", filepath.Join(dir, rundir.TableLevels), li, p.next)
		}
	}
	kept := map[string]bool{} // request ids of kept levels
	reqParts, err := rundir.TableParts(dir, rundir.TableRequests)
	if err != nil {
		return p, err
	}
	for _, path := range reqParts {
		rows, err := rundir.ReadParquetFile[rundir.RequestRow](path)
		if err != nil {
			return p, err
		}
		var in, out int
		for _, r := range rows {
			if done[r.LevelIndex] {
				in++
				kept[r.RequestID] = true
			} else {
				out++
			}
		}
		if in > 0 && out > 0 {
			return p, fmt.Errorf("%s: holds requests of a complete and an incomplete level; cannot tell which rows to keep", path)
		}
		parts = append(parts, part{path, out == 0 && in > 0 || len(rows) == 0})
		p.supersededRequests += out
	}
	tokParts, err := rundir.TableParts(dir, rundir.TableTokens)
	if err != nil {
		return p, err
	}
	for _, path := range tokParts {
		rows, err := rundir.ReadParquetFile[rundir.TokenRow](path)
		if err != nil {
			return p, err
		}
		var in, out int
		for _, r := range rows {
			if kept[r.RequestID] {
				in++
			} else {
				out++
			}
		}
		if in > 0 && out > 0 {
			return p, fmt.Errorf("%s: holds tokens of a complete and an incomplete level; cannot tell which rows to keep", path)
		}
		parts = append(parts, part{path, out == 0})
	}
	for _, pt := range parts {
		if !pt.keep {
			rel, err := filepath.Rel(dir, pt.path)
			if err != nil {
				return p, err
			}
			p.supersede = append(p.supersede, rel)
		}
	}
	return p, nil
}

// moveParts moves part files (relative to dir) into dir/to, keeping their
// table folders.
func moveParts(dir, to string, parts []string) error {
	for _, rel := range parts {
		dst := filepath.Join(dir, to, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(dir, rel), dst); err != nil {
			return err
		}
	}
	return nil
}

// removeTempFiles deletes the temporary files of part writes that a
// killed collector left in the table folders (readers ignore them; they
// are never complete).
func removeTempFiles(dir string) {
	for _, sub := range append([]string{"."}, rundir.AllTables...) {
		entries, _ := os.ReadDir(filepath.Join(dir, sub))
		for _, e := range entries {
			if n := e.Name(); strings.HasPrefix(n, ".") && strings.Contains(n, ".tmp-") && !e.IsDir() {
				os.Remove(filepath.Join(dir, sub, n))
			}
		}
	}
}
