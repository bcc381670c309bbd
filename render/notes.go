package render

import (
	"fmt"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/analyze/servermetrics"
)

// noteText says one of the analyzer's caveats in words.
func noteText(n analyze.Note) string {
	switch n.Kind {
	case analyze.NoteNoSweepRun:
		return "No sweep run given: only the hardware ceiling is reported."
	case analyze.NoteLogOnlyRun:
		return "No sweep run given: the wall reported is the one the server log or /metrics dump alone supports."
	case analyze.NoteSweepIsEmpty:
		return "The manifest says this run holds a sweep, but it recorded no levels or requests: nothing to analyse."
	case analyze.NotePromptTarget:
		return fmt.Sprintf("The server reported no prompt token count for %s requests: the prompt target was used for total-token throughput.", integer(n.Count))
	case analyze.NoteOutputNotFixed:
		s := "Output lengths were not fixed (min_tokens/ignore_eos not honoured), so levels are less comparable: a level that generated fewer tokens looks faster"
		if n.Text != "" {
			s += " (" + n.Text + ")"
		}
		return s + "."
	case analyze.NoteLogUnreadable:
		return fmt.Sprintf("Server log %s: %s.", n.File, n.Error)
	case analyze.NoteLogClockBad:
		return fmt.Sprintf("%s: the log's receive times could not be used: %s.", n.File, n.Error)
	case analyze.NoteNoLogTimes:
		return "No server_log_lines table: the log is cut per level by the engine's own timestamps, which may be offset from the client's clock."
	case analyze.NoteLogReadStopped:
		return fmt.Sprintf("Server log %s: reading stopped: %s.", n.File, n.Error)
	case analyze.NoteLogUnrecognised:
		return fmt.Sprintf("Server log %s: the engine's log format was not recognised (%s lines read); the log cannot show preemptions.", n.File, integer(n.Count))
	case analyze.NoteMetricsError:
		return "Server metrics: " + n.Error + "."
	case analyze.NoteMetricsWarning:
		if n.Metrics == nil {
			return "Server metrics: a warning without its facts."
		}
		return sentence("Server metrics: " + metricsWarning(*n.Metrics))
	case analyze.NoteOnlyLevelStats:
		return "Not available: per-request data; the source recorded per-level statistics only (no p90, ITL, intervals, per-request goodput, error classes)."
	case analyze.NoteNoRequests:
		return "Not available: requests; the sweep recorded levels but no requests."
	case analyze.NoteNoProbe:
		return "Not available: the roofline gap; no probe run was given (run headroom probe, then pass its directory with the sweep's)."
	case analyze.NoteNoLevelsTable:
		return "No levels table: the measured window is taken from the first send to the last end of the measured requests."
	case analyze.NoteSourcePercentile:
		return "Percentiles as the source computed them: " + n.Text + "."
	case analyze.NoteIncompleteRequests:
		return fmt.Sprintf("%s requests were stopped by the load tool itself (unfinished when its benchmark ended, or cancelled on purpose): counted neither completed nor failed.", integer(n.Count))
	case analyze.NoteClosedIdle:
		return fmt.Sprintf("%s requests never reached the server: it had closed the kept-alive connection they went out on. A client that pools connections sends such a request again, as headroom's load generator now does, so they are counted neither completed nor failed.", integer(n.Count))
	case analyze.NoteNonFinite:
		return fmt.Sprintf("%s of %s rows of %s held a value that is not a number (NaN or infinite): the analysis left those values out.", integer(n.Count), integer(n.Of), n.Table)
	case analyze.NoteBadTimes:
		return fmt.Sprintf("%s of %s rows of %s held times out of order or out of range (negative, or longer than any request): the analysis left them out.", integer(n.Count), integer(n.Of), n.Table)
	case analyze.NoteBufferedStream:
		return fmt.Sprintf("The stream was buffered: in %s of %s successful requests every text chunk arrived in one read (a buffering proxy, or a server that batches its writes), so their time per output token and inter-token latency read 0 and say nothing about decoding; TTFT and end-to-end times stand.", integer(n.Count), integer(n.Of))
	case analyze.NoteNonFiniteResult:
		return fmt.Sprintf("%s values the analysis computed were not finite numbers (an overflow) and are shown as 0 or left out; the rest of the report stands.", integer(n.Count))
	case analyze.NoteTensorParallel:
		from := ""
		if n.FromLog {
			from = " (from server.log)"
		}
		return fmt.Sprintf("Tensor parallel %d%s: bandwidth and peak are %d × the probe's single-GPU values (perfect scaling assumed; all-reduce cost not modelled).", n.Count, from, n.Count)
	case analyze.NoteDTypeMismatch:
		return fmt.Sprintf("The probe measured %s GEMMs; the model runs in %s, so the compute ceiling is only indicative.", n.Text, n.Name)
	case analyze.NoteDecodeOnly:
		return "Decode-only bound: prefill of new prompts shares the GPU and is not in the prediction, so measured throughput below the ceiling is expected."
	case analyze.NoteNoModelConfig:
		return "Not available: the model description (--model-config config.json); without it there is no per-level prediction."
	case analyze.NoteFP8Ceiling:
		return "The model's weights are FP8: the compute ceiling is the probe's FP8 (E4M3) peak."
	case analyze.NoteMeasuredFloor:
		return fmt.Sprintf("Measured floor: the probe timed this model's decode GEMMs (%s, %s); attention's KV-cache reads are added at the probe's bandwidth (modelled, not measured).", n.Text, n.Name)
	case analyze.NoteFloorOtherModel:
		return fmt.Sprintf("The probe timed the decode GEMMs of %s, not of this model's shape and weight type: no measured floor.", n.Text)
	}
	return n.Kind
}

// noteTexts says each note.
func noteTexts(ns []analyze.Note) []string {
	var out []string
	for _, n := range ns {
		out = append(out, noteText(n))
	}
	return out
}

// unavailable reports whether a note names an analysis the run could not
// have (shown with the sweep), rather than a caveat about its inputs.
func unavailable(n analyze.Note) bool {
	switch n.Kind {
	case analyze.NoteOnlyLevelStats, analyze.NoteNoRequests, analyze.NoteNoProbe:
		return true
	}
	return false
}

// notesWhere says the notes that f selects.
func notesWhere(ns []analyze.Note, f func(analyze.Note) bool) []string {
	var out []string
	for _, n := range ns {
		if f(n) {
			out = append(out, noteText(n))
		}
	}
	return out
}

// tokenCountText says how output tokens were counted.
func tokenCountText(t analyze.TokenCounting) string {
	switch {
	case t.Imported:
		return "as the imported source counted them"
	case t.OK == 0:
		return "no successful requests"
	case t.Server == 0:
		return "client chunk count (the server reported no usage; a chunk may hold several tokens)"
	case t.Server < t.OK:
		return fmt.Sprintf("server-reported completion_tokens for %s of %s requests, client chunk count for the rest", integer(t.Server), integer(t.OK))
	}
	s := fmt.Sprintf("server-reported completion_tokens for all %s requests", integer(t.OK))
	if t.Differ > 0 {
		s += fmt.Sprintf("; the client's chunk count differs for %s of them (several tokens per chunk, or chunks without text)", integer(t.Differ))
	}
	return s
}

// ridgeSentence says where the knee (or the highest level) lies against the
// probe's ridge.
func ridgeSentence(rc analyze.RidgeCheck) string {
	if rc.Verdict == "" {
		return ""
	}
	approx := ""
	if rc.Approximate {
		approx = " (intensity ≈ batch, an approximation that holds for 16-bit weights; give --model-config for the model's own)"
	}
	at, in, ridge := loadName(rc.AtLoad), sig(rc.IntensityFLOPPerByte), sig(rc.RidgeFLOPPerByte)
	switch rc.Verdict {
	case analyze.RidgeNoKnee:
		return fmt.Sprintf("TPOT never bent; at the highest level, %s, decode ran at about %s FLOP/byte, %s of the probe's ridge of %s FLOP/byte%s.", at, in, percent(rc.Ratio), ridge, approx)
	case analyze.RidgeKneeBefore:
		return fmt.Sprintf("The TPOT knee at %s lies at about %s FLOP/byte, well below the probe's ridge of %s FLOP/byte%s: decode was still memory-bound when TPOT rose, so the accelerator's arithmetic did not bend it.", at, in, ridge, approx)
	case analyze.RidgeKneeAfter:
		return fmt.Sprintf("The TPOT knee at %s lies at about %s FLOP/byte, beyond the probe's ridge of %s FLOP/byte%s: decode kept scaling past the point the GEMM probe saturates; check the model description, the dtype and the probe.", at, in, ridge, approx)
	}
	return fmt.Sprintf("The TPOT knee at %s lies at about %s FLOP/byte, within %s× of the probe's ridge of %s FLOP/byte%s: the knee is where the roofline says compute takes over.", at, in, sig(rc.AgreeFactor), ridge, approx)
}

// metricsWarning says what the metrics reader found wrong in a series.
func metricsWarning(w servermetrics.Warning) string {
	series := w.Metric + "{" + w.Labels + "}"
	switch w.Kind {
	case servermetrics.WarnAboveOne:
		return fmt.Sprintf("%s = %g is above 1: the table's scale for %s may be wrong (percent, not fraction)", series, w.Value, w.Quantity)
	case servermetrics.WarnBadLE:
		return fmt.Sprintf("%s_bucket{%s}: bad le %q", w.Metric, w.Labels, w.LE)
	case servermetrics.WarnBoundsChanged:
		return fmt.Sprintf("%s: bucket bounds changed between scrapes at %d and %d ns; interval skipped", series, w.FromNS, w.ToNS)
	case servermetrics.WarnNoInfBucket:
		return series + ": no +Inf bucket; quantiles are NaN"
	}
	return series + ": " + w.Kind
}
