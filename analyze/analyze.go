package analyze

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"

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
		if len(run.GEMM) > 0 {
			rl, err := roofline(run, run.GEMM[0].Device)
			if err != nil {
				return nil, err
			}
			rooflines[i] = rl
		}
	}
	for i, run := range runs {
		ra := RunAnalysis{Dir: run.Dir, Manifest: run.Manifest, Roofline: rooflines[i], Files: run.Files}
		eng := resolveEngine(run.Manifest, nil)
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
			ra.Warnings = append(ra.Warnings, "the manifest says this run holds a sweep, but it recorded no levels or requests: nothing to analyse")
		}
		ra.Context, ra.Missing = runContext(run, eng)
		ra.Warnings = append(manifestWarnings(run.Manifest, ra.Sweep), ra.Warnings...)
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
		rep.Warnings = append(rep.Warnings, "no sweep run given: only the hardware ceiling is reported")
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
		sw.TokenCount = counting.String()
		if counting.promptTarget > 0 {
			sw.Warnings = append(sw.Warnings, fmt.Sprintf("the server reported no prompt token count for %d requests: the prompt target was used for total-token throughput", counting.promptTarget))
		}
	case len(run.LevelStat) > 0:
		sw.Source = SourceLevelStats
		sw.Levels = levelStatsFromImport(run.LevelStat, set)
		sw.TokenCount = "as the imported source counted them"
		sw.Missing = append(sw.Missing, "per-request data: the source recorded per-level statistics only (no p90, ITL, intervals, per-request goodput, error classes)")
	default:
		sw.Source = SourceRequests
		sw.Missing = append(sw.Missing, "requests: the sweep recorded levels but no requests")
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
		l.Load = loadLabel(*l, axis)
		l.Sustained = l.Complete && l.ErrorFraction <= set.MaxErrorFraction
	}
	obs := observe(run, sw.Levels, set)
	eng := resolveEngine(run.Manifest, obs.logSum)
	sw.Warnings = append(sw.Warnings, obs.notes...)
	sw.Knees = findKnees(sw.Levels, axis, set)
	if set.SLO != nil {
		sw.Goodput = goodput(sw.Levels, timings, set.SLO)
	}
	recommend(&sw.Knees, sw.Levels, sw.Goodput)
	if probe != nil {
		sw.Decode = decodeRoofline(sw.Levels, sw.Knees, probe, probeDir, set.modelFor(run.Dir), sw.Mode, eng)
	} else {
		sw.Missing = append(sw.Missing, "roofline gap: no probe run given (run `headroom probe`, then pass its directory with the sweep's)")
	}
	sw.Diagnosis = diagnose(sw.Levels, sw.Knees, obs, sw.Decode, set, eng.Name)
	cost, err := costOf(run, sw.Levels, sw.Knees, sw.Goodput, set, eng)
	if err != nil {
		return nil, eng, err
	}
	sw.Cost = cost
	sw.Timeline = obs.timeline(sw.Levels, set.MaxTimelinePoints)
	sw.Shape = shapeSentences(sw)
	if w := run.Manifest.Workload; w != nil && !w.FixedOutput {
		note := "output lengths were not fixed (min_tokens/ignore_eos not honoured), so levels are less comparable: a level that generated fewer tokens looks faster"
		if w.FixedOutputNote != "" {
			note += " (" + w.FixedOutputNote + ")"
		}
		sw.Warnings = append(sw.Warnings, note)
	}
	return sw, eng, nil
}

func headline(run *Run, sw *SweepAnalysis, probe *Roofline) *Headline {
	h := &Headline{
		Run:                    runLabel(run),
		PeakOutputTokPerS:      sw.Knees.PeakOutputTokPerS,
		PeakConcurrency:        sw.Knees.PeakConcurrency,
		RecommendedConcurrency: sw.Knees.RecommendedConcurrency,
		RecommendedReason:      sw.Knees.RecommendedReason,
		Axis:                   sw.Knees.Axis,
		PeakRateRPS:            sw.Knees.PeakRateRPS,
		RecommendedRateRPS:     sw.Knees.RecommendedRateRPS,
		Wall:                   sw.Diagnosis.Wall,
		WallSummary:            sw.Diagnosis.Summary,
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

// shapeSentences are the seed's "four sentences explaining the shape of
// the throughput curve", written from the numbers.
func shapeSentences(sw *SweepAnalysis) []string {
	k := sw.Knees
	var levels []LevelStats
	for _, l := range sw.Levels {
		if l.OutputTokPerS > 0 {
			levels = append(levels, l)
		}
	}
	if len(levels) == 0 {
		return []string{"The sweep measured no output throughput, so the curve has no shape to describe."}
	}
	label := func(li int) string {
		if p := levelPos(sw.Levels, li); p >= 0 {
			return sw.Levels[p].Load
		}
		return "?"
	}
	first, last := levels[0], levels[len(levels)-1]
	what, theWhat := "concurrency", "the concurrency"
	if k.Axis == AxisRate {
		what, theWhat = "the arrival rate", "the arrival rate"
	}
	var out []string
	// 1. How throughput grows.
	out = append(out, fmt.Sprintf("Output throughput goes from %.0f tok/s at %s to %.0f tok/s at %s: %.1f× for %.0f× %s.",
		first.OutputTokPerS, first.Load, last.OutputTokPerS, last.Load, last.OutputTokPerS/first.OutputTokPerS,
		loadValue(last, k.Axis)/math.Max(loadValue(first, k.Axis), 1e-9), theWhat))
	// 2. Where it flattens.
	if k.PlateauLevel >= 0 {
		out = append(out, fmt.Sprintf("It flattens after %s: from there every doubling of %s adds less than %.0f%%, and each extra request buys queueing delay, not throughput.",
			label(k.PlateauLevel), what, 100*k.PlateauGainPerDoubling))
	} else {
		out = append(out, fmt.Sprintf("It has not flattened by %s (still gaining at least %.0f%% per doubling): the sweep stopped before the ceiling.",
			last.Load, 100*k.PlateauGainPerDoubling))
	}
	// 3. Peak and where it is reached.
	if k.PeakLevel >= 0 {
		out = append(out, fmt.Sprintf("The peak sustained throughput is %.0f tok/s, reached at %s; that %s is the more useful of the two numbers.",
			k.PeakOutputTokPerS, label(k.PeakLevel), strings.TrimPrefix(what, "the ")))
	} else {
		out = append(out, "No level sustained its throughput without errors, so there is no peak to quote.")
	}
	// 4. TPOT and the cap.
	switch {
	case k.BaselineLevel < 0:
		out = append(out, "TPOT was not measured, so the flat region cannot be placed.")
	case k.TPOTKneeLevel >= 0:
		out = append(out, fmt.Sprintf("TPOT stays flat up to %s (at most %.2f× its %s value of %s) and passes %.1f× at %s; %s.",
			label(k.FlatToLevel), k.FlatTPOTMaxRatio, label(k.BaselineLevel), fmtSeconds(k.BaselineTPOTP50S), k.TPOTKneeFactor, label(k.TPOTKneeLevel), wallPhrase(sw.Diagnosis)))
	default:
		out = append(out, fmt.Sprintf("TPOT stays flat across every level (at most %.2f× its %s value of %s): extra users were nearly free throughout.",
			k.FlatTPOTMaxRatio, label(k.BaselineLevel), fmtSeconds(k.BaselineTPOTP50S)))
	}
	return out
}

func wallPhrase(d Diagnosis) string {
	switch d.Wall {
	case WallKVCache:
		return "the server log shows the KV cache ran out"
	case WallCompute:
		if d.BusyNotSaturated {
			return "the GPU was busy but far below its ridge: the engine's per-step work, not the silicon, is the limit"
		}
		return "the GPU was fully busy: the compute knee"
	case WallClientBound:
		return "but the load generator was saturated, so that bend may be the client's"
	case WallQueueing:
		return "queueing shows in the TTFT tail"
	}
	return "the run lacks the evidence to say which wall that is"
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
				rl.TTFTP50S = &iv
			}
			if iv, ok := stats.TInterval(tpot, set.Confidence); ok {
				rl.TPOTP50S = &iv
			}
			if iv, ok := stats.TInterval(thr, set.Confidence); ok {
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
		parts = append(parts, w.Endpoint, describeDist(w.Prompt), describeDist(w.Output), w.Mode, fmt.Sprint(w.Levels), fmt.Sprint(w.RatesRPS))
	}
	return strings.Join(parts, " | ")
}
