package analyze

import (
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/headroom-llm/headroom/analyze/serverlog"
	"github.com/headroom-llm/headroom/internal/buildinfo"
	"github.com/headroom-llm/headroom/rundir"
	"github.com/headroom-llm/headroom/stats"
)

// Analyze turns loaded runs into the report model. Probe runs lend their
// roofline to the sweep runs given with them (a run holding both uses its
// own); sweep runs of the same configuration are also grouped as repeats.
func Analyze(runs []*Run, set Settings) (*Report, error) {
	rep := &Report{
		Title:            "headroom report",
		GeneratedAt:      set.Now.UTC(),
		HeadroomVersion:  buildinfo.Version(),
		Settings:         set,
		PercentileMethod: stats.PercentileMethod,
	}
	rooflines := make([]*Roofline, len(runs))
	for i, run := range runs {
		run.sanitize() // done at load; here for runs made in memory
		if len(run.GEMM) > 0 {
			rl, err := probeRoofline(run, run.GEMM[0].Device)
			if err != nil {
				return nil, err
			}
			rooflines[i] = rl
		}
	}
	for i, run := range runs {
		ra := RunAnalysis{Dir: run.Dir, Manifest: run.Manifest, Roofline: rooflines[i], Files: run.Files, Notes: slices.Clone(run.Notes)}
		eng := resolveEngine(run.Manifest, nil)
		if run.File != "" {
			li, err := Inspect(run.File, nil, serverlog.Options{Location: time.UTC})
			if err != nil {
				return nil, fmt.Errorf("%s: %w", run.File, err)
			}
			ra.LogOnly = li
			rep.Runs = append(rep.Runs, ra)
			continue
		}
		if isSweep(run) {
			probe, probeDir := pickProbe(i, runs, rooflines)
			sw, swEng, err := analyzeSweep(run, probe, probeDir, set)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", run.Dir, err)
			}
			ra.Sweep, eng = sw, swEng
			if rep.Headline == nil {
				rep.Headline = headline(run, sw, probe)
			}
		} else if run.Manifest.HasKind(rundir.KindSweep) {
			ra.Notes = append(ra.Notes, Note{Kind: NoteSweepIsEmpty})
		}
		ra.Context, ra.Missing = runContext(run, eng)
		ra.Warnings = manifestWarnings(run.Manifest, ra.Sweep)
		rep.Runs = append(rep.Runs, ra)
	}
	rep.Repeats = repeatGroups(runs, rep.Runs, set)
	if set.PredictFrom != "" {
		preds, err := reportPredictions(rep, set)
		if err != nil {
			return nil, err
		}
		rep.Predictions = preds
	}
	if rep.Headline == nil {
		kind := NoteNoSweepRun
		for _, ra := range rep.Runs {
			if ra.LogOnly != nil {
				kind = NoteLogOnlyRun
			}
		}
		rep.Notes = append(rep.Notes, Note{Kind: kind})
	}
	if n := clearNonFinite(reflect.ValueOf(rep).Elem()); n > 0 {
		// a computation that overflowed: the report still stands, and says so
		rep.Notes = append(rep.Notes, Note{Kind: NoteNonFiniteResult, Count: n})
	}
	return rep, nil
}

func isSweep(run *Run) bool {
	return len(run.Requests) > 0 || len(run.LevelStat) > 0 || len(run.Levels) > 0
}

// pickProbe returns the roofline for sweep run i: its own, else the first
// probe run whose GPU name matches the sweep's first GPU, else the first
// probe run.
func pickProbe(i int, runs []*Run, rooflines []*Roofline) (*Roofline, string) {
	if rooflines[i] != nil {
		return rooflines[i], runs[i].Dir
	}
	want := ""
	if gs := runs[i].Manifest.GPUs; len(gs) > 0 {
		want = gs[0].Name
	}
	first := -1
	for j, rl := range rooflines {
		if rl == nil {
			continue
		}
		if first < 0 {
			first = j
		}
		if want != "" && rl.GPU == want {
			return rl, runs[j].Dir
		}
	}
	if first >= 0 {
		return rooflines[first], runs[first].Dir
	}
	return nil, ""
}

// analyzeSweep computes everything about one sweep run. It also returns
// the run's engine facts, the manifest's completed from the server log.
func analyzeSweep(run *Run, probe *Roofline, probeDir string, set Settings) (*SweepAnalysis, engineFacts, error) {
	sw := &SweepAnalysis{Mode: "closed"}
	if w := run.Manifest.Workload; w != nil && w.Mode != "" {
		sw.Mode = w.Mode
	}
	var timings map[int][]requestTiming
	switch {
	case len(run.Requests) > 0:
		var counting tokenCounting
		sw.Source = SourceRequests
		sw.Levels, timings, counting = levelStatsFromRequests(run, set)
		sw.TokenCount = counting.TokenCounting
		if counting.promptTarget > 0 {
			sw.Notes = append(sw.Notes, Note{Kind: NotePromptTarget, Count: counting.promptTarget})
		}
	case len(run.LevelStat) > 0:
		sw.Source = SourceLevelStats
		sw.Levels = levelStatsFromImport(run.LevelStat, set)
		sw.TokenCount = TokenCounting{Imported: true}
		sw.Notes = append(sw.Notes, Note{Kind: NoteOnlyLevelStats})
	default:
		sw.Source = SourceRequests
		sw.Notes = append(sw.Notes, Note{Kind: NoteNoRequests})
	}
	sort.SliceStable(sw.Levels, func(i, j int) bool {
		if sw.Levels[i].Concurrency != sw.Levels[j].Concurrency {
			return sw.Levels[i].Concurrency < sw.Levels[j].Concurrency
		}
		return sw.Levels[i].RateRPS < sw.Levels[j].RateRPS
	})
	axis := AxisConcurrency
	if sw.Mode == "open" {
		axis = AxisRate
	}
	for i := range sw.Levels {
		l := &sw.Levels[i]
		l.Load = LoadKeyOf(axis, l.Concurrency, l.RateRPS)
		l.Sustained = l.Complete && l.ErrorFraction <= set.MaxErrorFraction
	}
	obs := observe(run, sw.Levels, set)
	levelEnergy(run, sw.Levels)
	eng := resolveEngine(run.Manifest, obs.logSum)
	sw.Notes = append(sw.Notes, obs.notes...)
	samples := samplesOf(timings)
	sw.Knees = findKnees(sw.Levels, samples, axis, set)
	slo, source := set.SLO, SLOUser
	if slo == nil {
		slo, source = DefaultSLO(), SLODefault
	}
	sw.Goodput = goodput(sw.Levels, timings, slo, source)
	sw.Operating = operatingPoint(sw.Levels, sw.Goodput, sw.Knees)
	if probe != nil {
		sw.Decode = decodeRoofline(sw.Levels, sw.Knees, probe, probeDir, set.modelFor(run.Dir), sw.Mode, eng)
	} else {
		sw.Notes = append(sw.Notes, Note{Kind: NoteNoProbe})
	}
	src := obs.sources()
	src.Engine, src.Flags, src.Decode, src.PerRequest = eng.Name, eng.Flags, sw.Decode, sw.Source == SourceRequests
	src.Accelerated = len(run.Manifest.GPUs) > 0 || src.GPU
	sw.Diagnosis = diagnose(sw.Levels, samples, obs.perLevel, sw.Knees, src, set, sw.Operating)
	sw.Operating.Beyond = wallBeyond(sw.Diagnosis, sw.Operating)
	cost, err := costOf(run, sw.Levels, sw.Knees, sw.Goodput, set, eng)
	if err != nil {
		return nil, eng, err
	}
	sw.Cost = cost
	sw.Pareto = paretoOf(sw.Levels, gpuCount(run, set, eng), sw.Mode)
	sw.Timeline = obs.timeline(sw.Levels, set.MaxTimelinePoints)
	sw.Sessions = analyzeSessions(run, sw.Levels, timings, set)
	if w := run.Manifest.Workload; w != nil && !w.FixedOutput {
		sw.Notes = append(sw.Notes, Note{Kind: NoteOutputNotFixed, Text: w.FixedOutputNote})
	}
	if sw.Replicas, err = analyzeReplicas(run, sw, probe, probeDir, set); err != nil {
		return nil, eng, err
	}
	if len(sw.Replicas) > 0 && run.Manifest.Workload != nil {
		sw.Balance = run.Manifest.Workload.Balance
	}
	return sw, eng, nil
}

func headline(run *Run, sw *SweepAnalysis, probe *Roofline) *Headline {
	d := sw.Diagnosis
	h := &Headline{
		Run:               runLabel(run),
		PeakOutputTokPerS: sw.Knees.PeakOutputTokPerS,
		PeakConcurrency:   sw.Knees.PeakConcurrency,
		PeakRateRPS:       sw.Knees.PeakRateRPS,
		Axis:              sw.Knees.Axis,
		Wall:              d.Wall,
		Primary:           d.Primary,
		Secondary:         d.Secondary,
		Confidence:        d.Confidence,
		Operating:         sw.Operating,
	}
	if len(d.Primary.Evidence) > 0 {
		h.Strongest = &d.Primary.Evidence[0]
	}
	if sw.Operating.At.Valid() {
		h.RecommendedConcurrency, h.RecommendedRateRPS = sw.Operating.At.Concurrency, sw.Operating.At.RateRPS
	}
	if probe != nil {
		h.RidgeFLOPPerByte = probe.RidgeFLOPPerByte
	}
	headlineCost(h, sw.Cost)
	return h
}

func runLabel(run *Run) string {
	if run.Manifest.Label != "" {
		return run.Manifest.Label
	}
	return filepath.Base(run.Dir)
}

// repeatGroups groups sweep runs whose configuration matches and gives
// Student's t intervals across them per concurrency.
func repeatGroups(runs []*Run, ras []RunAnalysis, set Settings) []RepeatGroup {
	byKey := map[string][]int{}
	var keys []string
	for i, ra := range ras {
		if ra.Sweep == nil {
			continue
		}
		k := configKey(runs[i].Manifest)
		if _, ok := byKey[k]; !ok {
			keys = append(keys, k)
		}
		byKey[k] = append(byKey[k], i)
	}
	var out []RepeatGroup
	for _, k := range keys {
		idx := byKey[k]
		if len(idx) < 2 {
			continue
		}
		g := RepeatGroup{Runs: idx, Key: k}
		conc := map[int][]LevelStats{}
		var cs []int
		for _, i := range idx {
			for _, l := range ras[i].Sweep.Levels {
				if _, ok := conc[l.Concurrency]; !ok {
					cs = append(cs, l.Concurrency)
				}
				conc[l.Concurrency] = append(conc[l.Concurrency], l)
			}
		}
		sort.Ints(cs)
		for _, c := range cs {
			ls := conc[c]
			rl := RepeatLevel{Concurrency: c, Runs: len(ls)}
			var ttft, tpot, thr []float64
			for _, l := range ls {
				if l.TTFT != nil && l.TTFT.P50S > 0 {
					ttft = append(ttft, l.TTFT.P50S)
				}
				if l.TPOT != nil && l.TPOT.P50S > 0 {
					tpot = append(tpot, l.TPOT.P50S)
				}
				if l.OutputTokPerS > 0 {
					thr = append(thr, l.OutputTokPerS)
				}
			}
			if iv, ok := stats.TInterval(ttft, set.Confidence); ok {
				iv.Of = stats.OfRuns
				rl.TTFTP50S = &iv
			}
			if iv, ok := stats.TInterval(tpot, set.Confidence); ok {
				iv.Of = stats.OfRuns
				rl.TPOTP50S = &iv
			}
			if iv, ok := stats.TInterval(thr, set.Confidence); ok {
				iv.Of = stats.OfRuns
				rl.OutputTokPerS = &iv
			}
			g.Levels = append(g.Levels, rl)
		}
		out = append(out, g)
	}
	return out
}

// configKey is what repeated runs must share: GPU, engine, model, flags and
// workload.
func configKey(m *rundir.Manifest) string {
	var parts []string
	for _, g := range m.GPUs {
		parts = append(parts, g.Name)
	}
	if e := m.Engine; e != nil {
		parts = append(parts, e.Name, e.Version, e.Model, e.Quantization, e.DType, strings.Join(e.Flags, " "))
	}
	if w := m.Workload; w != nil {
		parts = append(parts, w.Endpoint, w.Prompt.String(), w.Output.String(), w.Mode, fmt.Sprint(w.Levels), fmt.Sprint(w.RatesRPS))
	}
	return strings.Join(parts, " | ")
}
