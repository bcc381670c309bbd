package analyze

import (
	"fmt"
	"regexp"
	"strings"
)

// Cost is the cost per million tokens of serving on the measured box.
type Cost struct {
	GPUs int `json:"gpus"`
	// GPU price per hour and per GPU, and where it came from.
	USDPerGPUHour float64       `json:"usd_per_gpu_hour"`
	GPUPriceFrom  string        `json:"gpu_price_from"`
	Preset        *GPUHourPrice `json:"preset,omitempty"`
	KWhUSD        float64       `json:"kwh_usd"`
	// Utilization is the share of hours the box serves at the measured rate.
	Utilization float64     `json:"utilization"`
	Points      []CostPoint `json:"points"`
	Missing     []string    `json:"missing,omitempty"`
	Notes       []string    `json:"notes,omitempty"`
}

// CostPoint is the cost at one operating point.
type CostPoint struct {
	// Name is CostPeak or CostSLO.
	Name          string  `json:"name"`
	LevelIndex    int     `json:"level_index"`
	Concurrency   int     `json:"concurrency"`
	RateRPS       float64 `json:"rate_rps,omitempty"`
	OutputTokPerS float64 `json:"output_tok_per_s"`
	TotalTokPerS  float64 `json:"total_tok_per_s"`
	// Power drawn by the GPUs and where the figure came from.
	PowerW     float64 `json:"power_w"`
	PowerFrom  string  `json:"power_from"`
	USDPerHour float64 `json:"usd_per_hour"` // GPUs + power
	// USDPerMTokOutput charges the whole hour to output tokens (the seed's
	// number); USDPerMTokBlended spreads it over prompt and output tokens.
	USDPerMTokOutput  float64 `json:"usd_per_mtok_output"`
	USDPerMTokBlended float64 `json:"usd_per_mtok_blended,omitempty"`
	// PromptShare is prompt tokens over all tokens at this level.
	PromptShare float64           `json:"prompt_share"`
	Comparisons []PriceComparison `json:"comparisons,omitempty"`
}

// Cost point names.
const (
	CostPeak = "peak sustained throughput"
	CostSLO  = "SLO operating point"
)

// PriceComparison puts one hosted API price next to a cost point.
type PriceComparison struct {
	API APIPrice `json:"api"`
	// SameModel is true when the API serves the model the run served
	// (family, version and size match).
	SameModel bool `json:"same_model"`
	// APIUSDPerMTokBlended is the API's price for this workload's mix of
	// prompt and output tokens; SelfUSDPerMTok the self-hosted cost on the
	// same basis (blended when prompt tokens are known, else output only).
	Basis                string  `json:"basis"` // "blended" or "output"
	APIUSDPerMTokBlended float64 `json:"api_usd_per_mtok"`
	SelfUSDPerMTok       float64 `json:"self_usd_per_mtok"`
	// CheaperFactor is API cost over self-hosted cost: above 1 self-hosting
	// is that many times cheaper, below 1 dearer.
	CheaperFactor float64 `json:"self_hosting_cheaper_factor"`
	Sentence      string  `json:"sentence"`
}

// costOf computes the cost points of a sweep.
func costOf(run *Run, levels []LevelStats, knees Knees, g *Goodput, set Settings, eng engineFacts) (*Cost, error) {
	cs := set.Cost
	c := &Cost{KWhUSD: cs.KWhUSD, Utilization: cs.Utilization}
	if c.Utilization <= 0 {
		c.Utilization = 1
	}
	c.GPUs = cs.GPUs
	if c.GPUs <= 0 {
		c.GPUs = max(len(run.Manifest.GPUs), eng.tp())
		if len(run.Manifest.GPUs) == 0 {
			c.Notes = append(c.Notes, fmt.Sprintf("the run does not list its GPUs: %d assumed (give --gpus)", c.GPUs))
		}
	}
	switch {
	case cs.GPUHourUSD > 0:
		c.USDPerGPUHour, c.GPUPriceFrom = cs.GPUHourUSD, "--gpu-hour-usd"
	case cs.GPUPreset != "":
		if cs.Prices == nil {
			return nil, fmt.Errorf("--gpu-preset %q: no price table loaded", cs.GPUPreset)
		}
		p, err := cs.Prices.GPUPreset(cs.GPUPreset)
		if err != nil {
			return nil, err
		}
		c.Preset = &p
		c.USDPerGPUHour = p.USDPerGPUHour
		c.GPUPriceFrom = fmt.Sprintf("preset %s: %s %s, $%.4g per GPU-hour as of %s (%s)", p.Name, p.Provider, p.GPU, p.USDPerGPUHour, p.Date, p.SourceURL)
		if !p.Verified {
			c.Notes = append(c.Notes, "the GPU preset's price comes from a secondary source; check it before quoting")
		}
	default:
		c.Missing = append(c.Missing, "GPU price: give --gpu-hour-usd or --gpu-preset")
		return c, nil
	}
	if cs.KWhUSD <= 0 {
		c.Notes = append(c.Notes, "power is not priced (give --kwh-usd); the cost is the GPU rental alone")
	}
	if c.Utilization < 1 {
		c.Notes = append(c.Notes, fmt.Sprintf("utilization %.0f%%: idle hours are paid for and spread over the tokens served", 100*c.Utilization))
	}
	at := func(levelIndex int) (LevelStats, bool) {
		if p := levelPos(levels, levelIndex); p >= 0 {
			return levels[p], true
		}
		return LevelStats{}, false
	}
	if l, ok := at(knees.PeakLevel); ok && l.OutputTokPerS > 0 {
		c.Points = append(c.Points, c.point(CostPeak, l, run, set))
	} else {
		c.Missing = append(c.Missing, "a sustained peak throughput")
	}
	if g != nil {
		if l, ok := at(g.OperatingLevel); ok && l.OutputTokPerS > 0 {
			c.Points = append(c.Points, c.point(CostSLO, l, run, set))
		} else {
			c.Missing = append(c.Missing, "an SLO operating point (no level meets the SLO)")
		}
	}
	return c, nil
}

func (c *Cost) point(name string, l LevelStats, run *Run, set Settings) CostPoint {
	p := CostPoint{Name: name, LevelIndex: l.LevelIndex, Concurrency: l.Concurrency, RateRPS: l.RateRPS, OutputTokPerS: l.OutputTokPerS, TotalTokPerS: l.TotalTokPerS}
	p.PowerW, p.PowerFrom = c.power(l, run, set)
	p.USDPerHour = float64(c.GPUs)*c.USDPerGPUHour + p.PowerW/1000*c.KWhUSD
	perHour := 3600 * c.Utilization / 1e6 // Mtok per hour per tok/s
	p.USDPerMTokOutput = p.USDPerHour / (l.OutputTokPerS * perHour)
	if l.TotalTokPerS > 0 {
		p.USDPerMTokBlended = p.USDPerHour / (l.TotalTokPerS * perHour)
		p.PromptShare = (l.TotalTokPerS - l.OutputTokPerS) / l.TotalTokPerS
	}
	if set.Cost.Prices != nil {
		model := ""
		if run.Manifest.Engine != nil {
			model = run.Manifest.Engine.Model
		}
		for _, api := range set.Cost.Prices.APIs {
			p.Comparisons = append(p.Comparisons, compare(api, p, model))
		}
	}
	return p
}

// power is the GPUs' draw at a level: measured (gpu_telemetry) when the
// run has it, else the manifest's power limit, else the price table's
// board power for the GPU name, times the GPU count.
func (c *Cost) power(l LevelStats, run *Run, set Settings) (float64, string) {
	if l.Server.GPUKnown && l.Server.GPUPowerMeanW > 0 {
		return l.Server.GPUPowerMeanW, "measured (gpu_telemetry, mean over the level's measured window)"
	}
	name := ""
	if gs := run.Manifest.GPUs; len(gs) > 0 {
		name = gs[0].Name
		if gs[0].PowerLimitW > 0 {
			return gs[0].PowerLimitW * float64(c.GPUs), fmt.Sprintf("power limit %.0f W × %d GPU(s) from the manifest (not measured)", gs[0].PowerLimitW, c.GPUs)
		}
	}
	if set.Cost.Prices != nil && name != "" {
		for _, g := range set.Cost.Prices.GPUPower {
			if strings.Contains(strings.ToLower(name), strings.ToLower(g.Match)) {
				return g.Watts * float64(c.GPUs), fmt.Sprintf("board power %.0f W × %d GPU(s) for %q (not measured; source: %s)", g.Watts, c.GPUs, g.Match, g.Source)
			}
		}
	}
	return 0, "unknown (no telemetry, no power limit, GPU not in the power table): power not counted"
}

func compare(api APIPrice, p CostPoint, model string) PriceComparison {
	pc := PriceComparison{API: api, SameModel: sameModel(model, api.ModelID+" "+api.Model)}
	if p.USDPerMTokBlended > 0 {
		pc.Basis = "blended"
		pc.APIUSDPerMTokBlended = p.PromptShare*api.InputUSDPerMTok + (1-p.PromptShare)*api.OutputUSDPerMTok
		pc.SelfUSDPerMTok = p.USDPerMTokBlended
	} else {
		pc.Basis = "output"
		pc.APIUSDPerMTokBlended = api.OutputUSDPerMTok
		pc.SelfUSDPerMTok = p.USDPerMTokOutput
	}
	pc.CheaperFactor = pc.APIUSDPerMTokBlended / pc.SelfUSDPerMTok
	what := fmt.Sprintf("%s %s", api.Provider, api.Model)
	basis := fmt.Sprintf("at this workload's mix (%.0f%% prompt tokens)", 100*p.PromptShare)
	if pc.Basis == "output" {
		basis = "per output token"
	}
	if pc.CheaperFactor >= 1 {
		pc.Sentence = fmt.Sprintf("Self-hosting at the %s costs $%.3g per million tokens, %.1f× cheaper than %s ($%.3g) %s.", p.Name, pc.SelfUSDPerMTok, pc.CheaperFactor, what, pc.APIUSDPerMTokBlended, basis)
	} else {
		pc.Sentence = fmt.Sprintf("Self-hosting at the %s costs $%.3g per million tokens, %.1f× dearer than %s ($%.3g) %s.", p.Name, pc.SelfUSDPerMTok, 1/pc.CheaperFactor, what, pc.APIUSDPerMTokBlended, basis)
	}
	if !pc.SameModel {
		pc.Sentence += " Not the same model: for scale only."
	}
	if !api.Verified {
		pc.Sentence += " (API price from a secondary source.)"
	}
	return pc
}

var (
	familyRe = regexp.MustCompile(`(llama|qwen|mistral|mixtral|gemma|phi|deepseek|gpt-oss|gpt-4o|falcon)[-_ ]?(\d+(?:\.\d+)?)?`)
	sizeRe   = regexp.MustCompile(`(?:^|[^a-z0-9.])(\d+(?:\.\d+)?)b(?:[^a-z0-9]|$)`)
)

// sameModel compares model family, version and size ("llama 3.1 8b").
func sameModel(a, b string) bool {
	sa, oka := modelSignature(a)
	sb, okb := modelSignature(b)
	return oka && okb && sa == sb
}

func modelSignature(s string) (string, bool) {
	s = strings.ToLower(s)
	var f []string
	// "meta-llama/Llama-3.1-8B": the family with a version wins over the
	// organisation's name.
	for _, m := range familyRe.FindAllStringSubmatch(s, -1) {
		if f == nil || (f[2] == "" && m[2] != "") {
			f = m
		}
	}
	z := sizeRe.FindStringSubmatch(s)
	if f == nil || z == nil {
		return "", false
	}
	return f[1] + f[2] + "/" + z[1], true
}

// headlineCost picks the honest operating point (the SLO's when given) and
// the cheapest same-model API price.
func headlineCost(h *Headline, c *Cost) {
	if c == nil {
		h.CostMissing = "no sweep"
		return
	}
	if len(c.Points) == 0 {
		h.CostMissing = strings.Join(c.Missing, "; ")
		return
	}
	p := c.Points[len(c.Points)-1] // the SLO point when there is one
	h.CostPoint, h.USDPerMTokOutput, h.USDPerMTokBlended = p.Name, p.USDPerMTokOutput, p.USDPerMTokBlended
	for i := range p.Comparisons {
		pc := p.Comparisons[i]
		if pc.SameModel && (h.NearestAPI == nil || pc.APIUSDPerMTokBlended < h.NearestAPI.APIUSDPerMTokBlended) {
			h.NearestAPI = &pc
		}
	}
	if h.NearestAPI == nil && len(p.Comparisons) > 0 {
		h.CostMissing = "no API price for this model in the price table (add one with --prices)"
	}
}
