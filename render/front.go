package render

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/headroom-llm/headroom/analyze"
)

// Page one is the deliverable: a reader who stops there has the answer.
// It is about one run, the report's headline run (the first sweep): the
// answer in four sentences (where the box stops, why, what to set, what a
// million tokens cost against the nearest API price), the figures as cards,
// the three panels, the roofline with the measured decode points, the wall
// with its single strongest evidence, and the run's context in one line.
// Everything else follows as details.

// front is page one: its run and its sections, in order.
type front struct {
	// Run is the index into the report's runs of the run page one is
	// about; -1 when the report has none.
	Run int
	// Name names the run when the report holds several.
	Name string
	// Context is the run's context in one line: model, quantization,
	// engine and version, GPU, date.
	Context  string
	Sections []section
}

// headlineRun is the run page one is about: the run the analyzer's
// headline names, else the first sweep, else the first run.
func headlineRun(rep *analyze.Report) int {
	if h := rep.Headline; h != nil {
		for i := range rep.Runs {
			if r := &rep.Runs[i]; r.Sweep != nil && (h.Run == r.Dir || h.Run == runLabel(r)) {
				return i
			}
		}
	}
	for i := range rep.Runs {
		if rep.Runs[i].Sweep != nil {
			return i
		}
	}
	if len(rep.Runs) > 0 {
		return 0
	}
	return -1
}

// buildFront lays out page one.
func buildFront(rep *analyze.Report) (front, error) {
	f := front{Run: headlineRun(rep)}
	if f.Run < 0 {
		return f, nil
	}
	r := &rep.Runs[f.Run]
	if len(rep.Runs) > 1 {
		f.Name = fmt.Sprintf("Run %d: %s", f.Run+1, runLabel(r))
	}
	f.Context = contextLine(r, probeFor(rep, r))
	answer := section{ID: "answer", Title: "The answer", Answer: true}
	answer.Sentences = answerSentences(rep, r)
	answer.Facts = headlineFacts(rep, r)
	f.Sections = append(f.Sections, answer)
	if sw := r.Sweep; sw != nil && len(sw.Levels) > 0 {
		panels, err := sweepPanels("front-sweep", sw)
		if err != nil {
			return f, err
		}
		f.Sections = append(f.Sections, section{
			ID: "front-sweep", Title: "Throughput, TPOT and TTFT against the load",
			Charts: panels, ChartRow: true,
			Notes: []string{fmt.Sprintf("The numbers behind the panels are in the details of run %d.", f.Run+1)},
		})
	}
	roof, err := frontRoofline(rep, r)
	if err != nil {
		return f, err
	}
	if roof != nil {
		f.Sections = append(f.Sections, *roof)
	}
	if w := frontWall(r, f.Run); w != nil {
		f.Sections = append(f.Sections, *w)
	}
	return f, nil
}

// probeFor is the roofline a run is measured against: its own probe, else
// the probe its decode roofline used.
func probeFor(rep *analyze.Report, r *analyze.RunAnalysis) *analyze.Roofline {
	if r.Roofline != nil {
		return r.Roofline
	}
	if r.Sweep != nil && r.Sweep.Decode != nil {
		return probeOf(rep, r.Sweep.Decode.ProbeRun)
	}
	return nil
}

// answerSentences are the answer in four sentences: where the box stops,
// why, what to set and what a million tokens cost.
func answerSentences(rep *analyze.Report, r *analyze.RunAnalysis) []string {
	sw := r.Sweep
	if sw == nil {
		rl := r.Roofline
		if rl == nil {
			return []string{"This report holds no measurement to answer from."}
		}
		return []string{
			fmt.Sprintf("%s peaks at %s in %s GEMMs and moves %s; the ridge is %s FLOP/byte, and %.0f%% of peak is reached at B=%d.",
				orMissing(rl.GPU, "The GPU"), tflops(rl.PeakFLOPPerS), rl.DType, gbps(rl.BandwidthBytesPerS), sig(rl.RidgeFLOPPerByte), 100*analyze.KneeFraction, rl.KneeBatch),
			"There is no load sweep in this report, so where a serving engine stops on this card is not measured: run headroom sweep against the server and report both runs together.",
		}
	}
	var out []string
	k, a := sw.Knees, axisOf(sw)
	stops := "No level finished within the error limit, so the sweep found no sustained throughput."
	if k.PeakLevel >= 0 && k.PeakOutputTokPerS > 0 {
		stops = fmt.Sprintf("The box sustains at most %s of output at %s", tokPerS(k.PeakOutputTokPerS), a.name(k.PeakConcurrency, k.PeakRateRPS))
		if g := sw.Goodput; g != nil && g.OperatingLevel >= 0 {
			stops += fmt.Sprintf("; inside the SLO (%s) it serves %s, at %s", sloWords(g.SLO), tokPerS(g.OperatingOutputTokPerS), a.name(g.OperatingConcurrency, g.OperatingRateRPS))
		} else if g != nil {
			stops += fmt.Sprintf("; no level meets the SLO (%s)", sloWords(g.SLO))
		}
		stops += "."
	}
	out = append(out, stops)
	out = append(out, wallSentence(sw.Diagnosis))
	if k.RecommendedLevel >= 0 {
		set := fmt.Sprintf("Set the concurrency cap to %s: %s", a.value(k.RecommendedConcurrency, k.RecommendedRateRPS), k.RecommendedReason)
		if fix := topFix(sw.Diagnosis); fix != "" {
			set += "; to go further, " + strings.TrimSuffix(fix, ".")
		}
		out = append(out, sentence(set))
	} else {
		out = append(out, sentence("No concurrency cap can be recommended: "+orText(k.RecommendedReason, "no TPOT baseline")))
	}
	out = append(out, costSentence(rep, r))
	return out
}

// wallSentence names the wall and where it was hit.
func wallSentence(d analyze.Diagnosis) string {
	name := wallName(d.Wall)
	short := strings.TrimSpace(d.Short)
	if short == "" {
		return sentence("The wall: " + name)
	}
	// The short form usually starts with the wall's own name ("Compute
	// knee at c=16 ..."): say it once.
	if strings.HasPrefix(strings.ToLower(short), strings.ToLower(name)) {
		return sentence("It stops at the " + lowerFirst(short))
	}
	return sentence("It stops at the " + name + ": " + short)
}

// topFix is the first fix of the wall that was hit.
func topFix(d analyze.Diagnosis) string {
	for _, f := range d.Findings {
		if f.Check == d.Wall && f.Status == analyze.StatusHit && len(f.Fixes) > 0 {
			return f.Fixes[0]
		}
	}
	return ""
}

// lowerFirst lowers a leading capital of a word ("Compute knee"), not of
// a name in capitals ("KV-cache wall").
func lowerFirst(s string) string {
	if len(s) < 2 || !unicode.IsLower(rune(s[1])) {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// sloWords says an SLO's bounds: "TTFT p99 ≤ 2 s, TPOT p99 ≤ 100 ms".
func sloWords(s analyze.SLO) string {
	var bounds []string
	for _, b := range s.Bounds {
		bounds = append(bounds, fmt.Sprintf("%s p%s ≤ %s", strings.ToUpper(b.Metric), trimFloat(b.Percentile), durWords(b.MaxS)))
	}
	return strings.Join(bounds, ", ")
}

// durWords says a duration in a sentence: seconds from one second up.
func durWords(secs float64) string {
	if secs >= 1 {
		v := sig(secs)
		if strings.Contains(v, ".") {
			v = strings.TrimSuffix(strings.TrimRight(v, "0"), ".")
		}
		return v + " s"
	}
	return dur(secs)
}

// headlineFacts are page one's cards, one quantity and one unit each,
// with a short note: the answer's sentences say the rest.
func headlineFacts(rep *analyze.Report, r *analyze.RunAnalysis) []fact {
	var out []fact
	missing := func(label, why string) fact { return fact{Label: label, Value: why, Missing: true} }
	if sw := r.Sweep; sw != nil {
		k, a := sw.Knees, axisOf(sw)
		if k.PeakLevel >= 0 && k.PeakOutputTokPerS > 0 {
			note := "output, at " + a.name(k.PeakConcurrency, k.PeakRateRPS)
			if l := levelByIndex(sw, k.PeakLevel); l != nil && l.Errors > 0 {
				note += fmt.Sprintf("; %s of %s requests failed", integer(l.Errors), integer(l.Requests))
			}
			out = append(out, fact{Label: "Peak sustained throughput", Value: tokPerS(k.PeakOutputTokPerS), Note: note})
		} else {
			out = append(out, missing("Peak sustained throughput", "no level finished within the error limit"))
		}
		if g := sw.Goodput; g != nil {
			if g.OperatingLevel >= 0 {
				out = append(out, fact{Label: "Inside the SLO", Value: tokPerS(g.OperatingOutputTokPerS), Note: "at " + a.name(g.OperatingConcurrency, g.OperatingRateRPS)})
			} else {
				out = append(out, missing("Inside the SLO", "no level meets the SLO"))
			}
		}
		if k.RecommendedLevel >= 0 {
			out = append(out, fact{Label: "Concurrency cap to set", Value: a.value(k.RecommendedConcurrency, k.RecommendedRateRPS)})
		} else {
			out = append(out, missing("Concurrency cap to set", "none found"))
		}
		wall := fact{Label: "Wall", Value: wallName(sw.Diagnosis.Wall)}
		for _, f := range sw.Diagnosis.Findings {
			if f.Check == sw.Diagnosis.Wall && f.Status == analyze.StatusHit && f.Load != "" {
				wall.Note = "from " + f.Load
			}
		}
		out = append(out, wall, costFact(rep, r))
	}
	if rl := probeFor(rep, r); rl != nil {
		out = append(out, fact{
			Label: "Hardware ceiling",
			Value: tflops(rl.PeakFLOPPerS),
			Note:  fmt.Sprintf("%s %s; %s; ridge %s FLOP/byte", orMissing(rl.GPU, "GPU"), rl.DType, gbps(rl.BandwidthBytesPerS), sig(rl.RidgeFLOPPerByte)),
		})
	}
	return out
}

// frontRoofline is the roofline with the run's measured decode points.
func frontRoofline(rep *analyze.Report, r *analyze.RunAnalysis) (*section, error) {
	rl := probeFor(rep, r)
	if rl == nil {
		return nil, nil
	}
	var dec *analyze.DecodeRoofline
	if r.Sweep != nil {
		dec = r.Sweep.Decode
	}
	s := section{ID: "front-roofline", Title: "Where decode sits under the hardware ceiling"}
	opt, err := rooflineChart(rl, dec)
	if err != nil {
		return nil, err
	}
	s.Charts = []chart{{ID: "front-roofline-chart", Caption: rooflineCaption(rl, dec), Class: "wide", Option: opt}}
	if dec != nil && dec.Ridge.Sentence != "" {
		s.Sentences = append(s.Sentences, sentence(dec.Ridge.Sentence))
	}
	return &s, nil
}

// frontWall is the wall that was hit with its single strongest evidence
// and the first thing to change.
func frontWall(r *analyze.RunAnalysis, run int) *section {
	sw := r.Sweep
	if sw == nil {
		return nil
	}
	d := sw.Diagnosis
	s := section{ID: "front-wall", Title: "The wall: " + wallName(d.Wall)}
	for _, f := range d.Findings {
		if f.Check != d.Wall || f.Status != analyze.StatusHit {
			continue
		}
		v := verdict{Check: nameOr(checkNames, f.Check), Result: nameOr(statusNames, f.Status), Status: f.Status, Summary: sentence(f.Summary)}
		if e, ok := strongestEvidence(f.Evidence); ok {
			v.Evidence = []evidence{evidenceView(e)}
		}
		if len(f.Fixes) > 0 {
			v.Fixes = f.Fixes[:1]
		}
		s.Verdicts = append(s.Verdicts, v)
	}
	if len(s.Verdicts) == 0 && d.Summary != "" {
		s.Sentences = append(s.Sentences, sentence(d.Summary))
	}
	s.Notes = append(s.Notes, fmt.Sprintf("Every check and all its evidence are in the diagnosis of run %d.", run+1))
	return &s
}

// strongestEvidence picks the evidence to show on page one: a line of the
// server's own log when there is one (the reader can find it), else the
// first.
func strongestEvidence(ev []analyze.Evidence) (analyze.Evidence, bool) {
	for _, e := range ev {
		if e.Line > 0 {
			return e, true
		}
	}
	if len(ev) > 0 {
		return ev[0], true
	}
	return analyze.Evidence{}, false
}
