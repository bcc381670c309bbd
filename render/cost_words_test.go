package render

import (
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/analyze"
)

// The analyzer states a cost's gaps, notes and power sources as codes and
// numbers; the report words every one of them, with its numbers, and no
// code reaches the reader.
func TestCostWordsFromCodes(t *testing.T) {
	for code := range costNeedsText {
		if got := costNeeds([]string{code}); len(got) != 1 || got[0] == code {
			t.Errorf("%s: %q", code, got)
		}
	}
	notes := []struct {
		n    analyze.CostNote
		want string
	}{
		{analyze.CostNote{Kind: analyze.CostNoteHostPower}, "host's draw is not measured"},
		{analyze.CostNote{Kind: analyze.CostNoteGPUsFromLog, GPUs: 4}, "4 assumed"},
		{analyze.CostNote{Kind: analyze.CostNoteNoKWh}, "--kwh-usd"},
		{analyze.CostNote{Kind: analyze.CostNoteUtilization, Utilization: 0.5}, "utilization 50%"},
	}
	for _, c := range notes {
		if got := costNoteText(c.n); !strings.Contains(got, c.want) {
			t.Errorf("%+v: %q, want %q", c.n, got, c.want)
		}
	}
	powers := []struct {
		p    analyze.CostPoint
		want string
	}{
		{analyze.CostPoint{PowerFrom: analyze.PowerMeasured, EnergyFrom: analyze.EnergyFromCounter, KWhPerMTokOutput: 0.5}, "measured: NVML energy counter over the level's measured window (0.500 kWh per million output tokens)"},
		{analyze.CostPoint{PowerFrom: analyze.PowerMeasured, EnergyFrom: analyze.EnergyFromPower, KWhPerMTokOutput: 0.5}, "measured: NVML power samples, integrated over"},
		{analyze.CostPoint{PowerFrom: analyze.PowerLimit, PowerPerGPUW: 700}, "power limit 700 W × 2 GPU(s)"},
		{analyze.CostPoint{PowerFrom: analyze.PowerBoard, PowerPerGPUW: 350, PowerMatch: "L40S", PowerSource: "https://example.invalid"}, `board power 350 W × 2 GPU(s) for "L40S" (not measured; source: https://example.invalid)`},
		{analyze.CostPoint{PowerFrom: analyze.PowerNoGPU}, "no GPU"},
		{analyze.CostPoint{PowerFrom: analyze.PowerUnknown}, "power not counted"},
	}
	for _, c := range powers {
		if got := powerFromText(c.p, 2); !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.p.PowerFrom, got, c.want)
		}
	}
	// Page one's cost sentence and card word a missing price.
	r := &analyze.RunAnalysis{Sweep: &analyze.SweepAnalysis{Cost: &analyze.Cost{Missing: []string{analyze.CostNeedsHostPrice}}}}
	rep := &analyze.Report{Runs: []analyze.RunAnalysis{*r}}
	for _, s := range []string{costSentence(rep, r), costFact(rep, r).Value} {
		if strings.Contains(s, analyze.CostNeedsHostPrice) || !strings.Contains(s, "--host-hour-usd") {
			t.Errorf("%q", s)
		}
	}
}
