package compare

import "github.com/headroom-llm/headroom/analyze"

// paretoAcross puts every run's levels on one Pareto chart, each point
// labelled with its run, and marks the frontier across all of them: the
// levels of any run that no level of any run beats.
func paretoAcross(runs []Run) []analyze.ParetoPoint {
	var out []analyze.ParetoPoint
	for i, r := range runs {
		if r.Sweep == nil || r.Sweep.Pareto == nil {
			continue
		}
		for _, p := range r.Sweep.Pareto.Points {
			p.Run, p.Label = i, r.Label
			out = append(out, p)
		}
	}
	analyze.MarkFrontier(out)
	return out
}
