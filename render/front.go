package render

import (
	"fmt"
	"strconv"
	"strings"

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
	if failed, all := allFailed(sw.Levels); failed > 0 && failed == all {
		// Nothing was served: no wall, SLO or cost can be read from it,
		// and saying which measurement is missing would send the reader
		// after the wrong thing.
		return []string{
			fmt.Sprintf("Every one of the %s measured requests failed, at every level, so this run says nothing about the server's capacity.", integer(all)),
			"Find out why they failed (the errors in the per-level table, the server's log) and run again.",
		}
	}
	k, op := sw.Knees, sw.Operating
	stops := "No level finished within the error limit, so the sweep found no sustained throughput."
	if k.PeakLevel >= 0 && k.PeakOutputTokPerS > 0 {
		peak := analyze.LoadPoint{LevelIndex: k.PeakLevel, Axis: k.Axis, Concurrency: k.PeakConcurrency, RateRPS: k.PeakRateRPS}
		stops = fmt.Sprintf("The box sustains at most %s of output, at %s", tokPerS(k.PeakOutputTokPerS), pointName(peak))
		switch {
		case op.At.Valid():
			stops += fmt.Sprintf("; inside %s it serves %s, at %s", sloWords(op), tokPerS(op.OutputTokPerS), pointName(op.At))
		case op.FirstFailing.Valid():
			stops += "; no level meets " + sloWords(op)
		}
		stops += "."
	}
	out := []string{stops, wallSentence(sw.Diagnosis)}
	w := sw.Diagnosis.Primary
	hit := w.Kind != analyze.WallNone && w.Kind != analyze.WallInconclusive
	var set string
	switch {
	case w.Kind == analyze.WallClientBound && len(w.Fixes) > 0:
		// The load generator, not the server, set the numbers: no load to
		// run the server at follows from them.
		out = append(out, sentence("Size nothing from this run: "+fixText(w.Fixes[0])), costSentence(rep, r))
		return out
	case op.Capped && hit:
		// Past a wall there is no headroom to promise beyond the last
		// level tested, however well it met the SLO.
		set = "Run it at up to " + pointName(op.At) + ", the highest load tested, which meets the SLO"
	case op.Capped:
		set = "Run it at " + pointName(op.At) + " or more: every tested level meets the SLO"
	case op.At.Valid():
		set = "Run it at up to " + pointName(op.At)
		if op.At.Axis != analyze.AxisRate {
			set += " (" + pointValue(op.At) + ")"
		}
	default:
		set = "No load meets the SLO: change the configuration before serving it"
	}
	if b := beyondWall(sw.Diagnosis, op); b != nil {
		// The wall the first failing level met, not a lower primary
		// whose bend the SLO let pass: its fixes move the load.
		w = *b
	}
	switch {
	case !hit:
		// The wall sentence already says how far to raise the load or
		// what to record.
	case len(w.Fixes) > 0 && w.Fixes[0].Action == analyze.FixAdmissionControl:
		if op.At.Valid() {
			set += " and hold it there with admission control in front of the server: a bigger GPU will not help"
		} else {
			set += "; put admission control in front of the server: a bigger GPU will not help"
		}
	case len(w.Fixes) > 0:
		set += "; to go further, " + fixText(w.Fixes[0])
	}
	out = append(out, sentence(set), costSentence(rep, r))
	return out
}

// beyondWall is the verdict's wall that op.Beyond names; nil for none.
func beyondWall(d analyze.Diagnosis, op analyze.OperatingPoint) *analyze.Wall {
	if op.Beyond == "" {
		return nil
	}
	for _, w := range d.Walls() {
		if w.Kind == op.Beyond {
			return &w
		}
	}
	return nil
}

// allFailed counts the measured requests that failed, of all measured.
func allFailed(levels []analyze.LevelStats) (failed, all int) {
	for _, l := range levels {
		failed += l.Errors
		all += l.Requests
	}
	return failed, all
}

// sloWords names the SLO the operating point was judged against, saying
// when it is the default.
func sloWords(op analyze.OperatingPoint) string {
	if op.SLOSource == analyze.SLODefault {
		return "the default SLO (" + sloText(op.SLO) + ")"
	}
	return "the SLO (" + sloText(op.SLO) + ")"
}

// wallSentence names the wall with its strongest evidence, and the walls
// after it.
func wallSentence(d analyze.Diagnosis) string {
	w := d.Primary
	var s string
	switch w.Kind {
	case analyze.WallNone, analyze.WallInconclusive:
		if v := verdictSentences(d); len(v) > 0 {
			s = v[0]
		} else {
			s = sentence(wallAt(w))
		}
	default:
		// "From" and not "it stops": throughput may still rise past the
		// first wall, and the answer's first sentence names the peak.
		s = "From " + pointName(w.At) + " the limit is " + limitName(w)
		if len(w.Evidence) > 0 {
			s += ": " + evidenceText(w.Evidence[0])
		}
		s = sentence(s)
	}
	for _, x := range d.Secondary {
		s = strings.TrimSuffix(s, ".") + "; then the " + wallAt(x) + "."
	}
	return s
}

// limitName names a wall as the limit the answer's sentence reaches.
func limitName(w analyze.Wall) string {
	switch w.Kind {
	case analyze.WallKVCache, analyze.WallCompute:
		return "the " + wallTitle(w)
	case analyze.WallClientBound:
		return "the load generator (client-bound)"
	}
	return wallTitle(w)
}

// headlineFacts are page one's cards, one quantity and one unit each,
// with a short note: the answer's sentences say the rest.
func headlineFacts(rep *analyze.Report, r *analyze.RunAnalysis) []fact {
	var out []fact
	missing := func(label, why string) fact { return fact{Label: label, Value: why, Missing: true} }
	if sw := r.Sweep; sw != nil {
		k, a, op, d := sw.Knees, axisOf(sw), sw.Operating, sw.Diagnosis
		if k.PeakLevel >= 0 && k.PeakOutputTokPerS > 0 {
			note := "output, at " + a.name(k.PeakConcurrency, k.PeakRateRPS)
			if l := levelByIndex(sw, k.PeakLevel); l != nil && l.Errors > 0 {
				note += fmt.Sprintf("; %s of %s requests failed", integer(l.Errors), integer(l.Requests))
			}
			out = append(out, fact{Label: "Peak sustained throughput", Value: tokPerS(k.PeakOutputTokPerS), Note: note})
		} else {
			out = append(out, missing("Peak sustained throughput", "no level finished within the error limit"))
		}
		if op.At.Valid() {
			note := tokPerS(op.OutputTokPerS) + " inside the SLO"
			if op.SLOSource == analyze.SLODefault {
				note += " (the default)"
			}
			if !op.Reliable {
				note += "; its p99s rest on fewer than 100 requests"
			}
			out = append(out, fact{Label: "Operating point", Value: pointValue(op.At), Note: note})
		} else {
			out = append(out, missing("Operating point", "no level meets the SLO"))
		}
		wall := fact{Label: "Wall", Value: wallTitle(d.Primary), Note: "confidence " + nameOr(confidenceNames, d.Confidence.Level)}
		if d.Primary.At.Valid() {
			wall.Note = "from " + pointName(d.Primary.At) + "; " + wall.Note
		}
		for _, x := range d.Secondary {
			wall.Note += "; then " + wallAt(x)
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
	// Where the knee sits against the ridge is the wall's evidence, said
	// with the wall below; the run's details have the gap level by level.
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
	w := d.Primary
	s := section{ID: "front-wall", Title: "The wall: " + wallTitle(w)}
	v := verdict{Check: nameOr(checkNames, w.Kind), Result: nameOr(confidenceNames, d.Confidence.Level) + " confidence", Status: analyze.StatusHit}
	switch w.Kind {
	case analyze.WallNone:
		v.Status = analyze.StatusClear
		v.Check, v.Result = "No wall reached", "up to "+pointName(w.At)
	case analyze.WallInconclusive:
		v.Status = analyze.StatusUnknown
		v.Check = "Inconclusive"
	}
	v.Summary = strings.Join(verdictSentences(d), " ")
	if len(w.Evidence) > 0 {
		e := evidenceView(w.Evidence[0])
		switch {
		case !strings.Contains(v.Summary, evidenceText(w.Evidence[0])):
			v.Evidence = []evidence{e}
		case len(e.Log) > 0:
			// The sentence says it; the quoted line is what it adds.
			v.Evidence = []evidence{{What: "server.log, line " + strconv.FormatInt(w.Evidence[0].Line, 10), Log: e.Log}}
		}
	}
	if len(w.Fixes) > 0 {
		v.Fixes = []string{fixText(w.Fixes[0])}
	}
	s.Verdicts = append(s.Verdicts, v)
	for _, x := range d.Secondary {
		s.Notes = append(s.Notes, sentence("Then the "+wallAt(x)))
	}
	s.Notes = append(s.Notes, fmt.Sprintf("Every check and all its evidence are in the diagnosis of run %d.", run+1))
	return &s
}
