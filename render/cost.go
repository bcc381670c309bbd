package render

import (
	"fmt"
	"strings"

	"github.com/headroom-llm/headroom/analyze"
)

// costSection shows cost per million tokens against hosted API prices.
// Every price carries its date and source, and a secondary source says so.
func costSection(id string, r *analyze.RunAnalysis) section {
	s := section{
		ID:    id,
		Title: "Cost per million tokens",
		Read: "What the box costs per million tokens at peak sustained throughput and at the SLO operating " +
			"point (the honest one), from the hourly price and the power drawn, next to dated hosted API prices.",
	}
	c := r.Sweep.Cost
	if c == nil {
		s.Missing = "No price was given, so no cost was computed. Report again with --gpu-hour-usd PRICE (or --gpu-preset NAME; headroom prices lists them) and --kwh-usd PRICE."
		return s
	}
	s.Sentences = append(s.Sentences, costInputs(c))
	if len(c.Points) == 0 {
		s.Missing = "Not priced: " + strings.Join(c.Missing, "; ") + "."
		return s
	}
	t := table{
		Caption: "Self-hosted cost at each operating point: the hour's price ÷ the tokens served in it.",
		Head:    []string{"Operating point", "Concurrency", "Output tok/s", "Power (W)", "$/hour", "$/Mtok output", "$/Mtok prompt + output", "Prompt share"},
		Right:   []bool{false, true, true, true, true, true, true, true},
	}
	for _, p := range c.Points {
		t.Rows = append(t.Rows, []string{
			p.Name, integer(p.Concurrency), sig(p.OutputTokPerS), orDash(p.PowerW, sig), usd(p.USDPerHour),
			usd(p.USDPerMTokOutput), orDash(p.USDPerMTokBlended, usd), percent(p.PromptShare),
		})
		if p.PowerFrom != "" {
			t.Notes = append(t.Notes, fmt.Sprintf("Power at the %s: %s.", p.Name, p.PowerFrom))
		}
	}
	s.Tables = append(s.Tables, t)
	// The comparison is made at one point: the SLO operating point (the
	// honest one) when there is one, else the peak.
	at := honestPoint(c)
	if len(at.Comparisons) > 0 {
		cmp := table{
			Caption: fmt.Sprintf("At the %s (concurrency %d) against hosted API prices, on the same basis: this workload's mix of prompt and output tokens when known. Prices are dated; check them before quoting.", at.Name, at.Concurrency),
			Head:    []string{"API model", "Provider", "Relation to this model", "API $/Mtok", "Self-hosting is", "Price date", "Source", "Basis", "Self-hosted $/Mtok"},
			Right:   []bool{false, false, false, true, false, false, false, false, true},
			Link:    []bool{false, false, false, false, false, false, true, false, false},
			Fold:    []bool{false, false, false, false, false, false, false, true, true},
		}
		for _, pc := range at.Comparisons {
			rel := "another model"
			switch {
			case pc.SameModel:
				rel = "same model"
			case at.Nearest != nil && at.Nearest.Match == analyze.MatchNearestParams && at.Nearest.API == pc.API:
				rel = fmt.Sprintf("nearest by active parameters (%s×)", sig(at.Nearest.ParamsRatio))
			}
			if at.Nearest != nil && at.Nearest.API == pc.API {
				rel += ", quoted"
			}
			date := pc.API.Date
			if !pc.API.Verified {
				date += " (secondary source)"
			}
			cmp.Rows = append(cmp.Rows, []string{
				pc.API.Model, pc.API.Provider, rel, usd(pc.APIUSDPerMTokBlended), cheaper(pc.CheaperFactor), date, pc.API.SourceURL,
				pc.Basis, usd(pc.SelfUSDPerMTok),
			})
		}
		s.Tables = append(s.Tables, cmp)
	}
	for _, m := range c.Missing {
		s.Notes = append(s.Notes, "Not priced: "+m+".")
	}
	s.Notes = append(s.Notes, sentences(c.Notes)...)
	return s
}

// costInputs says in one sentence what the hour was priced at.
func costInputs(c *analyze.Cost) string {
	var parts []string
	switch {
	case c.Basis == analyze.CostPerHost && c.USDPerHostHour > 0:
		parts = append(parts, fmt.Sprintf("The run used no GPU, so the host is priced by the hour: %s (--host-hour-usd)", usd(c.USDPerHostHour)))
	case c.Basis == analyze.CostPerHost:
		parts = append(parts, "The run used no GPU, so the host is priced by the hour")
	case c.Preset != nil:
		p := c.Preset
		src := "the provider's own page"
		if !p.Verified {
			src = "a secondary source"
		}
		parts = append(parts, fmt.Sprintf("%s × %s per GPU-hour (preset %s: %s on %s, price of %s from %s, %s)",
			integer(c.GPUs), usd(c.USDPerGPUHour), p.Name, p.GPU, p.Provider, p.Date, src, p.SourceURL))
	case c.USDPerGPUHour > 0:
		parts = append(parts, fmt.Sprintf("%s × %s per GPU-hour (--gpu-hour-usd)", integer(c.GPUs), usd(c.USDPerGPUHour)))
	}
	if c.Basis != analyze.CostPerHost {
		if c.KWhUSD > 0 {
			parts = append(parts, "power at "+usd(c.KWhUSD)+" per kWh")
		} else {
			parts = append(parts, "power not priced")
		}
	}
	parts = append(parts, percent(c.Utilization)+" of hours serving at the measured rate")
	return sentence(strings.Join(parts, "; "))
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
