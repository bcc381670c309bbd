package render

import (
	"fmt"
	"strings"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/analyze/compare"
	"github.com/headroom-llm/headroom/rundir"
	"github.com/headroom-llm/headroom/stats"
)

// A report of several sweeps tells their story first: what differs between
// them (the manifest diff headroom compare makes) and what that changed in
// the peak, the operating point, the wall and the cost, a sentence each,
// each run against page one's run.

// diffIgnored are context keys that name a run rather than configure it.
var diffIgnored = map[string]bool{"label": true, "tags": true, "headroom_version": true}

// acrossSections is the comparison of the report's sweeps; nil for fewer
// than two.
func acrossSections(rep *analyze.Report) ([]section, error) {
	var sweeps []int
	for i := range rep.Runs {
		if rep.Runs[i].Sweep != nil && rep.Runs[i].Manifest != nil {
			sweeps = append(sweeps, i)
		}
	}
	if len(sweeps) < 2 {
		return nil, nil
	}
	base := headlineRun(rep)
	s := section{
		ID:    "across",
		Title: "What differs between the runs, and what it changed",
		Read:  fmt.Sprintf("Each run is set against run %d, the run page one is about.", base+1),
	}
	b := &rep.Runs[base]
	for _, i := range sweeps {
		if i == base {
			continue
		}
		r := &rep.Runs[i]
		s.Sentences = append(s.Sentences, differsSentence(base, i, b, r))
		s.Sentences = append(s.Sentences, peakChange(b.Sweep, r.Sweep), operatingChange(b.Sweep, r.Sweep), wallChange(base, b.Sweep, r.Sweep))
		if c := costChange(b.Sweep, r.Sweep); c != "" {
			s.Sentences = append(s.Sentences, c)
		}
	}
	s.Tables = append(s.Tables, acrossTable(rep, sweeps))
	return []section{s}, nil
}

// differsSentence names what differs between two runs' manifests.
func differsSentence(bi, ri int, b, r *analyze.RunAnalysis) string {
	differs, _ := compare.DiffManifests([]*rundir.Manifest{b.Manifest, r.Manifest})
	var parts []string
	for _, d := range differs {
		if diffIgnored[d.Key] {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s instead of %s", keyWords(d.Key), orText(d.Values[1], "none"), orText(d.Values[0], "none")))
	}
	head := fmt.Sprintf("Run %d (%s) against run %d (%s)", ri+1, runLabel(r), bi+1, runLabel(b))
	if len(parts) == 0 {
		return head + ": their manifests record the same configuration."
	}
	return head + ": " + strings.Join(parts, "; ") + "."
}

// keyWords says a context key in words: "engine.flag --kv-blocks" is the
// flag itself, "engine.max_context_tokens" the context length.
func keyWords(k string) string {
	if f, ok := strings.CutPrefix(k, "engine.flag "); ok {
		return f
	}
	if w, ok := keyNames[k]; ok {
		return w
	}
	return k
}

var keyNames = map[string]string{
	"engine.name": "engine", "engine.version": "engine version", "engine.model": "model",
	"engine.quantization": "quantization", "engine.dtype": "dtype", "engine.max_context_tokens": "context length",
	"gpu.name": "GPU", "gpu.count": "GPU count", "gpu.driver": "driver", "gpu.cuda_version": "CUDA",
	"workload.prompt_tokens": "prompt tokens", "workload.output_tokens": "output tokens", "workload.levels": "levels",
	"workload.mode": "load", "workload.requests_per_level": "requests per level", "host.hostname": "host",
}

// peakOf is a sweep's peak sustained throughput with its interval.
func peakOf(sw *analyze.SweepAnalysis) (float64, string, *stats.Interval) {
	k := sw.Knees
	if k.PeakLevel < 0 || k.PeakOutputTokPerS <= 0 {
		return 0, "", nil
	}
	var iv *stats.Interval
	if l := levelByIndex(sw, k.PeakLevel); l != nil {
		iv = l.Confidence.OutputTokPerS
	}
	return k.PeakOutputTokPerS, axisOf(sw).name(k.PeakConcurrency, k.PeakRateRPS), iv
}

// peakChange says how the peak moved, and whether beyond the noise: the
// peaks' intervals must not overlap for a change to count.
func peakChange(b, r *analyze.SweepAnalysis) string {
	bv, bat, biv := peakOf(b)
	rv, rat, riv := peakOf(r)
	if bv <= 0 || rv <= 0 {
		return "Peak sustained throughput: not comparable, one of the runs has none."
	}
	s := fmt.Sprintf("Peak sustained throughput: %s at %s, against %s at %s", tokPerS(rv), rat, tokPerS(bv), bat)
	switch {
	case biv == nil || riv == nil:
		return s + fmt.Sprintf(" (%s; no intervals to judge it by).", signedPercent(rv/bv-1))
	case riv.Low > biv.High:
		return s + fmt.Sprintf(": up %s, beyond the noise (intervals %s–%s and %s–%s).", percent(rv/bv-1), sig(riv.Low), sig(riv.High), sig(biv.Low), sig(biv.High))
	case riv.High < biv.Low:
		return s + fmt.Sprintf(": down %s, beyond the noise (intervals %s–%s and %s–%s).", percent(1-rv/bv), sig(riv.Low), sig(riv.High), sig(biv.Low), sig(biv.High))
	}
	return s + fmt.Sprintf(": no change beyond the noise (intervals %s–%s and %s–%s overlap).", sig(riv.Low), sig(riv.High), sig(biv.Low), sig(biv.High))
}

// operatingChange says how the operating point under the SLO moved.
func operatingChange(b, r *analyze.SweepAnalysis) string {
	bo, ro := b.Operating, r.Operating
	at := func(op analyze.OperatingPoint) string {
		if !op.At.Valid() {
			return "no level inside it"
		}
		return tokPerS(op.OutputTokPerS) + " at " + pointName(op.At)
	}
	head := "Inside " + sloWords(ro)
	if bo.At.Valid() && ro.At.Valid() && bo.At.Value() == ro.At.Value() {
		return fmt.Sprintf("%s: the same operating point, %s, against %s.", head, at(ro), at(bo))
	}
	return fmt.Sprintf("%s: %s, against %s.", head, at(ro), at(bo))
}

// hitWalls lists the walls a sweep hit with where each shows first.
func hitWalls(sw *analyze.SweepAnalysis) map[string]analyze.LoadPoint {
	out := map[string]analyze.LoadPoint{}
	for _, w := range sw.Diagnosis.Walls() {
		if w.Kind != analyze.WallNone && w.Kind != analyze.WallInconclusive {
			out[w.Kind] = w.At
		}
	}
	return out
}

// wallChange says which wall each run hit first, and which walls one run
// hit and the other did not.
func wallChange(base int, b, r *analyze.SweepAnalysis) string {
	bw, rw := b.Diagnosis.Primary, r.Diagnosis.Primary
	s := "The wall: " + wallAt(rw)
	if bw.Kind == rw.Kind {
		s += ", the same kind as run " + fmt.Sprint(base+1) + "'s (" + wallAt(bw) + ")"
	} else {
		s += ", against " + wallAt(bw)
	}
	bh, rh := hitWalls(b), hitWalls(r)
	var gone, added []string
	for _, kind := range analyze.WallKinds {
		at, inB := bh[kind]
		rat, inR := rh[kind]
		switch {
		case inB && !inR:
			gone = append(gone, fmt.Sprintf("the %s (run %d from %s)", wallName(kind), base+1, pointName(at)))
		case inR && !inB:
			added = append(added, fmt.Sprintf("the %s (from %s)", wallName(kind), pointName(rat)))
		}
	}
	if len(gone) > 0 {
		s += "; no longer hit: " + strings.Join(gone, ", ")
	}
	if len(added) > 0 {
		s += "; newly hit: " + strings.Join(added, ", ")
	}
	return s + "."
}

// costChange says how the cost per million tokens at the honest point
// moved, in one unit; "" when either run is not priced.
func costChange(b, r *analyze.SweepAnalysis) string {
	if b.Cost == nil || r.Cost == nil || len(b.Cost.Points) == 0 || len(r.Cost.Points) == 0 {
		return ""
	}
	bp, rp := honestPoint(b.Cost), honestPoint(r.Cost)
	bv, rv, unit := bp.USDPerMTokBlended, rp.USDPerMTokBlended, "prompt + output"
	if bv <= 0 || rv <= 0 {
		bv, rv, unit = bp.USDPerMTokOutput, rp.USDPerMTokOutput, "output tokens"
	}
	return fmt.Sprintf("Cost per million tokens (%s) at the %s: %s, against %s at the %s (%s).", unit, rp.Name, usd(rv), usd(bv), bp.Name, signedPercent(rv/bv-1))
}

// acrossTable is the runs side by side: what they are, and their answer.
func acrossTable(rep *analyze.Report, sweeps []int) table {
	t := table{
		Caption: "The sweeps side by side; every figure is from the run's own details.",
		Head:    []string{"Run", "Peak tok/s", "Operating point", "Its tok/s", "Wall", "$/Mtok (prompt + output)"},
		Right:   []bool{false, true, true, true, false, true},
	}
	for _, i := range sweeps {
		r := &rep.Runs[i]
		sw := r.Sweep
		k := sw.Knees
		peak := "–"
		if k.PeakLevel >= 0 && k.PeakOutputTokPerS > 0 {
			peak = sig(k.PeakOutputTokPerS)
		}
		inside, point := "none", "–"
		if op := sw.Operating; op.At.Valid() {
			inside, point = sig(op.OutputTokPerS), pointName(op.At)
		}
		cost := "–"
		if c := sw.Cost; c != nil && len(c.Points) > 0 {
			if p := honestPoint(c); p.USDPerMTokBlended > 0 {
				cost = usd(p.USDPerMTokBlended)
			}
		}
		t.Rows = append(t.Rows, []string{fmt.Sprintf("%d: %s", i+1, runLabel(r)), peak, point, inside, wallAt(sw.Diagnosis.Primary), cost})
	}
	return t
}
