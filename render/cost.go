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
		s.Missing = "Not priced: " + strings.Join(costNeeds(c.Missing), "; ") + "."
		return s
	}
	t := table{
		Caption: "Self-hosted cost at each operating point: the hour's price ÷ the tokens served in it.",
		Head:    []string{"Operating point", "Concurrency", "Output tok/s", "Power (W)", "Energy (J/output token)", "$/hour", "$/Mtok output", "$/Mtok prompt + output", "Prompt share"},
		Right:   []bool{false, true, true, true, true, true, true, true, true},
	}
	for _, p := range c.Points {
		t.Rows = append(t.Rows, []string{
			p.Name, integer(p.Concurrency), sig(p.OutputTokPerS), orDash(p.PowerW, sig), orDash(p.JPerOutputToken, sig), usd(p.USDPerHour),
			usd(p.USDPerMTokOutput), orDash(p.USDPerMTokBlended, usd), percent(p.PromptShare),
		})
		if p.PowerFrom != "" {
			t.Notes = append(t.Notes, fmt.Sprintf("Power at the %s: %s.", p.Name, powerFromText(p, c.GPUs)))
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
	for _, m := range costNeeds(c.Missing) {
		s.Notes = append(s.Notes, "Not priced: "+m+".")
	}
	for _, n := range c.Notes {
		s.Notes = append(s.Notes, sentence(costNoteText(n)))
	}
	return s
}

// costNeedsText words what a cost lacks (analyze.CostNeeds* codes).
var costNeedsText = map[string]string{
	analyze.CostNeedsHostPrice: "host price: this run used no GPU, so it is priced per host hour; give --host-hour-usd (or --gpus N and a GPU price, if it did use GPUs)",
	analyze.CostNeedsGPUPrice:  "GPU price: give --gpu-hour-usd or --gpu-preset (headroom prices lists the presets)",
	analyze.CostNeedsPeak:      "a sustained peak throughput",
	analyze.CostNeedsSLOPoint:  "an SLO operating point (no level meets the SLO)",
	analyze.CostNeedsSweep:     "no sweep",
	analyze.CostNeedsAPIPrice:  "no API price for this model or its size in the price table (add one with --prices)",
	analyze.CostNeedsInputs:    "no cost inputs",
}

func costNeeds(codes []string) []string {
	var out []string
	for _, c := range codes {
		out = append(out, nameOr(costNeedsText, c))
	}
	return out
}

// costNoteText words a note on a cost.
func costNoteText(n analyze.CostNote) string {
	switch n.Kind {
	case analyze.CostNoteHostPower:
		return "power is not counted: the run used no GPU and a host's draw is not measured"
	case analyze.CostNoteGPUsFromLog:
		return fmt.Sprintf("the run does not list its GPUs: %d assumed from the server log's tensor-parallel size (give --gpus)", n.GPUs)
	case analyze.CostNoteNoKWh:
		return "power is not priced (give --kwh-usd); the cost is the GPU rental alone"
	case analyze.CostNoteUtilization:
		return fmt.Sprintf("utilization %.0f%%: idle hours are paid for and spread over the tokens served", 100*n.Utilization)
	}
	return n.Kind
}

// powerFromText says where a cost point's power figure came from.
func powerFromText(p analyze.CostPoint, gpus int) string {
	switch p.PowerFrom {
	case analyze.PowerMeasured:
		return fmt.Sprintf("measured: %s over the level's measured window (%s kWh per million output tokens)",
			nameOr(energyFromText, p.EnergyFrom), sig(p.KWhPerMTokOutput))
	case analyze.PowerLimit:
		return fmt.Sprintf("power limit %.0f W × %d GPU(s) from the manifest (not measured)", p.PowerPerGPUW, gpus)
	case analyze.PowerBoard:
		return fmt.Sprintf("board power %.0f W × %d GPU(s) for %q (not measured; source: %s)", p.PowerPerGPUW, gpus, p.PowerMatch, p.PowerSource)
	case analyze.PowerNoGPU:
		return "not counted (no GPU)"
	case analyze.PowerUnknown:
		return "unknown (no telemetry, no power limit, GPU not in the power table): power not counted"
	}
	return p.PowerFrom
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
