package render

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/headroom-llm/headroom/analyze"
)

// wallNames says each wall in words.
var wallNames = map[string]string{
	analyze.WallKVCache:      "KV-cache wall",
	analyze.WallCompute:      "compute knee",
	analyze.WallQueueing:     "queueing",
	analyze.WallClientBound:  "client-bound",
	analyze.WallNone:         "no wall reached",
	analyze.WallInconclusive: "inconclusive",
}

// checkNames names each of the four checks.
var checkNames = map[string]string{
	analyze.WallKVCache:     "KV-cache wall",
	analyze.WallCompute:     "Compute knee",
	analyze.WallQueueing:    "Queueing",
	analyze.WallClientBound: "Client-bound",
}

var statusNames = map[string]string{
	analyze.StatusHit:           "hit",
	analyze.StatusClear:         "clear",
	analyze.StatusUnknown:       "unknown (evidence missing)",
	analyze.StatusNotApplicable: "not applicable",
}

func wallName(w string) string {
	if n, ok := wallNames[w]; ok {
		return n
	}
	return w
}

func nameOr(m map[string]string, k string) string {
	if n, ok := m[k]; ok {
		return n
	}
	return k
}

// diagnosisSection shows which wall was hit, with the evidence.
func diagnosisSection(id string, r *analyze.RunAnalysis) section {
	s := section{
		ID:    id,
		Title: "Diagnosis: which wall was hit",
		Read: "Four checks, each with its evidence: KV-cache wall (preemptions, cache near full), compute knee " +
			"(clean log, GPU busy), queueing (TTFT tail pulling away while TPOT is flat), client-bound (the load " +
			"generator could not keep up).",
	}
	if r.Sweep == nil {
		s.Missing = noSweep("wall to diagnose")
		return s
	}
	d := r.Sweep.Diagnosis
	s.Facts = []fact{{Label: "Wall", Value: wallName(d.Wall)}}
	if d.Summary != "" {
		s.Sentences = append(s.Sentences, sentence(d.Summary))
	}
	for _, f := range d.Findings {
		v := verdict{Check: nameOr(checkNames, f.Check), Result: nameOr(statusNames, f.Status), Status: f.Status, Fixes: f.Fixes}
		if f.Summary != d.Summary {
			// The wall's own finding is already said above.
			v.Summary = sentence(f.Summary)
		}
		if f.Status != analyze.StatusHit {
			v.Fixes = nil // fixes for a wall that was not hit would only mislead
		}
		for _, e := range f.Evidence {
			v.Evidence = append(v.Evidence, evidenceView(e))
		}
		if len(f.Missing) > 0 {
			v.Evidence = append(v.Evidence, evidence{What: "Missing evidence: " + strings.Join(f.Missing, ", ") + "."})
		}
		s.Verdicts = append(s.Verdicts, v)
	}
	if len(d.Missing) > 0 {
		s.Notes = append(s.Notes, "The run lacks: "+strings.Join(d.Missing, ", ")+". Record them in the next sweep (the server's log and /metrics, GPU telemetry) for a firmer diagnosis.")
	}
	return s
}

// evidenceView shows one piece of evidence: a log line with its number,
// or a value with its unit.
func evidenceView(e analyze.Evidence) evidence {
	ev := evidence{What: e.Note}
	if e.Concurrency > 0 {
		ev.Level = "c=" + strconv.Itoa(e.Concurrency)
	}
	switch {
	case e.Line > 0:
		ev.Log = []logLine{{N: e.Line, Text: e.Text}}
		ev.What += " (server.log, line " + strconv.FormatInt(e.Line, 10) + ")"
	case e.Name != "":
		val := sig(e.Value)
		if e.Unit != "" {
			val += " " + e.Unit
		}
		if ev.What != "" {
			ev.What += ": "
		}
		ev.What += fmt.Sprintf("%s = %s", e.Name, val)
	}
	return ev
}
