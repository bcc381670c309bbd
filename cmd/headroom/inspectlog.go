package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/analyze/serverlog"
	"github.com/headroom-llm/headroom/render"
)

func newInspectLogCmd() *cobra.Command {
	opts := serverlog.Options{Location: time.UTC}
	var asJSON bool
	var dumps []string
	cmd := &cobra.Command{
		Use:   "inspect-log FILE|RUN",
		Short: "Summarise an inference server's log or /metrics dump, and the wall it alone supports",
		Long: `inspect-log reads a vLLM, SGLang, llama.cpp (llama-server), test-engine or GPU-engine
log and prints what it found: the engine and its version, start-up facts
(model, dtype, KV cache size, maximum concurrency, non-default arguments),
a timeline summary (KV cache usage, running and waiting requests,
preemptions and retractions, errors) and how many lines it could not read.

It then gives the wall the file alone supports (kv_cache, queueing,
compute, engine_overhead, none, engine_error or unknown), with the lines that show it and
what a log alone cannot tell: the sweep's verdict rules applied to the
log's own readings, cut into windows by load.

FILE may also be a saved Prometheus dump of the server's /metrics (one
scrape, or several one after another with a date or timestamp line
between them); --metrics adds dumps to a log.

FILE may be wrapped by Docker's JSON log driver, kubectl --timestamps,
journald or docker compose. Given a run directory, it reads RUN/server.log,
takes the year and the engine from the run's manifest and aligns lines to
the client's clock with the server_log_lines table.

vLLM prints months and days but no year: pass --year (or a run directory).
See docs/serverlogs.md for what is read from each engine.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return inspectLog(cmd.OutOrStdout(), args[0], dumps, opts, asJSON)
		},
	}
	fl := cmd.Flags()
	parsedVar(fl, &opts.Engine, "engine", "engine", "auto", "auto, vllm, sglang, llamacpp, node-llama-cpp or transformers-cb", serverlog.ParseEngine)
	fl.IntVar(&opts.Year, "year", 0, "year of stamps that print none (vLLM, journald)")
	parsedVar(fl, &opts.Location, "tz", "zone", "", "time zone of stamps that print none (default UTC)", func(s string) (*time.Location, error) {
		loc, err := time.LoadLocation(s)
		if err != nil {
			return nil, fmt.Errorf("unknown time zone: want an IANA name such as Europe/Berlin, or UTC")
		}
		return loc, nil
	})
	fl.BoolVar(&asJSON, "json", false, "print the summary as JSON (the verdict's wall as its top-level \"wall\")")
	fl.StringSliceVar(&dumps, "metrics", nil, "saved /metrics dump(s) of the same server to read with the log (repeatable)")
	return cmd
}

// inspectLog scans one log (or a run directory's server.log) and prints
// its summary.
func inspectLog(w io.Writer, path string, dumps []string, opts serverlog.Options, asJSON bool) error {
	// The scan allocates about one byte per byte read but keeps only a few
	// MiB live: a higher GC target halves the collector's share of a large
	// log's CPU time for about 20 MiB of extra heap (docs/performance.md).
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	li, err := analyze.Inspect(path, dumps, opts)
	if errors.Is(err, analyze.ErrNoLogEvents) {
		return fmt.Errorf("inspect-log: %w; if the engine is one of these, name it with --engine", err)
	}
	if err != nil {
		return fmt.Errorf("inspect-log: %w", err)
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(inspectJSON(li))
	}
	return render.LogSummary(w, li)
}

// inspectJSON is inspect-log's --json document: the verdict's wall at the
// top, then the log's summary fields (as before), the dumps and the
// verdict.
func inspectJSON(li *analyze.LogInspection) any {
	type doc struct {
		Wall string `json:"wall"`
		*serverlog.Summary
		Dumps   []analyze.DumpInspection `json:"dumps,omitempty"`
		Verdict analyze.LogVerdict       `json:"verdict"`
	}
	d := doc{Wall: li.Verdict.Wall, Dumps: li.Dumps, Verdict: li.Verdict}
	if li.File != "" {
		d.Summary = &li.Summary
	}
	return d
}
