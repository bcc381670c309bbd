package render

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/analyze/serverlog"
)

// LogSummary writes `headroom inspect-log`'s text: the engine, start-up
// facts, the timeline summary, errors and the lines it could not read.
func LogSummary(w io.Writer, li *analyze.LogInspection) error {
	file, opts, s := li.File, li.Options, li.Summary
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	row := func(k string, v any) { p("  %-24s %v\n", k, v) }

	if file == "" {
		// Saved /metrics dumps alone.
		dumpRows(p, row, li.Dumps)
		logVerdictRows(p, row, li.Verdict)
		_, err := io.WriteString(w, b.String())
		return err
	}
	p("server log: %s\n", file)
	eng := string(s.Engine)
	if eng == "" {
		eng = "unknown"
	}
	if opts.Engine == serverlog.EngineUnknown {
		eng += " (detected)"
	}
	if s.Generation != "" {
		eng += ", engine " + s.Generation
		if s.GenerationInferred {
			eng += " (from the shape of its lines)"
		}
	}
	row("engine", eng)
	if s.Version != "" {
		row("version", s.Version)
	}
	if s.Model != "" {
		row("model", s.Model)
	}
	c := s.Counts
	row("lines", fmt.Sprintf("%d read: %d events, %d ignored, %d unknown, %d bad, %d cut, %d wrapped", c.Lines, c.Events, c.Ignored, c.Unknown, c.Bad, c.Long, c.Wrapped))
	if !s.First.IsZero() {
		row("time", fmt.Sprintf("%s .. %s%s", logTime(s.First, s.FirstQuality), logTime(s.Last, s.LastQuality), logTimeNote(s.FirstQuality, opts)))
	}
	if li.ClockLines > 0 {
		row("client clock", fmt.Sprintf("lines arrived %s after their stamp (median of %d)", li.ClockOffset.Round(time.Millisecond), li.ClockLines))
	}

	if len(s.Config) > 0 {
		p("\nconfig\n")
		for _, f := range s.Config {
			if f.Key == serverlog.FactVersion || f.Key == serverlog.FactModel || f.Key == serverlog.FactEngineGeneration {
				continue
			}
			row(f.Key, f.Value)
		}
	}
	if len(s.NonDefaultArgs) > 0 {
		p("\nnon-default arguments\n")
		for _, f := range s.NonDefaultArgs {
			row(f.Key, f.Value)
		}
	}

	p("\ntimeline\n")
	row("stats lines", s.StatsLines)
	if s.KVUsageMax >= 0 {
		row("KV cache usage max", fmt.Sprintf("%.1f%% (line %d)", 100*s.KVUsageMax, s.KVUsageAt.Line))
	}
	if s.RunningMax >= 0 {
		row("running max", fmt.Sprintf("%d (line %d)", s.RunningMax, s.RunningAt.Line))
	}
	if s.WaitingMax >= 0 {
		row("waiting max", fmt.Sprintf("%d (line %d)", s.WaitingMax, s.WaitingAt.Line))
	}
	if s.SwappedMax >= 0 {
		row("swapped max", fmt.Sprintf("%d (line %d)", s.SwappedMax, s.SwappedAt.Line))
	}
	if s.GenerationTokensPerSMax > 0 {
		row("generation tok/s max", fmt.Sprintf("%.1f", s.GenerationTokensPerSMax))
	}
	if s.PreemptionLines == 0 {
		if s.Engine == serverlog.EngineVLLM && s.Generation == "V1" {
			// V1's scheduler preempts silently: only the metric counts it
			row("preemptions", "none logged (vLLM V1 does not log them: see vllm:num_preemptions_total)")
		} else {
			row("preemptions", "none logged")
		}
	} else {
		lines := 0
		for _, n := range s.PreemptionsByMode {
			lines += n
		}
		total := fmt.Sprintf("%d", s.Preemptions)
		if s.Preemptions > lines {
			// vLLM V0 logs one preemption in 50 but prints its running total
			total += " (the engine's running total)"
		}
		row("preemptions", fmt.Sprintf("%s; %d lines: %s", total, s.PreemptionLines, logCounts(s.PreemptionsByMode)))
		row("first preemption", fmt.Sprintf("line %d: %s", s.FirstPreemption.Line, clipLogLine(s.FirstPreemption.Raw)))
	}
	if s.Engine == serverlog.EngineLlamaCpp || s.SlotLaunches+s.SlotReleases+s.ContextShifts+s.KVFull > 0 {
		row("slot tasks", fmt.Sprintf("%d launched, %d released", s.SlotLaunches, s.SlotReleases))
		row("context shifts", s.ContextShifts)
		row("KV cache full", s.KVFull)
		if s.KVEvictions > 0 {
			row("idle slots' caches dropped", s.KVEvictions)
		}
		if s.PromptMS > 0 {
			row("prompt eval", fmt.Sprintf("%d tokens in %.1f s (%.1f tok/s)", s.PromptTokens, s.PromptMS/1000, float64(s.PromptTokens)/(s.PromptMS/1000)))
		}
		if s.EvalMS > 0 {
			row("generation", fmt.Sprintf("%d tokens in %.1f s (%.1f tok/s)", s.EvalTokens, s.EvalMS/1000, float64(s.EvalTokens)/(s.EvalMS/1000)))
		}
	}

	p("\nerrors\n")
	if len(s.Errors) == 0 {
		p("  none\n")
	} else {
		for _, k := range slices.Sorted(maps.Keys(s.Errors)) {
			row(k, s.Errors[k])
		}
		row("first error", fmt.Sprintf("line %d: %s", s.FirstError.Line, clipLogLine(s.FirstError.Raw)))
	}
	for _, k := range slices.Sorted(maps.Keys(s.Warnings)) {
		row("warning "+k, s.Warnings[k])
	}
	if len(s.HTTPStatus) > 0 {
		var codes []string
		for code, n := range s.HTTPStatus {
			codes = append(codes, fmt.Sprintf("%d: %d", code, n))
		}
		sort.Strings(codes)
		row("HTTP responses", strings.Join(codes, ", "))
	}
	if len(s.SyntaxErrors) > 0 {
		p("\nunreadable lines (first %d)\n", min(5, len(s.SyntaxErrors)))
		for _, e := range s.SyntaxErrors[:min(5, len(s.SyntaxErrors))] {
			p("  %s\n", e.Error())
		}
	}
	if len(li.Dumps) > 0 {
		p("\n")
		dumpRows(p, row, li.Dumps)
	}
	logVerdictRows(p, row, li.Verdict)
	_, err := io.WriteString(w, b.String())
	return err
}

func logTime(t time.Time, q serverlog.TimeQuality) string {
	switch {
	case q == serverlog.TimeRelative && t.IsZero():
		return "?"
	case t.Year() == 0:
		return t.Format("01-02 15:04:05")
	case t.Nanosecond() != 0:
		return t.Format("2006-01-02 15:04:05.000 MST")
	}
	return t.Format("2006-01-02 15:04:05 MST")
}

func logTimeNote(q serverlog.TimeQuality, opts serverlog.Options) string {
	switch q {
	case serverlog.TimeNoYear:
		if opts.Year == 0 && opts.Reference.IsZero() {
			return " (no year in the log: pass --year)"
		}
		return " (year from --year or the run, zone assumed " + opts.Location.String() + ")"
	case serverlog.TimeNoZone:
		return " (zone assumed " + opts.Location.String() + ")"
	}
	return ""
}

func logCounts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func clipLogLine(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 160 {
		return s[:160] + "..."
	}
	return s
}
