package render

import (
	"fmt"
	"strings"
	"time"

	"github.com/headroom-llm/headroom/analyze"
)

// logWallNames word the log-only walls.
var logWallNames = map[string]string{
	analyze.LogWallKVCache:        "KV cache",
	analyze.LogWallQueueing:       "queueing",
	analyze.LogWallCompute:        "compute",
	analyze.LogWallEngineOverhead: "engine overhead",
	analyze.LogWallNone:           "none reached",
	analyze.LogWallEngineError:    "engine error",
	analyze.LogWallUnknown:        "unknown",
}

// logBasisText says what a log-only verdict rests on.
var logBasisText = map[string]string{
	analyze.LogBasisFatal:       "the engine failed: a fatal error decides before any wall",
	analyze.LogBasisRules:       "the sweep's verdict rules, over the file's readings cut into windows by load",
	analyze.LogBasisEngineQueue: "requests waited in the engine with no sign of a full KV cache: nothing preempted, no cache reading at the wall (the sweep's rules would also want TTFT to grow with the load, which only client latencies show)",
	analyze.LogBasisBatch:       "a batch of requests ran with nothing waiting and nothing preempted (a cache nearly full without either is tight, not yet a wall): decode speed is the limit, which the accelerator's telemetry would confirm",
	analyze.LogBasisPromptCache: "the server's host-RAM prompt cache evicted an entry for every request it started while others ran: each start copies a slot's cache to host memory while the batch waits, so the engine's host side sets the pace (llama-server: --cache-ram 0 turns the prompt cache off)",
	analyze.LogBasisIdle:        "at most one request ran at a time: the server never reached a wall",
	analyze.LogBasisNoLoad:      "the file shows no running or waiting counts, no cache pressure and no request",
}

// logMeasureNames word what a log cannot tell, where the sweep's words
// (measureNames) do not fit a file read alone.
var logMeasureNames = map[string]string{
	analyze.MeasureRequests:      "the clients' per-request latencies (TTFT, TPOT): whether a queue cost the users time",
	analyze.MeasureClientSamples: "whether the load generator kept up",
	analyze.MeasureServerMetrics: "the server's /metrics (pass a saved dump with --metrics): preemption counters and queue counts between log lines",
	analyze.MeasureServerLog:     "the server's log (its preemption, KV-cache and error lines)",
}

// logDecidingNames name the measurement that would confirm a log-only
// wall, briefly.
var logDecidingNames = map[string]string{
	analyze.MeasureGPUTelemetry: "GPU telemetry",
	analyze.MeasureServerCPU:    "the server's CPU",
	analyze.MeasureRequests:     "client latencies",
}

// logEvidenceText says what one item of a log-only verdict shows.
func logEvidenceText(e analyze.Evidence) string {
	switch e.Kind {
	case analyze.EvRunningMax:
		if e.Value == 1 {
			return "one request running at a time at most"
		}
		return "up to " + count(e.Value) + " requests running at once"
	case analyze.EvPromptCacheEvictions:
		return fmt.Sprintf("%s prompt-cache evictions while %s requests were started with others running", integer(int(e.Value)), integer(int(e.Ref)))
	case analyze.EvCrashLog:
		return "the engine's fatal error (" + e.Name + ")"
	case analyze.EvPreemptions:
		s := integer(int(e.Value)) + " preemptions"
		if e.Value == 1 {
			s = "1 preemption"
		}
		if e.Name != "" && e.Name != "server log" {
			s += " (" + e.Name + ")"
		}
		return s
	case analyze.EvAdmission:
		return fmt.Sprintf("at most %s of %s requests in the engine ran while others waited, with the cache nearly full: admission stopped for want of cache", count(e.Value), count(e.Ref))
	}
	return evidenceText(e)
}

// logVerdictRows writes the verdict of a log or dump: the wall, what it
// rests on, the evidence with its lines, and what the file cannot tell.
func logVerdictRows(p func(string, ...any), row func(string, any), v analyze.LogVerdict) {
	p("\nverdict (from this file alone)\n")
	wall := nameOr(logWallNames, v.Wall)
	if v.Unconfirmed {
		wall += " (unconfirmed: " + nameOr(logDecidingNames, v.Deciding) + " would confirm it)"
	}
	row("wall", wall)
	row("because", nameOr(logBasisText, v.Basis))
	for i, e := range v.Evidence {
		if i == 6 {
			row("", fmt.Sprintf("... %d more", len(v.Evidence)-i))
			break
		}
		k := ""
		if i == 0 {
			k = "evidence"
		}
		s := logEvidenceText(e)
		switch {
		case e.Line > 0:
			s += fmt.Sprintf("\n  %-24s   line %d: %s", "", e.Line, clipLogLine(e.Text))
		case e.TimeNS > 0 && e.Source == analyze.EvidenceMetric:
			s += " at " + time.Unix(0, e.TimeNS).UTC().Format("2006-01-02 15:04:05 UTC")
		}
		row(k, s)
	}
	if len(v.Windows) > 1 {
		var ws []string
		for _, w := range v.Windows {
			ws = append(ws, fmt.Sprintf("%d (%d records)", w.Load, w.Records))
		}
		row("windows by load", strings.Join(ws, ", "))
	}
	cannot := cannotTellNames(v.CannotTell)
	if len(cannot) > 0 {
		row("cannot tell", cannot[0])
		for _, c := range cannot[1:] {
			row("", c)
		}
	}
}

// dumpRows writes what saved /metrics dumps hold.
func dumpRows(p func(string, ...any), row func(string, any), ds []analyze.DumpInspection) {
	for _, d := range ds {
		p("metrics dump: %s\n", d.File)
		eng := d.Engine
		if eng == "" {
			eng = "unknown (no engine's metric names)"
		}
		if d.Generation != "" {
			eng += ", engine " + d.Generation + " (from its metric names)"
		}
		row("engine", eng)
		scr := fmt.Sprintf("%d, %d families, %d samples", d.Scrapes, d.Families, d.Samples)
		if d.Timed && d.Scrapes > 1 {
			scr += fmt.Sprintf(", %s .. %s", time.Unix(0, d.First).UTC().Format("2006-01-02 15:04:05"), time.Unix(0, d.Last).UTC().Format("15:04:05 UTC"))
		} else if d.Scrapes > 1 {
			scr += " (no times between them)"
		}
		row("scrapes", scr)
		if d.RunningMax >= 0 {
			row("running max", count(d.RunningMax))
		}
		if d.WaitingMax >= 0 {
			row("waiting max", count(d.WaitingMax))
		}
		if d.KVUsageMax >= 0 {
			row("KV cache usage max", percent(d.KVUsageMax))
		}
		switch {
		case d.Preemptions < 0:
		default:
			row("preemptions", integer(d.Preemptions)+" by the last scrape, since the server started")
		}
		if d.Error != "" {
			row("error", d.Error)
		}
		for _, w := range d.Warnings {
			row("warning", metricsWarning(w))
		}
	}
}

// logOnlySection is the report of a bare server log or /metrics dump: the
// wall it alone supports, its evidence with the lines, what the file holds
// and what it cannot tell.
func logOnlySection(id string, r *analyze.RunAnalysis) section {
	li := r.LogOnly
	v := li.Verdict
	s := section{
		ID:    id,
		Title: "The wall this file alone supports",
		Read: "A server log or /metrics dump without a sweep: the sweep's verdict rules applied to the file's own " +
			"readings (running and waiting requests, KV-cache usage, preemptions), cut into windows by load, and " +
			"what the lines alone support where the rules need client latencies or GPU telemetry.",
	}
	wall := nameOr(logWallNames, v.Wall)
	if v.Unconfirmed {
		wall += " (unconfirmed: " + nameOr(logDecidingNames, v.Deciding) + " would confirm it)"
	}
	s.Facts = append(s.Facts, fact{Label: "Wall hit", Value: wall, Note: nameOr(logBasisText, v.Basis)})
	if li.File != "" {
		sum := li.Summary
		eng := string(sum.Engine)
		if sum.Generation != "" {
			eng += " " + sum.Generation
		}
		if sum.Version != "" {
			eng += " " + sum.Version
		}
		s.Facts = append(s.Facts, fact{Label: "Server log", Value: fmt.Sprintf("%s: %d lines, %d events, %d stats records", li.File, sum.Counts.Lines, sum.Counts.Events, sum.StatsLines), Note: "engine " + eng})
	}
	for _, d := range li.Dumps {
		s.Facts = append(s.Facts, fact{Label: "/metrics dump", Value: fmt.Sprintf("%s: %d scrapes", d.File, d.Scrapes), Note: "engine " + orText(d.Engine, "unknown")})
	}
	vv := verdict{Check: "Evidence", Result: wall, Status: analyze.StatusHit}
	if v.Wall == analyze.LogWallUnknown || v.Wall == analyze.LogWallNone {
		vv.Status = analyze.StatusClear
	}
	for _, e := range v.Evidence {
		ev := evidence{What: sentence(logEvidenceText(e))}
		if e.Line > 0 {
			ev.Log = []logLine{{N: e.Line, Text: e.Text}}
		}
		vv.Evidence = append(vv.Evidence, ev)
	}
	if len(vv.Evidence) > 0 {
		s.Verdicts = append(s.Verdicts, vv)
	}
	if len(v.Windows) > 0 {
		t := table{Caption: "The file's readings by load (requests in the engine, running plus waiting; –: not in the records). TPOT is the records' running requests over the engine's generation throughput: what a decode batch of that size implies.",
			Head:  []string{"In the engine", "Records", "Lines", "Running max", "Waiting max", "KV cache max", "Preemptions", "TPOT from the records"},
			Right: []bool{true, true, false, true, true, true, true, true}}
		for _, w := range v.Windows {
			dash := func(x float64, f func(float64) string) string {
				if x < 0 {
					return "–"
				}
				return f(x)
			}
			lines := ""
			if w.FirstLine > 0 {
				lines = fmt.Sprintf("%d–%d", w.FirstLine, w.LastLine)
			}
			tpot := "–"
			if w.TPOTP50S > 0 {
				tpot = dur(w.TPOTP50S)
			}
			t.Rows = append(t.Rows, []string{integer(w.Load), integer(w.Records), lines, dash(w.RunningMax, count), dash(w.WaitingMax, count),
				dash(w.KVUsageMax, percent), integer(w.Preemptions), tpot})
		}
		s.Tables = append(s.Tables, t)
	}
	cannot := cannotTellNames(v.CannotTell)
	if len(cannot) > 0 {
		s.Notes = append(s.Notes, "A file alone cannot tell: "+strings.Join(cannot, "; ")+". Run headroom sweep against the server for those.")
	}
	return s
}

// cannotTellNames names the measures a log or dump alone cannot tell.
func cannotTellNames(measures []string) []string {
	var out []string
	for _, m := range measures {
		if t, ok := logMeasureNames[m]; ok {
			out = append(out, t)
		} else {
			out = append(out, nameOr(measureNames, m))
		}
	}
	return out
}
