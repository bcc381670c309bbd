package analyze

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/headroom-llm/headroom/clientbound"
)

// Settings are the analysis settings: every threshold a verdict depends
// on is here, with its default in Default and its meaning in
// docs/methodology.md. The struct is plain data and is written into
// analysis.json with the report.
type Settings struct {
	// Now stamps the report; tests fix it for deterministic output.
	Now time.Time `json:"-"`
	// Percentiles are reported for every latency in addition to the
	// always-reported 50, 90 and 99 (--percentiles).
	Percentiles []float64 `json:"percentiles"`
	// SLO, when set, is what goodput is judged against (--slo).
	SLO *SLO `json:"slo,omitempty"`
	// Model describes the served model for the roofline gap
	// (--model-config); nil means unknown.
	Model *ModelSpec `json:"model,omitempty"`
	// RunModels gives a run (by its directory, as passed to Load) a model
	// of its own, e.g. another quantization of the same shape; runs not
	// listed use Model.
	RunModels map[string]*ModelSpec `json:"run_models,omitempty"`
	// PredictFrom names the sweep run (its directory) that calibrates the
	// predictions of the report's other sweeps that have a model: each is
	// predicted from it and compared with what it measured (Report.Predictions).
	PredictFrom string `json:"predict_from,omitempty"`
	// Cost holds the inputs of the cost-per-million-tokens estimate.
	Cost CostSettings `json:"cost"`

	// Confidence is the nominal coverage of every interval.
	Confidence float64 `json:"confidence"`
	// BootstrapResamples and BootstrapSeed fix the bootstrap, so the same
	// run gives the same intervals.
	BootstrapResamples int    `json:"bootstrap_resamples"`
	BootstrapSeed      uint64 `json:"bootstrap_seed"`
	// ThroughputBlocks is how many equal sub-windows a level's measured
	// window is cut into for the throughput interval of a single run.
	ThroughputBlocks int `json:"throughput_blocks"`

	// TPOTKneeFactor: the TPOT knee is the first level whose p50 TPOT
	// exceeds this multiple of the baseline (the seed's 1.5).
	TPOTKneeFactor float64 `json:"tpot_knee_factor"`
	// PlateauGainPerDoubling: throughput has plateaued after a level when
	// every later level gains less than this per doubling of concurrency.
	PlateauGainPerDoubling float64 `json:"plateau_gain_per_doubling"`
	// MaxErrorFraction: a level with a larger share of failed requests is
	// not "sustained" and cannot hold the peak.
	MaxErrorFraction float64 `json:"max_error_fraction"`

	// Diagnosis thresholds.
	Diagnosis DiagnosisThresholds `json:"diagnosis"`

	// MaxTimelinePoints caps each plotted series; longer ones are averaged
	// into this many buckets.
	MaxTimelinePoints int `json:"max_timeline_points"`
}

// DiagnosisThresholds are the numbers the wall checks compare against.
type DiagnosisThresholds struct {
	// KVUsageFull: KV-cache usage at or above this fraction counts as full.
	KVUsageFull float64 `json:"kv_usage_full_fraction"`
	// KVAdmissionFull: with requests waiting and fewer running than sent,
	// KV-cache usage at or above this fraction means admission stopped for
	// want of cache (engines that queue instead of preempting keep some
	// blocks free, so this is below KVUsageFull).
	KVAdmissionFull float64 `json:"kv_admission_full_fraction"`
	// GPUUtilBusyPct: mean GPU utilization at or above this is "≈ 100%".
	GPUUtilBusyPct float64 `json:"gpu_util_busy_pct"`
	// QueueTTFTGrowth: p50 TTFT grows with the load when the interval of
	// its ratio to the level below clears this factor (TTFT from the
	// intended send time in an open loop).
	QueueTTFTGrowth float64 `json:"queue_ttft_growth"`
	// CapWaitingMean: a queue at the engine's sequence cap has on average at
	// least this many requests waiting through the level's measured window.
	CapWaitingMean float64 `json:"cap_waiting_mean"`
	// SlotWaitS: open loop, a p90 wait for a free client slot at or above
	// this is a queue in front of the engine.
	SlotWaitS float64 `json:"slot_wait_s"`
	// ServerCPUBusy: a CPU-served engine is saturated when its busiest
	// thread wants at least this fraction of a core, or the whole process
	// this fraction of the cores it decodes on (CPU time plus run-queue
	// wait; see cpuThreads).
	ServerCPUBusy float64 `json:"server_cpu_busy_fraction"`
	// ClientCPUBusy: the load generator's CPU demand at or above this
	// fraction of its GOMAXPROCS means the client, not the server, is the
	// limit.
	ClientCPUBusy float64 `json:"client_cpu_busy_fraction"`
	// ClientSendLagS: a send lag above this (open loop; closed loop, see
	// clientbound.LagLimitS) in at least half of a level's client samples means the
	// client could not keep the schedule.
	ClientSendLagS float64 `json:"client_send_lag_s"`
	// MaxEvidenceLines caps quoted log lines per finding.
	MaxEvidenceLines int `json:"max_evidence_lines"`
}

// CostSettings are the inputs of the cost estimate.
type CostSettings struct {
	GPUHourUSD float64 `json:"gpu_hour_usd,omitempty"` // --gpu-hour-usd
	GPUPreset  string  `json:"gpu_preset,omitempty"`   // --gpu-preset
	GPUs       int     `json:"gpus,omitempty"`         // --gpus; 0 = the run's GPU count
	// HostHourUSD prices a run that used no GPU (--host-hour-usd).
	HostHourUSD float64 `json:"host_hour_usd,omitempty"`
	KWhUSD      float64 `json:"kwh_usd,omitempty"` // --kwh-usd
	// Utilization is the fraction of the hours the box serves at the
	// measured throughput (--utilization); 0 means 1.
	Utilization float64 `json:"utilization,omitempty"`
	// Prices holds the hosted-API prices compared against, the GPU presets
	// and board powers; PricesSource says where it came from. Nil: none.
	Prices       *PriceTable `json:"prices,omitempty"`
	PricesSource string      `json:"prices_source,omitempty"`
}

// Default returns the default analysis settings.
func Default() Settings {
	return Settings{
		Now:                    time.Now(),
		Confidence:             0.95,
		BootstrapResamples:     1000,
		BootstrapSeed:          1,
		ThroughputBlocks:       10,
		TPOTKneeFactor:         1.5,
		PlateauGainPerDoubling: 0.10,
		MaxErrorFraction:       0.01,
		Diagnosis: DiagnosisThresholds{
			KVUsageFull:      0.95,
			KVAdmissionFull:  0.8,
			GPUUtilBusyPct:   90,
			QueueTTFTGrowth:  1.5,
			CapWaitingMean:   0.5,
			SlotWaitS:        0.1,
			ServerCPUBusy:    0.9,
			ClientCPUBusy:    clientbound.DefaultCPUFraction,
			ClientSendLagS:   clientbound.DefaultSendLagS,
			MaxEvidenceLines: 5,
		},
		MaxTimelinePoints: 2000,
	}
}

// StandardPercentiles are reported for every latency.
var StandardPercentiles = []float64{50, 90, 99}

// reportedPercentiles is the sorted union of the standard and the user's
// percentiles, and those the SLO bounds (an SLO on p75 is judged on p75).
func (s Settings) reportedPercentiles() []float64 {
	ps := append(slices.Clone(StandardPercentiles), s.Percentiles...)
	if s.SLO != nil {
		for _, b := range s.SLO.Bounds {
			ps = append(ps, b.Percentile)
		}
	}
	slices.Sort(ps)
	return slices.Compact(ps)
}

// ParsePercentiles reads a comma-separated percentile list such as
// "95,99.9" (a leading "p" is allowed: "p95").
func ParsePercentiles(s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimPrefix(strings.ToLower(f), "p"), 64)
		if err != nil || !(v > 0 && v < 100) {
			return nil, fmt.Errorf("percentile %q: want a number between 0 and 100, e.g. 95 or 99.9", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// modelFor is the model of the run in dir.
func (s Settings) modelFor(dir string) *ModelSpec {
	if m, ok := s.RunModels[dir]; ok {
		return m
	}
	return s.Model
}
