package render

import (
	"fmt"
	"strings"

	"github.com/headroom-llm/headroom/analyze"
)

// costSection shows cost per million tokens against hosted API prices.
func costSection(id string, r *analyze.RunAnalysis) section {
	s := section{
		ID:    id,
		Title: "Cost per million tokens",
		Read: "What the box costs per million tokens at peak sustained throughput and at the SLO operating " +
			"point (the honest one), from the GPU-hour price and power, next to dated hosted API prices.",
	}
	if r.Sweep == nil {
		s.Missing = noSweep("throughput to price")
		return s
	}
	c := r.Sweep.Cost
	if c == nil {
		s.Missing = "No GPU price was given, so no cost was computed. Report again with --gpu-hour-usd PRICE (or --gpu-preset NAME) and --kwh-usd PRICE."
		return s
	}
	price := usd(c.USDPerGPUHour) + " per GPU-hour"
	if c.GPUPriceFrom != "" {
		price += " (" + c.GPUPriceFrom + ")"
	}
	s.Facts = []fact{
		{Label: "GPUs", Value: integer(c.GPUs)},
		{Label: "GPU price", Value: price},
		{Label: "Electricity", Value: usd(c.KWhUSD) + " per kWh"},
		{Label: "Utilisation assumed", Value: percent(c.Utilization), Note: "share of hours serving at the measured rate"},
	}
	if p := c.Preset; p != nil {
		s.Notes = append(s.Notes, fmt.Sprintf("GPU price preset %s: %s from %s, %s per GPU-hour, dated %s (%s).", p.Name, p.GPU, p.Provider, usd(p.USDPerGPUHour), p.Date, p.SourceURL))
	}
	if len(c.Points) == 0 {
		s.Missing = "Not priced: " + strings.Join(c.Missing, "; ") + "."
		return s
	}
	t := table{
		Caption: "Self-hosted cost at each operating point: (GPU-hours + power) ÷ tokens served.",
		Head:    []string{"Operating point", "Concurrency", "Output tok/s", "Power (W)", "$/hour", "$/Mtok output", "$/Mtok blended", "Prompt share"},
		Right:   []bool{false, true, true, true, true, true, true, true},
	}
	cmp := table{
		Head:  []string{"API model", "Provider", "Same model", "Basis", "API $/Mtok", "Self-hosted $/Mtok", "Self-hosting is", "Price date", "Source"},
		Right: []bool{false, false, false, false, true, true, false, false, false},
	}
	// The comparison is made at one point: the SLO operating point (the
	// honest one) when there is one, else the peak.
	at := c.Points[0]
	for _, p := range c.Points {
		t.Rows = append(t.Rows, []string{
			p.Name, integer(p.Concurrency), sig(p.OutputTokPerS), sig(p.PowerW), usd(p.USDPerHour),
			usd(p.USDPerMTokOutput), orDash(p.USDPerMTokBlended, usd), percent(p.PromptShare),
		})
		if p.PowerFrom != "" {
			s.Notes = append(s.Notes, fmt.Sprintf("Power at the %s: %s W, %s.", p.Name, sig(p.PowerW), p.PowerFrom))
		}
		if p.Name == analyze.CostSLO {
			at = p
		}
	}
	cmp.Caption = "At the " + at.Name + fmt.Sprintf(" (concurrency %d), against hosted API prices on the same basis: blended for this workload's prompt/output mix when known. Prices are dated; check them before quoting.", at.Concurrency)
	for _, pc := range at.Comparisons {
		same := "no"
		if pc.SameModel {
			same = "yes"
		}
		cmp.Rows = append(cmp.Rows, []string{
			pc.API.Model, pc.API.Provider, same, pc.Basis, usd(pc.APIUSDPerMTokBlended), usd(pc.SelfUSDPerMTok),
			cheaper(pc.CheaperFactor), pc.API.Date, pc.API.SourceURL,
		})
	}
	s.Tables = append(s.Tables, t)
	if len(cmp.Rows) > 0 {
		s.Tables = append(s.Tables, cmp)
	}
	for _, m := range c.Missing {
		s.Notes = append(s.Notes, "Not priced: "+m+".")
	}
	s.Notes = append(s.Notes, sentences(c.Notes)...)
	return s
}

// cheaper says a cost factor in words: 3.2 → "3.2× cheaper".
func cheaper(f float64) string {
	switch {
	case f <= 0:
		return "–"
	case f >= 1:
		return sig(f) + "× cheaper"
	default:
		return sig(1/f) + "× dearer"
	}
}
