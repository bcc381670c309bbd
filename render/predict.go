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
	}
	for _, l := range p.Levels {
		errPct := "–"
		if l.HasMeasured {
			errPct = fmt.Sprintf("%+.1f%%", l.ErrorPct)
			if l.BeyondWall {
				errPct += " (past the wall)"
			}
		}
		t.Rows = append(t.Rows, []string{integer(l.Concurrency), u.in(l.ReferenceTPOTP50S), u.in(l.ReferenceBoundS), u.in(l.EngineOverheadS),
			u.in(l.VariantBoundS), u.in(l.PredictedTPOTS), orDash(l.MeasuredTPOTP50S, u.in), errPct})
	}
	s.Tables = append(s.Tables, t)
	s.Sentences = append(s.Sentences, fmt.Sprintf("The largest error before any KV wall or slot cap is %.1f%%.", p.MaxAbsErrorPct))
	s.Notes = append(s.Notes, PredictionNotes(p)...)
	return s, true
}

// PredictionNotes says how a prediction was made: its calibration, and how
// the KV capacity was sized when it was.
func PredictionNotes(p *analyze.Prediction) []string {
	out := []string{"Calibration: at each level the engine's time per step beyond the measured run's bandwidth bound is kept, and the variant's own bound (its weight and KV bytes at the bandwidth, or its FLOPs at the peak) is added."}
	if k := p.KVSizing; k != nil {
		out = append(out, fmt.Sprintf("KV capacity: %s of %s GB of GPU memory less %s GB of weights, at %s bytes per token.",
			percent(k.Fraction), sig(k.MemoryBytes/1e9), sig(k.WeightBytes/1e9), integer(int64(math.Round(k.BytesPerToken)))))
	}
	return out
}
