package analyze

import (
	"time"

	"github.com/headroom-llm/headroom/rundir"
	"github.com/headroom-llm/headroom/stats"
)

// Report is the analyzer's output and the renderer's only input. It is
// also written as analysis.json, so every field is plain data; units are
// in the field names (_s seconds, _per_s per second, _usd, _fraction 0..1).
type Report struct {
	Title           string    `json:"title"`
	GeneratedAt     time.Time `json:"generated_at"`
	HeadroomVersion string    `json:"headroom_version"`
	// Settings are the analysis settings used, thresholds included.
	Settings Settings `json:"settings"`
	// PercentileMethod names the one percentile definition used throughout.
	PercentileMethod string `json:"percentile_method"`
	// Headline is what gets forwarded: from the first sweep run.
	Headline *Headline     `json:"headline,omitempty"`
	Runs     []RunAnalysis `json:"runs"`
	// Repeats groups sweep runs of the same configuration given together,
	// with intervals across the runs.
	Repeats []RepeatGroup `json:"repeats,omitempty"`
	// Predictions are the report's other sweeps predicted from the one
	// named by Settings.PredictFrom, against what each measured.
	Predictions []Prediction `json:"predictions,omitempty"`
	Notes       []Note       `json:"notes,omitempty"`
}

// RunAnalysis is the analysis of one run directory.
type RunAnalysis struct {
	Dir      string           `json:"dir"`
	Manifest *rundir.Manifest `json:"manifest"`
	// Context is the run's context as keyed values, in display order;
	// Missing names (by key) context a reader would need that the run
	// lacks.
	Context  []ContextItem  `json:"context"`
	Missing  []string       `json:"missing_context,omitempty"`
	Roofline *Roofline      `json:"roofline,omitempty"`
	Sweep    *SweepAnalysis `json:"sweep,omitempty"`
	// LogOnly is set for a bare server log or /metrics dump given in place
	// of a run: what it holds and the wall it alone supports.
	LogOnly *LogInspection `json:"log_only,omitempty"`
	// Files lists the run's data files, for the raw-data section.
	Files []string `json:"files,omitempty"`
	// Warnings are the manifest's, as the collector wrote them; Notes the
	// analyzer's.
	Warnings []string `json:"warnings,omitempty"`
	Notes    []Note   `json:"notes,omitempty"`
}

// ContextItem is one fact about the run, as data: Key names it (a Ctx*
// value, or CtxEngineConfig + "." + the manifest's key), and the value is
// in whichever fields fit it: a recorded string, a list, numbers, a
// distribution. The report words it.
type ContextItem struct {
	Key     string       `json:"key"`
	Value   string       `json:"value,omitempty"`
	Values  []string     `json:"values,omitempty"`
	Numbers []float64    `json:"numbers,omitempty"`
	Dist    *rundir.Dist `json:"dist,omitempty"`
	// Source names where the value came from when it is not the manifest,
	// e.g. "server.log" for a fact the server printed at start-up.
	Source string `json:"source,omitempty"`
}

// Headline holds what the report leads with: the first sweep run's peak,
// its wall and the load to run at. Zero values mean "not available"; the
// matching *Missing field says why.
type Headline struct {
	Run string `json:"run"` // the run's label or directory
	// Peak sustained output throughput and the load reaching it.
	PeakOutputTokPerS float64 `json:"peak_output_tok_per_s"`
	PeakConcurrency   int     `json:"peak_concurrency"`
	PeakRateRPS       float64 `json:"peak_rate_rps,omitempty"`
	Axis              string  `json:"axis"`
	// Wall is Primary.Kind; Primary and Secondary are the diagnosis's
	// walls, Strongest the primary wall's strongest evidence (nil: none).
	Wall       string     `json:"wall"`
	Primary    Wall       `json:"primary"`
	Secondary  []Wall     `json:"secondary,omitempty"`
	Strongest  *Evidence  `json:"strongest,omitempty"`
	Confidence Confidence `json:"confidence"`
	// Operating is the load to run at; RecommendedConcurrency and
	// RecommendedRateRPS repeat Operating.At (0: none).
	Operating              OperatingPoint `json:"operating"`
	RecommendedConcurrency int            `json:"recommended_concurrency"`
	RecommendedRateRPS     float64        `json:"recommended_rate_rps,omitempty"`
	RidgeFLOPPerByte       float64        `json:"ridge_flop_per_byte,omitempty"`
	// Cost at the honest operating point (the SLO's when given, else the
	// peak) and the nearest hosted API price.
	CostPoint         string           `json:"cost_point,omitempty"`
	USDPerMTokOutput  float64          `json:"usd_per_mtok_output,omitempty"`
	USDPerMTokBlended float64          `json:"usd_per_mtok_blended,omitempty"`
	NearestAPI        *PriceComparison `json:"nearest_api,omitempty"`
	CostMissing       []string         `json:"cost_missing,omitempty"` // CostNeeds* codes
}

// SweepAnalysis is everything derived from one sweep: per-level
// statistics, knees, goodput, the roofline gap, the diagnosis and cost.
type SweepAnalysis struct {
	// Source is SourceRequests (per-request data) or SourceLevelStats
	// (imported per-level statistics, see Notes).
	Source string `json:"source"`
	Mode   string `json:"mode"` // closed or open loop
	// TokenCount says how output tokens were counted.
	TokenCount TokenCounting `json:"token_count"`
	Levels     []LevelStats  `json:"levels"`
	Knees      Knees         `json:"knees"`
	// Goodput is the sweep judged against the user's SLO, or the default
	// one (Goodput.SLOSource); Operating is the load to run at.
	Goodput   *Goodput        `json:"goodput,omitempty"`
	Operating OperatingPoint  `json:"operating"`
	Decode    *DecodeRoofline `json:"decode_roofline,omitempty"`
	Diagnosis Diagnosis       `json:"diagnosis"`
	Cost      *Cost           `json:"cost,omitempty"`
	// Pareto is output throughput per GPU against throughput per user at
	// each level, with the frontier marked; nil without a level to place.
	Pareto   *Pareto   `json:"pareto,omitempty"`
	Timeline *Timeline `json:"timeline,omitempty"`
	// Replicas is each server of a sweep spread over several (Balance
	// says how), analyzed alone; the rest of the analysis is of the set.
	Replicas []ReplicaAnalysis `json:"replicas,omitempty"`
	Balance  string            `json:"balance,omitempty"`
	// Sessions is the turn-by-turn view of a sweep of multi-turn
	// sessions; nil for other sweeps.
	Sessions *SessionsAnalysis `json:"sessions,omitempty"`
	// Notes are caveats: analyses that could not be made, inputs that were
	// incomplete.
	Notes []Note `json:"notes,omitempty"`
}

// Sweep data sources.
const (
	SourceRequests   = "requests"
	SourceLevelStats = "level_stats"
)

// LevelStats is one load level. Latencies exclude warm-up requests and
// failed requests; counts and errors exclude warm-up requests only.
type LevelStats struct {
	LevelIndex  int     `json:"level_index"`
	Concurrency int     `json:"concurrency"`
	RateRPS     float64 `json:"rate_rps,omitempty"` // open loop
	StartNS     int64   `json:"start_ns,omitempty"`
	WarmupEndNS int64   `json:"warmup_end_ns,omitempty"`
	EndNS       int64   `json:"end_ns,omitempty"`
	// WindowS is the measured window (warm-up end to level end) the
	// throughputs are computed over; 0 when unknown.
	WindowS  float64 `json:"window_s"`
	Complete bool    `json:"complete"`
	// Load is the level's place on the load axis, what levels of
	// different runs are matched by.
	Load LoadKey `json:"load"`

	Requests       int            `json:"requests"` // measured, any status
	OK             int            `json:"ok"`
	Errors         int            `json:"errors"`
	ErrorsByClass  map[string]int `json:"errors_by_class,omitempty"`
	ErrorFraction  float64        `json:"error_fraction"`
	WarmupExcluded int            `json:"warmup_excluded"`
	// Canceled requests were stopped by the load tool itself (interrupted,
	// cut at the level's end, or cancelled on purpose): counted neither in
	// Requests nor as errors.
	Canceled int `json:"canceled,omitempty"`
	// NotSent requests never reached the server: the server had closed the
	// kept-alive connection they went out on (closedIdleConn). A client
	// that pools connections sends them again; they are counted neither in
	// Requests nor as errors.
	NotSent int `json:"not_sent,omitempty"`
	// Sustained is false for a level that did not complete or whose share
	// of failed requests is above Settings.MaxErrorFraction: its throughput
	// is not what the server sustains, and the report says so beside it.
	Sustained bool `json:"sustained"`

	TTFT *Latency `json:"ttft,omitempty"`
	TPOT *Latency `json:"tpot,omitempty"`
	ITL  *Latency `json:"itl,omitempty"`
	E2E  *Latency `json:"e2e,omitempty"`
	// PromptIntakeShare is the share of the time between tokens, over the
	// level's answers, spent in gaps during which another request of the
	// level got its first token: steps (or a step beside them) that took
	// in a new prompt, which hold every running answer up. Nil without
	// per-token times.
	PromptIntakeShare *float64 `json:"prompt_intake_share,omitempty"`
	// Open loop only: TTFT and E2E measured from each request's intended
	// send time, so a wait for a free slot under the concurrency cap counts
	// (coordinated omission made visible), and that wait itself.
	TTFTFromIntended *Latency `json:"ttft_from_intended,omitempty"`
	E2EFromIntended  *Latency `json:"e2e_from_intended,omitempty"`
	SendWait         *Latency `json:"send_wait,omitempty"`

	RequestsPerS  float64 `json:"requests_per_s"`
	OutputTokPerS float64 `json:"output_tok_per_s"`
	TotalTokPerS  float64 `json:"total_tok_per_s"`
	// Token totals of the measured successful requests, and their means.
	OutputTokens     int64   `json:"output_tokens"`
	PromptTokens     int64   `json:"prompt_tokens"`
	MeanOutputTokens float64 `json:"mean_output_tokens"`
	MeanPromptTokens float64 `json:"mean_prompt_tokens"`
	// TTFTP99OverP50 is p99/p50 TTFT, the queueing signal.
	TTFTP99OverP50 float64 `json:"ttft_p99_over_p50"`

	Confidence LevelConfidence `json:"confidence"`
	Server     LevelServer     `json:"server"`
	Client     LevelClient     `json:"client"`
	// Energy is what the GPUs (and, where readable, the CPU) drew over the
	// measured window, per output token; nil without telemetry.
	Energy *LevelEnergy `json:"energy,omitempty"`

	// Missing names statistics the source does not have (Lack* values).
	Missing []string `json:"missing,omitempty"`
	Notes   []Note   `json:"notes,omitempty"`
}

// Latency is the distribution of one latency over a level's requests.
type Latency struct {
	N    int     `json:"n"`
	P50S float64 `json:"p50_s"`
	P90S float64 `json:"p90_s"`
	P99S float64 `json:"p99_s"`
	MaxS float64 `json:"max_s"`
	// Percentiles holds every reported percentile in ascending order: 50,
	// 90, 99 and the user's; a percentile the source lacks is absent here
	// and named in Missing (its P..S field is then 0).
	Percentiles []Quantile `json:"percentiles"`
	Missing     []string   `json:"missing,omitempty"`
}

// Quantile is one percentile of a latency.
type Quantile struct {
	Percentile float64 `json:"percentile"`
	ValueS     float64 `json:"value_s"`
	// Reliable is false when n is below stats.MinSamples(p): the value is
	// then the sample maximum, not a tail estimate.
	Reliable bool `json:"reliable"`
}

// LevelConfidence holds intervals for a level's medians and throughput;
// nil when there were too few values.
type LevelConfidence struct {
	TTFTP50S      *stats.Interval `json:"ttft_p50_s,omitempty"`
	TPOTP50S      *stats.Interval `json:"tpot_p50_s,omitempty"`
	E2EP50S       *stats.Interval `json:"e2e_p50_s,omitempty"`
	OutputTokPerS *stats.Interval `json:"output_tok_per_s,omitempty"`
}

// LevelServer is what the server's metrics, log and the GPU said during a
// level (its whole window, warm-up included). Each *Known flag says whether
// the run recorded it.
type LevelServer struct {
	KVUsageMaxFraction float64 `json:"kv_usage_max_fraction"`
	KVUsageKnown       bool    `json:"kv_usage_known"`
	KVUsageSource      string  `json:"kv_usage_source,omitempty"`
	WaitingMax         float64 `json:"waiting_max"`
	// WaitingMean is the mean over the measured window's samples, for
	// Little's law.
	WaitingMean       float64 `json:"waiting_mean"`
	WaitingKnown      bool    `json:"waiting_known"`
	RunningMax        float64 `json:"running_max"`
	RunningKnown      bool    `json:"running_known"`
	Preemptions       int     `json:"preemptions"`
	PreemptionsKnown  bool    `json:"preemptions_known"`
	PreemptionsSource string  `json:"preemptions_source,omitempty"`
	// Prefix cache counters over the level's window: prompt tokens looked
	// up and found (vLLM V1's prefix_cache_queries/hits and their kin),
	// from PrefixSource.
	PrefixQueryTokens float64 `json:"prefix_query_tokens,omitempty"`
	PrefixHitTokens   float64 `json:"prefix_hit_tokens,omitempty"`
	PrefixKnown       bool    `json:"prefix_known"`
	PrefixSource      string  `json:"prefix_source,omitempty"`
	LogLines          int     `json:"log_lines"`
	LogErrors         int     `json:"log_errors"`
	GPUUtilMeanPct    float64 `json:"gpu_util_mean_pct"`
	GPUPowerMeanW     float64 `json:"gpu_power_mean_w"` // summed over devices
	GPUKnown          bool    `json:"gpu_known"`
	GPUThrottle       string  `json:"gpu_throttle,omitempty"`
	// The server process's CPU over the measured window (server_cpu):
	// demand is CPU time plus time runnable but waiting for a core, over
	// wall time, so a thread that never sleeps reads 1 however busy the
	// host is. CPUBusiestThread names the busiest thread (its demand in
	// CPUThreadDemand, a fraction of one core); CPUProcessDemand is the
	// whole process in cores.
	CPUKnown         bool    `json:"cpu_known"`
	CPUThreadDemand  float64 `json:"cpu_thread_demand"`
	CPUBusiestThread string  `json:"cpu_busiest_thread,omitempty"`
	CPUProcessDemand float64 `json:"cpu_process_demand_cores"`
	CPUHostCores     int     `json:"cpu_host_cores,omitempty"`
}

// LevelClient is the load generator's self-check during a level.
type LevelClient struct {
	Known bool `json:"known"`
	// CPUBusyFraction is client CPU time over wall time over GOMAXPROCS.
	CPUBusyFraction float64 `json:"cpu_busy_fraction"`
	CPUs            int     `json:"cpus"`
	// CPUDemand adds the time the client's threads waited for a core
	// (cpu_wait_s) to its CPU time; equal to CPUBusyFraction for runs
	// recorded before that column existed (CPUDemandKnown false).
	CPUDemand      float64 `json:"cpu_demand_fraction"`
	CPUDemandKnown bool    `json:"cpu_demand_known"`
	SendLagMaxS    float64 `json:"send_lag_max_s"`
	// Samples is the level's client samples; LagSamples those whose send
	// lag exceeded the limit (LagLimitS). CPUBound and Lagging are the
	// client-bound rule's verdicts (package clientbound).
	Samples        int     `json:"samples"`
	LagSamples     int     `json:"lag_samples"`
	LagLimitS      float64 `json:"lag_limit_s"`
	CPUBound       bool    `json:"cpu_bound"`
	Lagging        bool    `json:"lagging"`
	OpenStreamsMax int64   `json:"open_streams_max"`
}

// Knees are where the curves bend. Levels are named by their LevelIndex
// (−1: none) and, for plotting, by concurrency (closed loop) or arrival
// rate (open loop, Axis "rate_rps"; the concurrency fields then hold the
// levels' concurrency caps).
type Knees struct {
	Axis string `json:"axis"` // AxisConcurrency or AxisRate
	// Level indexes of the points below; -1 when there is none.
	BaselineLevel int `json:"baseline_level"`
	TPOTKneeLevel int `json:"tpot_knee_level"`
	FlatToLevel   int `json:"flat_to_level"`
	PlateauLevel  int `json:"plateau_level"`
	PeakLevel     int `json:"peak_level"`
	// Open loop: the arrival rates of those levels.
	TPOTKneeRateRPS float64 `json:"tpot_knee_rate_rps,omitempty"`
	FlatToRateRPS   float64 `json:"flat_to_rate_rps,omitempty"`
	PlateauRateRPS  float64 `json:"plateau_rate_rps,omitempty"`
	PeakRateRPS     float64 `json:"peak_rate_rps,omitempty"`

	// BaselineConcurrency is the level TPOT is compared with: 1 when the
	// sweep measured it, else its lowest level (BaselineNotC1; in an open
	// loop the lowest rate, BaselineIsLowestRate).
	BaselineConcurrency  int     `json:"baseline_concurrency"`
	BaselineTPOTP50S     float64 `json:"baseline_tpot_p50_s"`
	BaselineNotC1        bool    `json:"baseline_not_c1,omitempty"`
	BaselineIsLowestRate bool    `json:"baseline_is_lowest_rate,omitempty"`
	TPOTKneeFactor       float64 `json:"tpot_knee_factor"`
	// TPOTKneeConcurrency is the first level whose p50 TPOT over the
	// baseline's clears TPOTKneeFactor with its whole interval
	// (TPOTKneeRatio, TPOTKneeRatioLow..High); 0 when never. Intervals is
	// false when per-request data was missing and the point estimates
	// decided.
	TPOTKneeConcurrency int     `json:"tpot_knee_concurrency"`
	TPOTKneeRatio       float64 `json:"tpot_knee_ratio,omitempty"`
	TPOTKneeRatioLow    float64 `json:"tpot_knee_ratio_low,omitempty"`
	TPOTKneeRatioHigh   float64 `json:"tpot_knee_ratio_high,omitempty"`
	Intervals           bool    `json:"intervals"`
	// The flat region: levels from the baseline up to FlatToConcurrency
	// keep p50 TPOT within the factor ("extra users are nearly free").
	FlatFromConcurrency int     `json:"flat_from_concurrency"`
	FlatToConcurrency   int     `json:"flat_to_concurrency"`
	FlatTPOTMaxRatio    float64 `json:"flat_tpot_max_ratio"`
	// PlateauConcurrency is the level after which output throughput gains
	// less than PlateauGainPerDoubling per doubling of the load; 0 none.
	// Plateau says what the curve did (a Plateau* value).
	PlateauConcurrency     int              `json:"plateau_concurrency"`
	PlateauGainPerDoubling float64          `json:"plateau_gain_per_doubling"`
	Plateau                string           `json:"plateau"`
	Steps                  []ThroughputStep `json:"steps"`
	// Open loop: the first level whose achieved rate fell significantly
	// below the offered rate (-1: none).
	SaturatedLevel   int     `json:"saturated_level"`
	SaturatedRateRPS float64 `json:"saturated_rate_rps,omitempty"`
	// Peak output throughput over sustained levels (complete, error
	// fraction within the limit) and the load reaching it;
	// UnsustainedPeakLevel is a higher level that was not sustained (-1).
	PeakOutputTokPerS    float64 `json:"peak_output_tok_per_s"`
	PeakConcurrency      int     `json:"peak_concurrency"`
	UnsustainedPeakLevel int     `json:"unsustained_peak_level"`
}

// ThroughputStep is the output-throughput gain between two levels,
// expressed per doubling of concurrency.
type ThroughputStep struct {
	FromConcurrency int     `json:"from_concurrency"`
	ToConcurrency   int     `json:"to_concurrency"`
	FromRateRPS     float64 `json:"from_rate_rps,omitempty"`
	ToRateRPS       float64 `json:"to_rate_rps,omitempty"`
	GainPerDoubling float64 `json:"gain_per_doubling"` // 0.25 = +25% per doubling of the load
}

// Goodput is the sweep judged against an SLO: the user's, or the stated
// default (SLOSource).
type Goodput struct {
	SLO       SLO    `json:"slo"`
	SLOSource string `json:"slo_source"` // SLOUser or SLODefault
	// TTFTFrom says what TTFT was judged on: TTFTFromIntended (open loop,
	// the wait for a free slot counts) or TTFTFromSend.
	TTFTFrom string         `json:"ttft_from"`
	Levels   []LevelGoodput `json:"levels"`
	// OperatingConcurrency is the highest level inside the SLO below the
	// first level that fails it; 0 when even the first level fails.
	OperatingConcurrency    int     `json:"operating_concurrency"`
	OperatingLevel          int     `json:"operating_level"` // -1: none
	OperatingRateRPS        float64 `json:"operating_rate_rps,omitempty"`
	OperatingOutputTokPerS  float64 `json:"operating_output_tok_per_s"`
	FirstFailingConcurrency int     `json:"first_failing_concurrency"`
	FirstFailingLevel       int     `json:"first_failing_level"` // -1: none
	// PassAgainLevels meet the SLO again after the first failure; the
	// operating point stays below the first failure.
	PassAgainLevels []int `json:"pass_again_levels,omitempty"`
}

// LevelGoodput is one level against the SLO.
type LevelGoodput struct {
	LevelIndex  int     `json:"level_index"`
	Concurrency int     `json:"concurrency"`
	RateRPS     float64 `json:"rate_rps,omitempty"`
	Pass        bool    `json:"pass"`
	// Known is false when a bound's percentile is not available at this
	// level (imported statistics); Pass is then false. Unsustained: the
	// level lost too many requests or did not finish, so it cannot pass.
	Known       bool `json:"known"`
	Unsustained bool `json:"unsustained,omitempty"`
	// Saturated: an open-loop level that completed significantly fewer
	// requests than arrived cannot pass, its backlog growing.
	Saturated bool       `json:"saturated,omitempty"`
	Bounds    []BoundHit `json:"bounds"`
	// The level goodput is its throughput when it passes, else 0.
	GoodputOutputTokPerS float64 `json:"goodput_output_tok_per_s"`
	// Per request: the fraction of measured requests meeting every bound
	// (failed requests count as not meeting), and the output throughput of
	// those requests alone. PerRequestKnown is false without per-request data.
	PerRequestKnown         bool    `json:"per_request_known"`
	RequestsMeetingFraction float64 `json:"requests_meeting_fraction"`
	MeetingOutputTokPerS    float64 `json:"meeting_output_tok_per_s"`
}

// Timeline holds server and GPU series over the sweep with the level
// boundaries, for the time plots. Times are seconds since StartNS.
type Timeline struct {
	StartNS int64        `json:"start_ns"`
	Levels  []LevelSpan  `json:"levels"`
	Series  []TimeSeries `json:"series"`
}

// LevelSpan is a level's place on the time axis.
type LevelSpan struct {
	LevelIndex  int     `json:"level_index"`
	Concurrency int     `json:"concurrency"`
	RateRPS     float64 `json:"rate_rps,omitempty"`
	Load        LoadKey `json:"load"`
	StartS      float64 `json:"start_s"`
	WarmupEndS  float64 `json:"warmup_end_s"`
	EndS        float64 `json:"end_s"`
}

// TimeSeries is one plotted quantity.
type TimeSeries struct {
	Name   string      `json:"name"` // a Series* value
	Unit   string      `json:"unit"`
	Source string      `json:"source"` // metric name, "server log", "NVML"
	Device int         `json:"device,omitempty"`
	Points []TimePoint `json:"points"`
}

// TimePoint is one value at a time.
type TimePoint struct {
	TS float64 `json:"t_s"`
	V  float64 `json:"v"`
}

// Timeline series names.
const (
	SeriesKVUsage     = "kv_usage"
	SeriesRunning     = "running"
	SeriesWaiting     = "waiting"
	SeriesPreemptions = "preemptions"
	SeriesGPUUtil     = "gpu_util"
	SeriesGPUPower    = "gpu_power"
	SeriesGPUSMClock  = "gpu_sm_clock"
	SeriesGPUTemp     = "gpu_temperature"
	SeriesClientCPU   = "client_cpu"
	SeriesServerCPU   = "server_cpu"
)

// RepeatGroup is a set of sweep runs with the same configuration, and
// intervals across them per level.
type RepeatGroup struct {
	Runs   []int         `json:"runs"` // indexes into Report.Runs
	Key    string        `json:"key"`  // the configuration they share
	Levels []RepeatLevel `json:"levels"`
}

// RepeatLevel is one concurrency across the repeated runs.
type RepeatLevel struct {
	Concurrency   int             `json:"concurrency"`
	Runs          int             `json:"runs"`
	TTFTP50S      *stats.Interval `json:"ttft_p50_s,omitempty"`
	TPOTP50S      *stats.Interval `json:"tpot_p50_s,omitempty"`
	OutputTokPerS *stats.Interval `json:"output_tok_per_s,omitempty"`
}
