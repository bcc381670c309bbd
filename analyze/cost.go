package analyze

import (
	"fmt"
	"math"
	"net/netip"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/headroom-llm/headroom/rundir"
)

// Cost is the cost per million tokens of serving on the measured box.
type Cost struct {
	// Basis is what is rented: CostPerGPU (GPUs × the GPU-hour price) or,
	// for a run that used no GPU, CostPerHost (the host-hour price).
	Basis string `json:"basis"`
	GPUs  int    `json:"gpus"`
	// GPU price per hour and per GPU, and where it came from: "flag"
	// (--gpu-hour-usd) or "preset" (Preset).
	USDPerGPUHour float64       `json:"usd_per_gpu_hour,omitempty"`
	GPUPriceFrom  string        `json:"gpu_price_from,omitempty"`
	Preset        *GPUHourPrice `json:"preset,omitempty"`
	// USDPerHostHour is the host's price per hour (--host-hour-usd), for
	// CostPerHost.
	USDPerHostHour float64 `json:"usd_per_host_hour,omitempty"`
	// ActiveParams is the served model's active parameters per token, from
	// --model-config or the size in its name (ActiveParamsFrom says which);
	// 0 when unknown. It picks the nearest API price when none is for the
	// same model.
	ActiveParams     float64 `json:"active_params,omitempty"`
	ActiveParamsFrom string  `json:"active_params_from,omitempty"`
	KWhUSD           float64 `json:"kwh_usd"`
	// Utilization is the share of hours the box serves at the measured rate.
	Utilization float64     `json:"utilization"`
	Points      []CostPoint `json:"points"`
	// Missing lists what the cost lacks, as CostNeeds* codes.
	Missing []string `json:"missing,omitempty"`
	// Notes qualify the figures; render words them.
	Notes []CostNote `json:"notes,omitempty"`
}

// What a cost lacks (Cost.Missing, and Headline.CostMissing).
const (
	CostNeedsHostPrice = "host_price"     // a CPU-only run without --host-hour-usd
	CostNeedsGPUPrice  = "gpu_price"      // neither --gpu-hour-usd nor --gpu-preset
	CostNeedsPeak      = "sustained_peak" // no sustained level to price
	CostNeedsSLOPoint  = "slo_point"      // no level meets the SLO
	CostNeedsSweep     = "sweep"          // Headline only: no sweep to price
	CostNeedsInputs    = "inputs"         // no cost was computed for the run
	CostNeedsAPIPrice  = "api_price"      // Headline only: no API price for the model or its size
)

// CostNote qualifies a cost: its Kind (a CostNote* code) and the numbers
// it states.
type CostNote struct {
	Kind string `json:"kind"`
	// GPUs: CostNoteGPUsFromLog, the count assumed.
	GPUs int `json:"gpus,omitempty"`
	// Utilization: CostNoteUtilization, the share of hours served.
	Utilization float64 `json:"utilization,omitempty"`
}

// Cost note kinds.
const (
	CostNoteHostPower   = "host_power_not_counted" // a CPU-only run: a host's draw is not measured
	CostNoteGPUsFromLog = "gpus_from_log"          // the manifest lists no GPUs: the log's tensor-parallel size
	CostNoteNoKWh       = "power_not_priced"       // no --kwh-usd: the GPU rental alone
	CostNoteUtilization = "utilization"            // below 1: idle hours spread over the tokens
)

// CostPoint is the cost at one operating point.
type CostPoint struct {
	// Name is CostPeak or CostSLO.
	Name          string  `json:"name"`
	LevelIndex    int     `json:"level_index"`
	Concurrency   int     `json:"concurrency"`
	RateRPS       float64 `json:"rate_rps,omitempty"`
	OutputTokPerS float64 `json:"output_tok_per_s"`
	TotalTokPerS  float64 `json:"total_tok_per_s"`
	// Power drawn by the GPUs and where the figure came from (a Power*
	// code); for a power limit or a board power, the figure per GPU, and
	// for a board power the price table's match and source.
	PowerW       float64 `json:"power_w"`
	PowerFrom    string  `json:"power_from"`
	PowerPerGPUW float64 `json:"power_per_gpu_w,omitempty"`
	PowerMatch   string  `json:"power_match,omitempty"`
	PowerSource  string  `json:"power_source,omitempty"`
	// Measured power only: how the energy was measured (an EnergyFrom*
	// code), the energy per output token at the level, and that in kWh per
	// million output tokens. PowerW is then that energy over the window.
	EnergyFrom       string  `json:"energy_from,omitempty"`
	JPerOutputToken  float64 `json:"j_per_output_token,omitempty"`
	KWhPerMTokOutput float64 `json:"kwh_per_mtok_output,omitempty"`
	USDPerHour       float64 `json:"usd_per_hour"` // GPUs + power
	// USDPerMTokOutput charges the whole hour to output tokens (the seed's
	// number); USDPerMTokBlended spreads it over prompt and output tokens.
	USDPerMTokOutput  float64 `json:"usd_per_mtok_output"`
	USDPerMTokBlended float64 `json:"usd_per_mtok_blended,omitempty"`
	// PromptShare is prompt tokens over all tokens at this level.
	PromptShare float64           `json:"prompt_share"`
	Comparisons []PriceComparison `json:"comparisons,omitempty"`
	// Nearest is the API price to quote against this point: the cheapest
	// for the same model, else the one nearest in active parameters (its
	// Match says which); nil when the table has neither.
	Nearest *PriceComparison `json:"nearest_api,omitempty"`
}

// Where a cost point's power came from (CostPoint.PowerFrom).
const (
	PowerMeasured = "measured"    // the energy over the level's measured window (LevelStats.Energy) over its length
	PowerLimit    = "power_limit" // the manifest's power limit × GPUs (not measured)
	PowerBoard    = "board_power" // the price table's board power × GPUs (not measured)
	PowerNoGPU    = "no_gpu"      // not counted: the run used no GPU
	PowerUnknown  = "unknown"     // no telemetry, no limit, GPU not in the table: not counted
)

// Cost point names.
const (
	CostPeak = "peak sustained throughput"
	CostSLO  = "SLO operating point"
)

// Cost bases.
const (
	CostPerGPU  = "gpu"
	CostPerHost = "host"
)

// How an API price relates to the run's model (PriceComparison.Match).
const (
	MatchSameModel     = "same_model"
	MatchNearestParams = "nearest_active_params"
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
	// Match is set on a point's Nearest: MatchSameModel, or
	// MatchNearestParams (another model, the nearest in active parameters
	// per token: ParamsRatio is the API model's over the run's).
	Match       string  `json:"match,omitempty"`
	ParamsRatio float64 `json:"params_ratio,omitempty"`
}

// costOf computes the cost points of a sweep.
func costOf(run *Run, levels []LevelStats, knees Knees, g *Goodput, set Settings, eng engineFacts) (*Cost, error) {
	cs := set.Cost
	c := &Cost{KWhUSD: cs.KWhUSD, Utilization: cs.Utilization}
	if c.Utilization <= 0 {
		c.Utilization = 1
	}
	c.ActiveParams, c.ActiveParamsFrom = activeParams(run, set)
	c.GPUs = gpuCount(run, set, eng)
	// A run that used no GPU is priced per host hour, unless --gpus says
	// otherwise.
	if c.GPUs == 0 {
		c.Basis = CostPerHost
		if cs.HostHourUSD <= 0 {
			c.Missing = append(c.Missing, CostNeedsHostPrice)
			return c, nil
		}
		c.USDPerHostHour = cs.HostHourUSD
		c.points(run, levels, knees, g, set)
		for _, p := range c.Points {
			if p.PowerFrom != PowerMeasured {
				c.Notes = append(c.Notes, CostNote{Kind: CostNoteHostPower})
				break
			}
		}
		return c, nil
	}
	c.Basis = CostPerGPU
	switch {
	case cs.GPUHourUSD > 0:
		c.USDPerGPUHour, c.GPUPriceFrom = cs.GPUHourUSD, "flag"
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
		c.GPUPriceFrom = "preset"
	default:
		c.Missing = append(c.Missing, CostNeedsGPUPrice)
		return c, nil
	}
	if len(run.Manifest.GPUs) == 0 && cs.GPUs <= 0 {
		c.Notes = append(c.Notes, CostNote{Kind: CostNoteGPUsFromLog, GPUs: c.GPUs})
	}
	if cs.KWhUSD <= 0 {
		c.Notes = append(c.Notes, CostNote{Kind: CostNoteNoKWh})
	}
	return c.points(run, levels, knees, g, set), nil
}

// points prices the peak and the SLO operating point.
func (c *Cost) points(run *Run, levels []LevelStats, knees Knees, g *Goodput, set Settings) *Cost {
	if c.Utilization < 1 {
		c.Notes = append(c.Notes, CostNote{Kind: CostNoteUtilization, Utilization: c.Utilization})
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
		c.Missing = append(c.Missing, CostNeedsPeak)
	}
	if g != nil {
		if l, ok := at(g.OperatingLevel); ok && l.OutputTokPerS > 0 {
			c.Points = append(c.Points, c.point(CostSLO, l, run, set))
		} else {
			c.Missing = append(c.Missing, CostNeedsSLOPoint)
		}
	}
	return c
}

// gpuCount is how many GPUs served the run: --gpus when given, else the
// manifest's GPUs or the server log's tensor-parallel size, whichever is
// more; 0 for a run that used no GPU (ranOnCPU). Cost and the Pareto
// view's per-GPU throughput both divide by it.
func gpuCount(run *Run, set Settings, eng engineFacts) int {
	if set.Cost.GPUs > 0 {
		return set.Cost.GPUs
	}
	if ranOnCPU(run.Manifest, eng) {
		return 0
	}
	return max(len(run.Manifest.GPUs), eng.tp())
}

// ranOnCPU reports whether a run served from the CPU alone: headroom
// recorded it (not imported) against a server on the same machine, which
// had no GPU, and the server's log states no tensor-parallel size. A
// server elsewhere may have GPUs the manifest cannot see.
func ranOnCPU(m *rundir.Manifest, eng engineFacts) bool {
	if len(m.GPUs) > 0 || m.Source != nil || m.Engine == nil || eng.TensorParallel > 0 {
		return false
	}
	u, err := url.Parse(m.Engine.BaseURL)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}

// activeParams is the served model's active parameters per token: from
// its config (--model-config) when given, else the size its name states
// ("Llama-3.1-8B" → 8e9).
func activeParams(run *Run, set Settings) (float64, string) {
	if set.Model != nil {
		if n := set.Model.ActiveParamsPerToken(); n > 0 {
			return n, "model config"
		}
	}
	if e := run.Manifest.Engine; e != nil {
		if n := paramsInName(e.Model); n > 0 {
			return n, "model name"
		}
	}
	return 0, ""
}

// paramsInName reads a size such as "8B", "70b" or "1.5B" from a model
// name; 0 when it has none.
func paramsInName(name string) float64 {
	m := sizeRe.FindStringSubmatch(strings.ToLower(name))
	if m == nil {
		return 0
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0
	}
	return v * 1e9
}

func (c *Cost) point(name string, l LevelStats, run *Run, set Settings) CostPoint {
	p := CostPoint{Name: name, LevelIndex: l.LevelIndex, Concurrency: l.Concurrency, RateRPS: l.RateRPS, OutputTokPerS: l.OutputTokPerS, TotalTokPerS: l.TotalTokPerS}
	if c.Basis == CostPerHost {
		p.PowerFrom = PowerNoGPU
		if e := l.Energy; e != nil && e.CPUEnergyFrom != "" {
			p.measured(e.CPUJ, e.CPUEnergyFrom, e)
		}
		p.USDPerHour = c.USDPerHostHour + p.PowerW/1000*c.KWhUSD
	} else {
		c.power(&p, l, run, set)
		p.USDPerHour = float64(c.GPUs)*c.USDPerGPUHour + p.PowerW/1000*c.KWhUSD
	}
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
		p.Nearest = nearestAPI(p.Comparisons, c.ActiveParams)
	}
	return p
}

// nearestAPI picks the price to quote: the cheapest for the same model;
// else, when the run's active parameters are known, the API model nearest
// to them (by ratio; the cheaper on a tie), provided the table states its
// size. Nil when neither exists.
func nearestAPI(cs []PriceComparison, active float64) *PriceComparison {
	var best *PriceComparison
	for i := range cs {
		if c := cs[i]; c.SameModel && (best == nil || c.APIUSDPerMTokBlended < best.APIUSDPerMTokBlended) {
			best = &c
		}
	}
	if best != nil {
		best.Match = MatchSameModel
		return best
	}
	if active <= 0 {
		return nil
	}
	dist := func(c PriceComparison) float64 {
		return math.Abs(math.Log(c.API.ActiveParamsB * 1e9 / active))
	}
	for i := range cs {
		c := cs[i]
		if c.API.ActiveParamsB <= 0 {
			continue
		}
		if best == nil || dist(c) < dist(*best) || (dist(c) == dist(*best) && c.APIUSDPerMTokBlended < best.APIUSDPerMTokBlended) {
			best = &c
		}
	}
	if best != nil {
		best.Match = MatchNearestParams
		best.ParamsRatio = best.API.ActiveParamsB * 1e9 / active
	}
	return best
}

// power sets the GPUs' draw at a level: measured (the GPUs' energy over
// the measured window) when the run has it, else the manifest's power
// limit, else the price table's board power for the GPU name, times the
// GPU count.
func (c *Cost) power(p *CostPoint, l LevelStats, run *Run, set Settings) {
	if e := l.Energy; e != nil && e.GPUEnergyFrom != "" && e.GPUJ > 0 {
		p.measured(e.GPUJ, e.GPUEnergyFrom, e)
		return
	}
	name := ""
	if gs := run.Manifest.GPUs; len(gs) > 0 {
		name = gs[0].Name
		if gs[0].PowerLimitW > 0 {
			p.PowerW, p.PowerFrom, p.PowerPerGPUW = gs[0].PowerLimitW*float64(c.GPUs), PowerLimit, gs[0].PowerLimitW
			return
		}
	}
	if set.Cost.Prices != nil && name != "" {
		for _, g := range set.Cost.Prices.GPUPower {
			if strings.Contains(strings.ToLower(name), strings.ToLower(g.Match)) {
				p.PowerW, p.PowerFrom, p.PowerPerGPUW = g.Watts*float64(c.GPUs), PowerBoard, g.Watts
				p.PowerMatch, p.PowerSource = g.Match, g.Source
				return
			}
		}
	}
	p.PowerW, p.PowerFrom = 0, PowerUnknown
}

// measured prices a point by the energy j (joules) drawn over the level's
// window, measured as from says.
func (p *CostPoint) measured(j float64, from string, e *LevelEnergy) {
	p.PowerW, p.PowerFrom, p.EnergyFrom = j/e.WindowS, PowerMeasured, from
	if e.OutputTokens > 0 {
		p.JPerOutputToken = j / e.OutputTokens
		p.KWhPerMTokOutput = p.JPerOutputToken * 1e6 / 3.6e6
	}
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

// headlineCost is the cost at the honest operating point (the SLO's when
// given, else the peak) and the API price it is quoted against.
func headlineCost(h *Headline, c *Cost) {
	if c == nil {
		h.CostMissing = []string{CostNeedsSweep}
		return
	}
	if len(c.Points) == 0 {
		h.CostMissing = c.Missing
		return
	}
	p := c.Points[len(c.Points)-1] // the SLO point when there is one
	h.CostPoint, h.USDPerMTokOutput, h.USDPerMTokBlended = p.Name, p.USDPerMTokOutput, p.USDPerMTokBlended
	h.NearestAPI = p.Nearest
	if h.NearestAPI == nil && len(p.Comparisons) > 0 {
		h.CostMissing = []string{CostNeedsAPIPrice}
	}
}
