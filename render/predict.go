package render

import (
	"fmt"
	"math"

	"github.com/headroom-llm/headroom/analyze"
)

// predictionSection sets the prediction of this run, made from another run
// of the report, against what this run measured.
func predictionSection(id string, rep *analyze.Report, r *analyze.RunAnalysis) (section, bool) {
	var p *analyze.Prediction
	for i := range rep.Predictions {
		if rep.Predictions[i].Measured == r.Dir {
			p = &rep.Predictions[i]
		}
	}
	if p == nil {
		return section{}, false
	}
	ref := p.Reference
	for i := range rep.Runs {
		if rep.Runs[i].Dir == p.Reference {
			ref = fmt.Sprintf("run %d (%s)", i+1, runLabel(&rep.Runs[i]))
		}
	}
	s := section{
		ID:    id,
		Title: "Predicted against measured",
		Read: "This run predicted from " + ref + " before looking at it: at each level the engine's time per step beyond " +
			"that run's bandwidth bound is kept, and this run's own bound (its weights and KV cache at the probe's bandwidth) is added. " +
			"The error is (predicted − measured) ÷ measured p50 TPOT.",
	}
	var ts []float64
	for _, l := range p.Levels {
		ts = append(ts, l.ReferenceTPOTP50S, l.PredictedTPOTS, l.MeasuredTPOTP50S)
	}
	u := durationScale(ts...)
	t := table{
		Caption: "Per level: the calibration (reference TPOT − its bound = the engine's overhead), this run's bound, and the prediction.",
		Head: []string{"Concurrency", "Reference TPOT (" + u.name + ")", "Reference bound (" + u.name + ")", "Engine overhead (" + u.name + ")",
			"Bound here (" + u.name + ")", "Predicted TPOT (" + u.name + ")", "Measured TPOT (" + u.name + ")", "Error"},
		Right: []bool{true, true, true, true, true, true, true, true},
		Fold:  []bool{false, true, true, false, false, false, false, false},
	}
	for _, l := range p.Levels {
		errPct := "–"
		if l.HasMeasured {
			errPct = fmt.Sprintf("%+.1f%%", l.ErrorPct)
			if why := OutsideText(l.Outside); why != "" {
				errPct += " (" + why + ")"
			}
		}
		t.Rows = append(t.Rows, []string{integer(l.Concurrency), u.in(l.ReferenceTPOTP50S), u.in(l.ReferenceBoundS), u.in(l.EngineOverheadS),
			u.in(l.VariantBoundS), u.in(l.PredictedTPOTS), orDash(l.MeasuredTPOTP50S, u.in), errPct})
	}
	s.Tables = append(s.Tables, t)
	s.Sentences = append(s.Sentences, JudgedSentence(p, ref))
	// The calibration is the section's reading above; the rest are notes.
	s.Notes = append(s.Notes, PredictionNotes(p)[1:]...)
	return s, true
}

// PredictionNotes says how a prediction was made: its calibration, and how
// the KV capacity was sized when it was.
func PredictionNotes(p *analyze.Prediction) []string {
	out := []string{"Calibration: at each level the engine's time per step beyond the measured run's bandwidth bound is kept, and the variant's own bound (its weight and KV bytes at the bandwidth, or its FLOPs at the peak) is added."}
	if p.OtherShape {
		out = append(out, "The variant's model has another shape (layers, widths or heads) than the measured run's: the engine launches other kernels per step, so its overhead need not carry over; on an engine whose step is mostly host overhead the prediction can be far off.")
	}
	if k := p.KVSizing; k != nil {
		out = append(out, fmt.Sprintf("KV capacity: %s of %s GB of GPU memory less %s GB of weights, at %s bytes per token.",
			percent(k.Fraction), sig(k.MemoryBytes/1e9), sig(k.WeightBytes/1e9), integer(int64(math.Round(k.BytesPerToken)))))
	}
	return out
}

// OutsideText says why a level's error is not judged.
func OutsideText(why string) string {
	switch why {
	case analyze.OutsideBeyondWall:
		return "past the KV wall or slot cap"
	case analyze.OutsideReferenceWall:
		return "past the reference's wall"
	case analyze.OutsideNotSustained:
		return "not sustained"
	}
	return ""
}

// JudgedSentence says over which levels the prediction is judged, and its
// largest error there.
func JudgedSentence(p *analyze.Prediction, ref string) string {
	over := "the levels both runs sustained, before any KV wall or slot cap"
	if p.ReferenceWall != "" {
		over = fmt.Sprintf("the levels both runs sustained before %s's wall (%s from c=%d; past it its TPOT is the wall's, not decode's)",
			ref, wallName(p.ReferenceWall), p.ReferenceWallConcurrency)
	}
	if p.Judged == 0 {
		return "No level to judge the prediction on: it is judged over " + over + "."
	}
	return fmt.Sprintf("Judged over %s: %s, the largest error is %.1f%%.", over, plural(p.Judged, "level", "levels"), p.MaxAbsErrorPct)
}
