package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/headroom-llm/headroom/analyze/serverlog"
	"github.com/headroom-llm/headroom/rundir"
)

func newInspectLogCmd() *cobra.Command {
	var engine, tz string
	var year int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "inspect-log FILE|RUN",
		Short: "Summarise an inference server's log: engine, config, KV usage, preemptions, errors",
		Long: `inspect-log reads a vLLM, SGLang, llama.cpp (llama-server), test-engine or GPU-engine
log and prints what it found: the engine and its version, start-up facts
(model, dtype, KV cache size, maximum concurrency, non-default arguments),
a timeline summary (KV cache usage, running and waiting requests,
preemptions and retractions, errors) and how many lines it could not read.

FILE may be wrapped by Docker's JSON log driver, kubectl --timestamps,
journald or docker compose. Given a run directory, it reads RUN/server.log,
takes the year and the engine from the run's manifest and aligns lines to
the client's clock with the server_log_lines table.

vLLM prints months and days but no year: pass --year (or a run directory).
See docs/serverlogs.md for what is read from each engine.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := serverlog.ParseEngine(engine)
			if err != nil {
				return usageError{fmt.Errorf("--engine: %w", err)}
			}
			opts := serverlog.Options{Engine: e, Year: year, Location: time.UTC}
			if tz != "" {
				loc, err := time.LoadLocation(tz)
				if err != nil {
					return usageError{fmt.Errorf("--tz %q: %w (use an IANA name such as Europe/Berlin, or UTC)", tz, err)}
				}
				opts.Location = loc
			}
			return inspectLog(cmd.OutOrStdout(), args[0], opts, asJSON)
		},
	}
	cmd.Flags().StringVar(&engine, "engine", "auto", "auto, vllm, sglang, llamacpp, node-llama-cpp or transformers-cb")
	cmd.Flags().IntVar(&year, "year", 0, "year of stamps that print none (vLLM, journald)")
	cmd.Flags().StringVar(&tz, "tz", "", "time zone of stamps that print none (default UTC)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the summary as JSON")
	return cmd
}

// inspectLog scans one log (or a run directory's server.log) and prints
// its summary.
func inspectLog(w io.Writer, path string, opts serverlog.Options, asJSON bool) error {
	file := path
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		file = filepath.Join(path, rundir.ServerLogFile)
		if err := runContext(path, &opts); err != nil {
			return err
		}
	}
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("inspect-log: %w", err)
	}
	defer f.Close()
	opts.File = file

	// The scan allocates about one byte per byte read but keeps only a few
	// MiB live: a higher GC target halves the collector's share of a large
	// log's CPU time for about 20 MiB of extra heap (docs/performance.md).
	defer debug.SetGCPercent(debug.SetGCPercent(400))

	s := serverlog.NewScanner(f, opts)
	z := serverlog.NewSummarizer()
	var offsets []time.Duration
	for s.Scan() {
		ev := s.Event()
		z.Add(ev)
		if !ev.RecvTime.IsZero() && !ev.Time.IsZero() && len(offsets) < 100000 {
			offsets = append(offsets, ev.RecvTime.Sub(ev.Time))
		}
	}
	z.SetScanner(s)
	sum := z.Summary()
	if sum.Engine == serverlog.EngineUnknown {
		sum.Engine = s.Engine()
	}
	if err := s.Err(); err != nil {
		return fmt.Errorf("inspect-log: %w", err)
	}
	if sum.Engine == serverlog.EngineUnknown && sum.Counts.Events == 0 {
		return fmt.Errorf("inspect-log: %s: no vLLM, SGLang, llama.cpp, test-engine or transformers-cb lines among %d lines; if the engine is one of these, name it with --engine", file, sum.Counts.Lines)
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(sum)
	}
	return writeLogSummary(w, file, opts, sum, offsets)
}

// runContext takes the year, zone-free start time and engine of a run
// directory's manifest, and its line clock.
func runContext(dir string, opts *serverlog.Options) error {
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		return fmt.Errorf("inspect-log: %w", err)
	}
	if !m.StartTime.IsZero() {
		opts.Reference = m.StartTime
	}
	if opts.Engine == serverlog.EngineUnknown && m.Engine != nil {
		if e, err := serverlog.ParseEngine(m.Engine.Name); err == nil {
			opts.Engine = e
		}
	}
	rows, err := rundir.ReadTable[rundir.ServerLogLineRow](dir, rundir.TableServerLogLines)
	if err != nil {
		return fmt.Errorf("inspect-log: %w", err)
	}
	if len(rows) > 0 {
		var maxLine int64
		for _, r := range rows {
			if r.Line > maxLine {
				maxLine = r.Line
			}
		}
		recv := make(serverlog.RecvTimes, maxLine)
		for _, r := range rows {
			if r.Line >= 1 {
				recv[r.Line-1] = r.RecvNS
			}
		}
		opts.Clock = recv
	}
	return nil
}

func writeLogSummary(w io.Writer, file string, opts serverlog.Options, s serverlog.Summary, offsets []time.Duration) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	row := func(k string, v any) { p("  %-24s %v\n", k, v) }

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
		row("time", fmt.Sprintf("%s .. %s%s", fmtTime(s.First, s.FirstQuality), fmtTime(s.Last, s.LastQuality), timeNote(s.FirstQuality, opts)))
	}
	if len(offsets) > 0 {
		sort.Slice(offsets, func(i, j int) bool { return offsets[i] < offsets[j] })
		row("client clock", fmt.Sprintf("lines arrived %s after their stamp (median of %d)", offsets[len(offsets)/2].Round(time.Millisecond), len(offsets)))
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
		row("preemptions", fmt.Sprintf("%s; %d lines: %s", total, s.PreemptionLines, fmtCounts(s.PreemptionsByMode)))
		row("first preemption", fmt.Sprintf("line %d: %s", s.FirstPreemption.Line, clipLine(s.FirstPreemption.Raw)))
	}
	if s.Engine == serverlog.EngineLlamaCpp || s.SlotLaunches+s.SlotReleases+s.ContextShifts+s.KVFull > 0 {
		row("slot tasks", fmt.Sprintf("%d launched, %d released", s.SlotLaunches, s.SlotReleases))
		row("context shifts", s.ContextShifts)
		row("KV cache full", s.KVFull)
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
		row("first error", fmt.Sprintf("line %d: %s", s.FirstError.Line, clipLine(s.FirstError.Raw)))
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
	_, err := io.WriteString(w, b.String())
	return err
}

func fmtTime(t time.Time, q serverlog.TimeQuality) string {
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

func timeNote(q serverlog.TimeQuality, opts serverlog.Options) string {
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

func fmtCounts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func clipLine(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 160 {
		return s[:160] + "..."
	}
	return s
}
