package render

import (
	"fmt"
	"strings"

	"github.com/headroom-llm/headroom/analyze"
)

// goodputSection shows each level against the SLO.
func goodputSection(id string, r *analyze.RunAnalysis) (section, error) {
	s := section{
		ID:    id,
		Title: "Goodput under the SLO",
		Read: "A level's goodput is its throughput when its p99 TTFT and p99 TPOT are inside the SLO; the " +
			"first level outside the SLO is where usable capacity stopped, whatever the throughput column says.",
	}
	if r.Sweep == nil {
		s.Missing = noSweep("goodput")
		return s, nil
	}
	g := r.Sweep.Goodput
	if g == nil {
		s.Missing = "No SLO was given, so goodput was not judged. Report again with e.g. --slo ttft_p99=2s,tpot_p99=100ms."
		return s, nil
	}
	a := axisOf(r.Sweep)
	say := "SLO: " + sloWords(g.SLO) + ". "
	if g.OperatingLevel >= 0 {
		say += fmt.Sprintf("The highest level inside it is %s, with a goodput of %s", a.name(g.OperatingConcurrency, g.OperatingRateRPS), tokPerS(g.OperatingOutputTokPerS))
	} else {
		say += "Even the first level fails it"
	}
	if g.FirstFailingLevel >= 0 {
		rate := 0.0
		if l := levelByIndex(r.Sweep, g.FirstFailingLevel); l != nil {
			rate = l.RateRPS
		}
		say += "; the first level outside it is " + a.name(g.FirstFailingConcurrency, rate)
	}
	s.Sentences = append(s.Sentences, say+".")
	t := table{
		Caption: "Per level against the SLO: goodput is the throughput of a level inside it.",
		Head:    []string{a.head(), "Inside the SLO", "Bounds exceeded", "Output tok/s", "Goodput tok/s", "Requests meeting every bound", "Their tok/s"},
		Right:   []bool{true, false, false, true, true, true, true},
		Fold:    []bool{false, false, true, true, false, false, true},
	}
	tput := map[int]float64{} // by level index
	for _, l := range r.Sweep.Levels {
		tput[l.LevelIndex] = l.OutputTokPerS
	}
	for _, l := range g.Levels {
		pass := "no"
		switch {
		case !l.Known:
			pass = "unknown"
		case l.Pass:
			pass = "yes"
		}
		meet, meetTput := "–", "–"
		if l.PerRequestKnown {
			meet, meetTput = percent(l.RequestsMeetingFraction), sig(l.MeetingOutputTokPerS)
		}
		t.Rows = append(t.Rows, []string{
			a.cell(l.Concurrency, l.RateRPS), pass, strings.Join(l.Failed, "; "), orDash(tput[l.LevelIndex], sig),
			sig(l.GoodputOutputTokPerS), meet, meetTput,
		})
	}
	s.Tables = append(s.Tables, t)
	s.Notes = append(s.Notes, sentences(g.Notes)...)
	return s, nil
}
