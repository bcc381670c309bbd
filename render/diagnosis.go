package render

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/headroom-llm/headroom/analyze"
)

// This file says the verdict in words: the walls, their evidence and
// fixes, the operating point, and the headline sentence built from them.
// The analyzer decides (analyze/verdict.go); every sentence about its
// decision is written here, once.

// wallNames says each wall in words.
var wallNames = map[string]string{
	analyze.WallKVCache:        "KV-cache wall",
	analyze.WallEngineCap:      "queueing at the engine's sequence cap",
	analyze.WallFrontQueue:     "queueing in front of the engine",
	analyze.WallCompute:        "compute wall",
	analyze.WallEngineOverhead: "engine overhead",
	analyze.WallClientBound:    "client-bound",
	analyze.WallNone:           "no wall reached",
	analyze.WallInconclusive:   "inconclusive",
}

// checkNames names each check.
var checkNames = map[string]string{
	analyze.WallKVCache:        "KV-cache wall",
	analyze.WallEngineCap:      "Queueing at the engine's sequence cap",
	analyze.WallFrontQueue:     "Queueing in front of the engine",
	analyze.WallCompute:        "Compute wall",
	analyze.WallEngineOverhead: "Engine overhead",
	analyze.WallClientBound:    "Client-bound",
}

var statusNames = map[string]string{
	analyze.StatusHit:           "hit",
	analyze.StatusClear:         "clear",
	analyze.StatusUnknown:       "unknown (evidence missing)",
	analyze.StatusNotApplicable: "not applicable",
}

var confidenceNames = map[string]string{
	analyze.ConfidenceHigh:   "high",
	analyze.ConfidenceMedium: "medium",
	analyze.ConfidenceLow:    "low",
}

// whyNames say why the confidence is what it is.
var whyNames = map[string]string{
	analyze.WhyServerEvidence:  "the engine's own counters or log show it",
	analyze.WhyIntervalsClear:  "the deciding difference clears its 95% interval",
	analyze.WhySeveralLevels:   "it holds at more than one level",
	analyze.WhyOneLevel:        "it shows at the highest level only",
	analyze.WhyThinTail:        "a deciding p99 rests on fewer than 100 requests",
	analyze.WhyLittleDisagrees: "Little's law and the measured wait differ by more than 2×",
	analyze.WhyNoRidge:         "without a probe run, the knee cannot be placed against the ridge",
	analyze.WhyMissing:         "the measurement that would decide is missing",
	analyze.WhyUntested:        "nothing is known beyond the tested range",
	analyze.WhyTTFTOnly:        "the queue shows in the client's latencies only",
	analyze.WhyEarlierUnknown:  "a bend at a lower load is left unexplained for want of evidence",
}

// measureNames name the measurements a verdict can lack.
var measureNames = map[string]string{
	analyze.MeasureServerLog:      "the server's log (--server-log or --server-cmd)",
	analyze.MeasureLogTimes:       "the log's receive times (server_log_lines)",
	analyze.MeasureServerMetrics:  "the server's /metrics",
	analyze.MeasureKVSignals:      "a server log or /metrics that report preemptions or KV-cache usage",
	analyze.MeasureQueueDepth:     "the server's running and waiting request counts (its /metrics, or a log with queue stats)",
	analyze.MeasureGPUTelemetry:   "GPU telemetry (run headroom sweep on the server's host)",
	analyze.MeasureServerCPU:      "the server process's CPU (run headroom sweep on the server's host)",
	analyze.MeasureClientSamples:  "the load generator's self-check (client_samples)",
	analyze.MeasureProbe:          "a probe run (headroom probe), for the ridge",
	analyze.MeasureRequests:       "per-request data",
	analyze.MeasureTailRequests:   "at least 100 measured requests per level",
	analyze.MeasureTPOT:           "a TPOT at any level",
	analyze.MeasureIntendedSend:   "the requests' intended send times",
	analyze.MeasureHigherLoad:     "levels beyond the tested range",
	analyze.MeasureEngineCapFlags: "the engine's sequence-cap flag",
}

// reasonText says why a check that is not a hit came out as it did.
var reasonText = map[string]string{
	analyze.ReasonKVTight:       "the cache filled, but nothing was preempted, nothing waited and TTFT held: tight, not yet a wall",
	analyze.ReasonKneeIsKV:      "KV-cache pressure at or before the TPOT knee explains the bend",
	analyze.ReasonKneeIsClient:  "the load generator saturated at or before the TPOT knee",
	analyze.ReasonNoKnee:        "TPOT did not bend",
	analyze.ReasonGPUNotBusy:    "the GPU idled at the TPOT knee: the accelerator was not the limit",
	analyze.ReasonBelowRidge:    "the TPOT knee lies far below the probe's ridge: decode was still memory-bound",
	analyze.ReasonSaturated:     "the accelerator was saturated at the TPOT knee: the compute wall, not the engine's overhead",
	analyze.ReasonCPUNotBusy:    "the server's busiest thread did not saturate a core at the TPOT knee",
	analyze.ReasonNoQueue:       "no request waited at any level",
	analyze.ReasonQueueInEngine: "the requests waited in the engine (see the engine's checks), not in front of it",
	analyze.ReasonCacheFull:     "requests waited for want of KV cache (the KV-cache check), not at a fixed cap",
	analyze.ReasonNotPinned:     "requests waited, but the running requests rose with the load: no fixed cap",
	analyze.ReasonTTFTFlat:      "running requests were held at a cap with requests waiting, but TTFT did not grow significantly",
	analyze.ReasonKeptUp:        "the achieved rate kept up with the offered rate and no request waited long for a free slot",
	analyze.ReasonClientIdle:    "the load generator had CPU to spare and kept its send schedule at every level",
	analyze.ReasonNoGPUNoCPU:    "neither GPU telemetry nor the server's CPU was recorded at the TPOT knee",
	analyze.ReasonNoKVSignals:   "the run has no server log or /metrics to show the KV cache",
}

func wallName(w string) string { return nameOr(wallNames, w) }

func nameOr(m map[string]string, k string) string {
	if n, ok := m[k]; ok {
		return n
	}
	return k
}

// wallTitle names a wall with what it rests on.
func wallTitle(w analyze.Wall) string {
	switch {
	case w.Kind == analyze.WallCompute && w.Basis == analyze.BasisServerCPU:
		return "compute wall (the server's CPU)"
	case w.Kind == analyze.WallEngineOverhead && w.Basis == analyze.BasisServerCPU:
		return "engine overhead (the server's CPU was not saturated)"
	}
	return wallName(w.Kind)
}

// pointName names a level on the load axis: "c=8" or "4 req/s".
func pointName(p analyze.LoadPoint) string {
	return loadName(analyze.LoadKeyOf(p.Axis, p.Concurrency, p.RateRPS))
}

// evidencePoint names the level of an evidence item.
func evidencePoint(e analyze.Evidence) string {
	if e.RateRPS > 0 {
		return sig(e.RateRPS) + " req/s"
	}
	if e.Concurrency > 0 {
		return "c=" + strconv.Itoa(e.Concurrency)
	}
	return ""
}

func times(r float64) string { return sig(r) + "×" }

// count formats a count of requests, which metrics carry as floats.
func count(v float64) string { return integer(int64(math.Round(v))) }

// limit formats an SLO bound: seconds from 1 s up, else milliseconds.
func limit(secs float64) string {
	if secs >= 1 {
		return strconv.FormatFloat(secs, 'g', 3, 64) + " s"
	}
	return strconv.FormatFloat(secs*1e3, 'g', 3, 64) + " ms"
}

// evidenceText says what one evidence item shows.
func evidenceText(e analyze.Evidence) string {
	switch e.Kind {
	case analyze.EvPreemptLog:
		if e.Mode != "" {
			return "the server logged a preemption (" + e.Mode + ")"
		}
		return "the server logged a preemption"
	case analyze.EvKVFullLog:
		return "the engine found no free KV cache cells"
	case analyze.EvPreemptions:
		s := plural(int(e.Value), "preemption", "preemptions") + " during the level"
		if e.Name != "" && e.Name != "server log" {
			s += " (" + e.Name + ")"
		} else if e.Count > 0 {
			s += " (" + integer(e.Count) + " log lines)"
		}
		return s
	case analyze.EvKVUsage:
		return "KV cache " + percent(e.Value) + " used"
	case analyze.EvAdmission:
		return fmt.Sprintf("at most %s of %s requests ran while others waited, with the cache nearly full: admission stopped for want of cache", count(e.Value), count(e.Ref))
	case analyze.EvWaiting:
		return "up to " + plural(int(math.Round(e.Value)), "request", "requests") + " waiting in the engine"
	case analyze.EvRunningPinned:
		return fmt.Sprintf("running requests held at %s at %d levels while up to %s were sent", count(e.Value), e.Count, count(e.Ref))
	case analyze.EvCapFlag:
		return fmt.Sprintf("the server was started with %s %s", e.Name, count(e.Value))
	case analyze.EvLittle:
		return fmt.Sprintf("Little's law (mean waiting ÷ completion rate) predicts a %s wait; TTFT rose by %s (%s)", dur(e.Value), dur(e.Ref), times(e.Ratio))
	case analyze.EvTTFTGrowth:
		return fmt.Sprintf("p50 TTFT %s against %s at the level below: %s (95%% interval %s–%s)", dur(e.Value), dur(e.Ref), times(e.Ratio), times(e.Low), times(e.High))
	case analyze.EvServerQueue0:
		return "the engine's own queue stayed empty with at most " + count(e.Ref) + " requests running"
	case analyze.EvSlotWait:
		return fmt.Sprintf("p90 wait for a free client slot %s (at least %s is a queue)", dur(e.Value), dur(e.Ref))
	case analyze.EvAchievedRate:
		return fmt.Sprintf("completed %s req/s of %s req/s offered (%s): a growing backlog", sig(e.Value), sig(e.Ref), percent(e.Ratio))
	case analyze.EvTPOTRatio:
		s := fmt.Sprintf("p50 TPOT %s, %s the baseline's %s", dur(e.Value), times(e.Ratio), dur(e.Ref))
		if e.Low > 0 && e.High > 0 {
			s += fmt.Sprintf(" (95%% interval %s–%s)", times(e.Low), times(e.High))
		}
		return s
	case analyze.EvRidge:
		return fmt.Sprintf("decode at about %s FLOP/byte, %s of the probe's ridge of %s FLOP/byte", sig(e.Value), percent(e.Ratio), sig(e.Ref))
	case analyze.EvGPUUtil:
		return "GPU " + sig(e.Value) + "% busy (mean over the measured window)"
	case analyze.EvPromptIntake:
		return fmt.Sprintf("%s of the time between tokens passed in steps that also took in a new prompt (%s at the baseline)", percent(e.Value), percent(e.Ref))
	case analyze.EvServerCPU:
		thread := ""
		if e.Name != "" {
			thread = " (" + e.Name + ")"
		}
		return fmt.Sprintf("the server's busiest thread%s wanted %s of a core; the server process %s cores", thread, percent(e.Value), sig(e.Ref))
	case analyze.EvServerCPUTotal:
		return fmt.Sprintf("the server process wanted %s cores (CPU time plus waiting for a core) of the %s it decodes on", sig(e.Value), sig(e.Ref))
	case analyze.EvClientCPU:
		return fmt.Sprintf("the load generator wanted %s of its %s", percent(e.Value), plural(e.Count, "core", "cores"))
	case analyze.EvSendLag:
		return fmt.Sprintf("sends lagged more than %s in %d samples (the largest %s)", dur(e.Ref), e.Count, dur(e.Value))
	}
	return e.Kind
}

// fixLoad says a fix's load value on its axis: "c=16" or "4 req/s".
func fixLoad(f analyze.Fix) string {
	v, err := strconv.ParseFloat(f.Value, 64)
	if err != nil || f.Axis == "" {
		return f.Value
	}
	return pointName(analyze.LoadPoint{Axis: f.Axis, Concurrency: int(math.Round(v)), RateRPS: v})
}

// fixText says one fix in words, in the engine's flag where it has one.
func fixText(f analyze.Fix) string {
	flag := func(with, without string) string {
		if f.Flag != "" {
			return fmt.Sprintf(with, f.Flag)
		}
		return without
	}
	// setting is a flag to raise or lower, with the value in use when the
	// server's arguments gave it: "--parallel from its 8".
	setting := func(with, without string) string {
		if f.Flag != "" && f.Current != "" {
			return fmt.Sprintf(with, f.Flag+" from its "+f.Current)
		}
		return flag(with, without)
	}
	switch f.Action {
	case analyze.FixMoreKVMemory:
		return setting("raise %s (more memory for the KV cache)", "give the KV cache more memory (the engine's memory-fraction or cache-size setting)")
	case analyze.FixQuantizeKV:
		if f.Flag != "" && f.Value != "" {
			return fmt.Sprintf("quantise the KV cache (%s %s)", f.Flag, f.Value)
		}
		return "quantise the KV cache (fp8 or 8-bit), if the engine supports it"
	case analyze.FixFewerSequences:
		return setting("lower %s (fewer sequences competing for the cache, fewer preemptions)", "cap the number of sequences running at once")
	case analyze.FixSwapPreempted:
		return flag("give preempted requests a CPU swap space (%s) instead of recomputing them", "swap preempted requests' cache to CPU memory instead of recomputing them")
	case analyze.FixSmallerModel:
		return "serve a smaller model, or one with fewer KV heads (grouped-query attention)"
	case analyze.FixKVBudget:
		return setting("raise %s: the test engine's admission budget of tokens across sequences, not GPU memory", "raise the engine's KV budget")
	case analyze.FixRaiseSequenceCap:
		return setting("raise %s (more sequences at once): the KV cache had room", "raise the engine's cap on running sequences: the KV cache had room")
	case analyze.FixAdmissionControl:
		if f.Value != "" {
			return "put admission control in front of the server at about " + fixLoad(f) + ", the operating point; a bigger GPU will not help"
		}
		return "put admission control in front of the server; a bigger GPU will not help"
	case analyze.FixMoreCompute:
		return flag("add compute: a faster accelerator, or more of them (%s)", "add compute: a faster accelerator, or more of them")
	case analyze.FixQuantizeWeights:
		return "quantise the weights (fewer bytes and FLOPs per token)"
	case analyze.FixMoreThreads:
		return flag("give the engine more threads and cores (%s)", "give the engine more threads and cores")
	case analyze.FixCUDAGraphs:
		switch {
		case f.Value == "remove":
			return "drop " + f.Flag + " so decode steps run as CUDA graphs"
		case f.Flag != "" && f.Value != "":
			return fmt.Sprintf("run decode steps as CUDA graphs (%s %s)", f.Flag, f.Value)
		case f.Flag != "":
			return fmt.Sprintf("capture more decode batch sizes in CUDA graphs (%s)", f.Flag)
		}
		return "run decode steps as CUDA graphs, if the engine can"
	case analyze.FixChunkedPrefill:
		if f.Flag != "" && f.Current != "" {
			return fmt.Sprintf("lower %s from its %s so fewer prompt tokens share a step with decoding", f.Flag, f.Current)
		}
		return flag("bound the prompt tokens per step (%s) so new prompts do not stall decoding", "bound the prompt tokens per step so new prompts do not stall decoding")
	case analyze.FixProfileHost:
		return "profile the server process: scheduling, kernel launches and work between steps, not the silicon, set the pace"
	case analyze.FixClientCores:
		return "give the load generator more cores or its own machine, and rerun the levels it saturated"
	case analyze.FixRaiseLoad:
		return "raise the load to about " + fixLoad(f) + " to find where the box stops"
	case analyze.FixRecordMeasurement:
		return "record " + nameOr(measureNames, f.Value) + " and report again"
	}
	return f.Action
}

// diagnosisSection shows which wall was hit, with the evidence.
func diagnosisSection(id string, r *analyze.RunAnalysis) section {
	s := section{
		ID:    id,
		Title: "Diagnosis: which wall was hit",
		Read: "Each check looks for one wall, with its evidence: the KV cache (preemptions, a full cache), queueing " +
			"at the engine's sequence cap (running held at a constant, requests waiting), queueing in front of the " +
			"engine (a backlog the engine never sees), compute (TPOT bends with the accelerator saturated), engine " +
			"overhead (TPOT bends far below the ridge, or with the accelerator not saturated), and the client. The " +
			"first wall reached as the load rises is the verdict; later ones follow in order of load.",
	}
	if r.Sweep == nil {
		s.Missing = noSweep("wall to diagnose")
		return s
	}
	d := r.Sweep.Diagnosis
	s.Facts = []fact{{Label: "Wall", Value: wallAt(d.Primary)}}
	for _, w := range d.Secondary {
		s.Facts = append(s.Facts, fact{Label: "Then", Value: wallAt(w)})
	}
	s.Facts = append(s.Facts, fact{Label: "Confidence", Value: nameOr(confidenceNames, d.Confidence.Level), Note: confidenceNote(d.Confidence)})
	s.Sentences = append(s.Sentences, verdictSentences(d)...)
	for _, f := range d.Checks {
		v := verdict{Check: nameOr(checkNames, f.Check), Result: nameOr(statusNames, f.Status), Status: f.Status}
		switch {
		case f.Status == analyze.StatusHit:
			v.Summary = sentence("from " + pointName(f.At))
			for _, w := range d.Walls() {
				if w.Kind == f.Check {
					for _, fx := range w.Fixes {
						v.Fixes = append(v.Fixes, fixText(fx))
					}
				}
			}
		case f.Reason != "":
			v.Summary = sentence(nameOr(reasonText, f.Reason))
		}
		for _, e := range f.Evidence {
			v.Evidence = append(v.Evidence, evidenceView(e))
		}
		if len(f.Missing) > 0 {
			v.Evidence = append(v.Evidence, evidence{What: "Missing evidence: " + measures(f.Missing) + "."})
		}
		s.Verdicts = append(s.Verdicts, v)
	}
	if len(d.Missing) > 0 {
		s.Notes = append(s.Notes, "The run lacks "+measures(d.Missing)+". Record them in the next sweep for a firmer diagnosis.")
	}
	return s
}

func measures(ms []string) string {
	var out []string
	for _, m := range ms {
		out = append(out, nameOr(measureNames, m))
	}
	return strings.Join(out, "; ")
}

func confidenceNote(c analyze.Confidence) string {
	var out []string
	for _, w := range c.Reasons {
		out = append(out, nameOr(whyNames, w))
	}
	return strings.Join(out, "; ")
}

// wallAt names a wall and where it is first seen.
func wallAt(w analyze.Wall) string {
	switch w.Kind {
	case analyze.WallNone:
		if w.At.Valid() {
			return "no wall reached up to " + pointName(w.At)
		}
		return wallName(w.Kind)
	case analyze.WallInconclusive:
		s := "inconclusive"
		if w.At.Valid() {
			s += " at " + pointName(w.At)
		}
		return s
	}
	return wallTitle(w) + " from " + pointName(w.At)
}

// verdictSentences explain the primary wall: none says what was ruled
// out and how far to raise the load, inconclusive what is missing and
// what is most likely.
func verdictSentences(d analyze.Diagnosis) []string {
	w := d.Primary
	switch w.Kind {
	case analyze.WallNone:
		return []string{sentence(fmt.Sprintf("No wall was reached up to %s: %s. %s", pointName(w.At), ruledOut(d.Checks), raiseText(w)))}
	case analyze.WallInconclusive:
		s := "The run lacks " + nameOr(measureNames, w.Deciding) + ", the measurement that would decide"
		if w.Likely != "" {
			s += "; the evidence there points to the " + wallName(w.Likely)
		}
		return []string{sentence(s)}
	}
	if len(w.Evidence) > 0 {
		return []string{sentence(fmt.Sprintf("The %s shows first at %s: %s", wallTitle(w), pointName(w.At), evidenceText(w.Evidence[0])))}
	}
	return nil
}

// ruledOut says what the checks of a run without a wall found clear, and
// which of them the run could not decide: an import without the server's
// log or /metrics cannot say that nothing was preempted.
func ruledOut(checks []analyze.Finding) string {
	status := map[string]string{}
	for _, f := range checks {
		status[f.Check] = f.Status
	}
	var clear, unknown []string
	for _, c := range []struct {
		checks         []string
		clear, unknown string
	}{
		{[]string{analyze.WallKVCache}, "nothing was preempted", "preemptions"},
		{[]string{analyze.WallEngineCap, analyze.WallFrontQueue}, "nothing queued", "queueing"},
		{[]string{analyze.WallCompute, analyze.WallEngineOverhead}, "TPOT stayed within its knee factor", "TPOT's bend"},
		{[]string{analyze.WallClientBound}, "the client kept up", "whether the client kept up"},
	} {
		decided := true
		for _, k := range c.checks {
			if st, ok := status[k]; !ok || st == analyze.StatusUnknown {
				decided = false
			}
		}
		if decided {
			clear = append(clear, c.clear)
		} else {
			unknown = append(unknown, c.unknown)
		}
	}
	out := andList(clear)
	if len(unknown) > 0 {
		if out != "" {
			out += "; "
		}
		out += "the run cannot show " + andList(unknown)
	}
	return out
}

// andList joins "a", "b" and "c" as "a, b and c".
func andList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// raiseText says how far to raise the load of a sweep that reached no wall.
func raiseText(w analyze.Wall) string {
	to := analyze.LoadPoint{Axis: w.At.Axis, Concurrency: int(w.RaiseTo), RateRPS: w.RaiseTo}
	s := "Raise the load to about " + pointName(to)
	if w.RaiseBasis == analyze.RaiseKVUsage {
		s += ", where the KV cache, filling in proportion to the load, would be full"
	} else {
		s += " (two more doublings)"
	}
	return s + " to find where the box stops."
}

// evidenceView shows one piece of evidence: a log line with its number,
// or a value with its unit.
func evidenceView(e analyze.Evidence) evidence {
	ev := evidence{What: evidenceText(e), Level: evidencePoint(e)}
	if e.Line > 0 {
		ev.Log = []logLine{{N: e.Line, Text: e.Text}}
		ev.What += " (server.log, line " + strconv.FormatInt(e.Line, 10) + ")"
	}
	return ev
}

// operatingText says the operating point: the load to run at, against
// which SLO, and the first level outside it.
func operatingText(op analyze.OperatingPoint) string { return operating(op, true) }

// operating says the operating point; with missed, also the bounds the
// first failing level misses.
func operating(op analyze.OperatingPoint, missed bool) string {
	slo := "the SLO (" + sloText(op.SLO) + ")"
	if op.SLOSource == analyze.SLODefault {
		slo = "the default SLO (" + sloText(op.SLO) + ")"
	}
	var s string
	switch {
	case !op.At.Valid() && op.FirstFailing.Valid():
		s = "no level meets " + slo + ", not even " + pointName(op.FirstFailing)
	case !op.At.Valid():
		s = "no level could be judged against " + slo
	case op.Capped:
		s = "run at " + pointName(op.At) + " or more: every tested level meets " + slo
	default:
		s = "run at up to " + pointName(op.At) + ", the largest load inside " + slo
		if missed && len(op.Missed) > 0 {
			s += "; " + pointName(op.FirstFailing) + " misses " + boundsMissed(op.Missed)
		}
	}
	if op.TTFTFrom == analyze.TTFTFromIntended {
		s += " (TTFT counted from the intended send time)"
	}
	return s
}

func sloText(slo analyze.SLO) string {
	var bounds []string
	for _, b := range slo.Bounds {
		bounds = append(bounds, fmt.Sprintf("%s p%s ≤ %s", strings.ToUpper(b.Metric), strconv.FormatFloat(b.Percentile, 'f', -1, 64), limit(b.MaxS)))
	}
	return strings.Join(bounds, ", ")
}

func boundsMissed(bs []analyze.BoundHit) string {
	var out []string
	for _, b := range bs {
		name := strings.ToUpper(b.Metric) + " p" + strconv.FormatFloat(b.Percentile, 'f', -1, 64)
		if !b.Known {
			out = append(out, name+" (not available)")
			continue
		}
		out = append(out, fmt.Sprintf("%s (%s > %s)", name, limit(b.ValueS), limit(b.MaxS)))
	}
	return strings.Join(out, ", ")
}
