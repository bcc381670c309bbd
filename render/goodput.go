package render

import (
	"fmt"
	"strconv"
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
		s.Missing = "Goodput was not judged."
		return s, nil
	}
	a := axisOf(r.Sweep)
	// The operating point in words: the load to run at, the SLO it is
	// judged against and the first level outside it, with what it misses.
	say := sentence(operatingText(r.Sweep.Operating))
	if g.SLOSource == analyze.SLODefault {
		say += " The SLO is the default: give --slo for your own."
	}
	if g.OperatingLevel >= 0 {
		say += fmt.Sprintf(" Goodput there: %s.", tokPerS(g.OperatingOutputTokPerS))
	}
	s.Sentences = append(s.Sentences, say)
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
			a.cell(l.Concurrency, l.RateRPS), pass, exceeded(l), orDash(tput[l.LevelIndex], sig),
			sig(l.GoodputOutputTokPerS), meet, meetTput,
		})
	}
	s.Tables = append(s.Tables, t)
	for _, li := range g.PassAgainLevels {
		if l := levelByIndex(r.Sweep, li); l != nil {
			s.Notes = append(s.Notes, fmt.Sprintf("%s meets the SLO again after a lower level failed; the operating point stays below the first failure.", loadName(l.Load)))
		}
	}
	return s, nil
}

// exceeded lists a level's bounds outside the SLO.
func exceeded(l analyze.LevelGoodput) string {
	var out []string
	for _, b := range l.Bounds {
		name := b.Metric + " p" + strconv.FormatFloat(b.Percentile, 'f', -1, 64)
		switch {
		case !b.Known:
			out = append(out, name+" not available")
		case b.ValueS > b.MaxS:
			out = append(out, fmt.Sprintf("%s %s > %s", name, limit(b.ValueS), limit(b.MaxS)))
		}
	}
	if l.Unsustained {
		out = append(out, "not sustained (errors or incomplete)")
	}
	if l.Saturated {
		out = append(out, "saturated (fewer completions than arrivals: the backlog grows)")
	}
	return strings.Join(out, "; ")
}
