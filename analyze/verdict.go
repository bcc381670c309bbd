package analyze

// The verdict model: which wall a run hit, where, on what evidence, how
// sure, what to set, and the load to run at. Everything here is data;
// render/diagnosis.go says it in words (docs/methodology.md states each
// rule and threshold).

// Diagnosis is which wall the run hit. There is one primary wall (the
// first reached as the load rises); later walls are Secondary, ordered by
// load. Checks holds every check's result, hit or not, with its evidence.
type Diagnosis struct {
	// Wall is Primary.Kind, kept at the top for tables and SQL.
	Wall       string     `json:"wall"`
	Primary    Wall       `json:"primary"`
	Secondary  []Wall     `json:"secondary,omitempty"`
	Confidence Confidence `json:"confidence"`
	Checks     []Finding  `json:"checks"`
	// Missing names measurements the run lacks (Measure* values).
	Missing []string `json:"missing,omitempty"`
}

// Walls are the primary wall and the secondary ones, in load order.
func (d Diagnosis) Walls() []Wall {
	return append([]Wall{d.Primary}, d.Secondary...)
}

// Wall kinds. A check is named by the wall it looks for.
const (
	WallKVCache        = "kv_cache"        // preemptions, a full cache, admission stopped for want of cache
	WallEngineCap      = "engine_cap"      // queueing at the engine's sequence cap
	WallFrontQueue     = "front_queue"     // queueing in front of the engine (client slots, open-loop backlog, a proxy)
	WallCompute        = "compute"         // TPOT bent with the accelerator (or the server's CPU) saturated
	WallEngineOverhead = "engine_overhead" // TPOT bent far below the ridge, or with the accelerator not saturated
	WallClientBound    = "client_bound"    // the load generator was the bottleneck
	WallNone           = "none"            // no wall in the tested range
	WallInconclusive   = "inconclusive"    // the evidence that would decide is missing
)

// WallKinds lists the walls a check can find, in the order of Checks.
var WallKinds = []string{WallKVCache, WallEngineCap, WallFrontQueue, WallCompute, WallEngineOverhead, WallClientBound}

// Wall is one wall the run reached, or the verdict none/inconclusive.
type Wall struct {
	Kind string `json:"kind"` // a Wall* value
	// At is the first level where the wall shows (LevelIndex -1: none).
	At LoadPoint `json:"at"`
	// Evidence supports the wall, strongest first: Evidence[0] is the
	// single strongest item.
	Evidence []Evidence `json:"evidence,omitempty"`
	// Fixes are in the serving engine's own flags where it has them.
	Fixes []Fix `json:"fixes,omitempty"`
	// Basis says what a compute or engine-overhead wall rests on (Basis*).
	Basis string `json:"basis,omitempty"`
	// Inconclusive only: the wall the evidence there points to (a Wall*
	// value, "" when it points nowhere) and the one measurement that would
	// decide (a Measure* value).
	Likely   string `json:"likely,omitempty"`
	Deciding string `json:"deciding,omitempty"`
	// None only: the load to raise the sweep to (on the load axis) and why
	// that far (Raise*).
	RaiseTo    float64 `json:"raise_to,omitempty"`
	RaiseBasis string  `json:"raise_basis,omitempty"`
}

// Bases of a compute or engine-overhead wall.
const (
	BasisGPU       = "gpu_util"   // NVML utilization at the knee
	BasisRidge     = "ridge"      // the knee's intensity against the probe's ridge
	BasisServerCPU = "server_cpu" // the server process's CPU demand at the knee
)

// How far a sweep that reached no wall should go.
const (
	RaiseKVUsage  = "kv_usage" // where the KV cache, filling in proportion to the load, would be full
	RaiseDoubling = "doubling" // two more doublings of the highest level
)

// Measurements a verdict can rest on, for Missing and Deciding.
const (
	MeasureServerLog      = "server_log"       // server.log
	MeasureLogTimes       = "log_times"        // server_log_lines
	MeasureServerMetrics  = "server_metrics"   // /metrics samples
	MeasureKVSignals      = "kv_signals"       // preemptions or KV usage in the log or metrics
	MeasureQueueDepth     = "queue_depth"      // running and waiting requests (metrics or log)
	MeasureGPUTelemetry   = "gpu_telemetry"    // NVML samples
	MeasureServerCPU      = "server_cpu"       // the server process's CPU (server_cpu table)
	MeasureClientSamples  = "client_samples"   // the load generator's self-check
	MeasureProbe          = "probe"            // a probe run (the ridge)
	MeasureRequests       = "requests"         // per-request data
	MeasureTailRequests   = "tail_requests"    // at least stats.MinSamples(99) measured requests per level
	MeasureTPOT           = "tpot"             // a TPOT at any level
	MeasureIntendedSend   = "intended_send"    // open loop: the intended send times
	MeasureHigherLoad     = "higher_load"      // levels beyond the tested range
	MeasureEngineCapFlags = "engine_cap_flags" // the engine's sequence cap in its flags
)

// LoadPoint names a level on the load axis. In a closed loop its value is
// the concurrency; in an open loop the arrival rate (Concurrency is then
// the level's cap on requests in flight).
type LoadPoint struct {
	LevelIndex  int     `json:"level_index"` // -1: no level
	Axis        string  `json:"axis"`        // AxisConcurrency or AxisRate
	Concurrency int     `json:"concurrency,omitempty"`
	RateRPS     float64 `json:"rate_rps,omitempty"`
}

// Value is the point on the load axis: the concurrency or the rate.
func (p LoadPoint) Value() float64 {
	if p.Axis == AxisRate {
		return p.RateRPS
	}
	return float64(p.Concurrency)
}

// Valid reports whether the point names a level.
func (p LoadPoint) Valid() bool { return p.LevelIndex >= 0 }

// noPoint is the LoadPoint of no level.
func noPoint(axis string) LoadPoint { return LoadPoint{LevelIndex: -1, Axis: axis} }

// pointOf names level l on the axis.
func pointOf(l LevelStats, axis string) LoadPoint {
	return LoadPoint{LevelIndex: l.LevelIndex, Axis: axis, Concurrency: l.Concurrency, RateRPS: l.RateRPS}
}

// Finding is one check's result.
type Finding struct {
	Check  string    `json:"check"`  // the Wall* value it looks for
	Status string    `json:"status"` // a Status* value
	At     LoadPoint `json:"at"`     // the first level where it holds
	// Reason qualifies the status (a Reason* value), e.g. why a check that
	// saw something is clear.
	Reason   string     `json:"reason,omitempty"`
	Evidence []Evidence `json:"evidence,omitempty"`
	// Missing names the measurements that would let an unknown check decide.
	Missing []string `json:"missing,omitempty"`
}

// Finding statuses.
const (
	StatusHit           = "hit"
	StatusClear         = "clear"
	StatusUnknown       = "unknown" // evidence missing
	StatusNotApplicable = "not_applicable"
)

// Reasons qualifying a finding.
const (
	ReasonKVTight        = "kv_tight"         // the cache filled, with no preemption, queue or TTFT growth
	ReasonKneeIsKV       = "knee_is_kv"       // the TPOT knee comes with KV-cache pressure
	ReasonKneeIsClient   = "knee_is_client"   // the client saturated at or before the knee
	ReasonNoKnee         = "no_knee"          // TPOT did not bend
	ReasonGPUNotBusy     = "gpu_not_busy"     // the GPU idled at the knee
	ReasonBelowRidge     = "below_ridge"      // the knee lies far below the probe's ridge
	ReasonSaturated      = "saturated"        // the accelerator (or the server's CPU) was saturated
	ReasonCPUNotBusy     = "cpu_not_busy"     // the server's CPU was not saturated at the knee
	ReasonAfterKnee      = "after_knee"       // the client saturated only past the TPOT knee
	ReasonNoQueue        = "no_queue"         // nothing waited at any level
	ReasonQueueInEngine  = "queue_in_engine"  // requests waited in the engine, not in front of it
	ReasonCacheFull      = "cache_full"       // requests waited, but for want of cache: the KV check's
	ReasonNotPinned      = "not_pinned"       // running requests rose with the load: no fixed cap
	ReasonTTFTFlat       = "ttft_flat"        // requests waited, but TTFT did not grow significantly
	ReasonKeptUp         = "kept_up"          // open loop: the achieved rate kept up with the offered rate
	ReasonClientIdle     = "client_idle"      // the client had CPU and sent on time
	ReasonNoGPUNoCPU     = "no_util"          // neither GPU nor server CPU recorded at the knee
	ReasonNoKVSignals    = "no_kv_signals"    // no log or metrics to rule out the KV cache
	ReasonNoPerRequest   = "no_per_request"   // imported statistics without per-request data
	ReasonClosedLoopOnly = "closed_loop_only" // backlog checks need an open loop or queue data
)

// Evidence is one observation a verdict rests on: a quoted log line, a
// metric value, a telemetry or client reading, a latency figure, a flag.
// Kind says what it is; the numbers are in Value, Ref (what Value is
// compared with) and Ratio; Low and High bound Value when it is an
// estimate with an interval.
type Evidence struct {
	Kind        string  `json:"kind"`   // an Ev* value
	Source      string  `json:"source"` // an Evidence* value
	LevelIndex  int     `json:"level_index"`
	Concurrency int     `json:"concurrency,omitempty"`
	RateRPS     float64 `json:"rate_rps,omitempty"`
	// TimeNS is when it was observed (Unix ns); 0 when unknown.
	TimeNS int64 `json:"time_ns,omitempty"`
	// Log evidence: the 1-based line in server.log and its text as read.
	Line int64  `json:"line,omitempty"`
	Text string `json:"text,omitempty"`
	// Name is the metric, series, thread or flag the value comes from.
	Name  string  `json:"name,omitempty"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit,omitempty"`
	Ref   float64 `json:"ref,omitempty"`
	Ratio float64 `json:"ratio,omitempty"`
	Low   float64 `json:"low,omitempty"`
	High  float64 `json:"high,omitempty"`
	// Count is how many levels, lines or samples the item sums up.
	Count int `json:"count,omitempty"`
	// Mode qualifies a preemption ("recompute", "swap").
	Mode string `json:"mode,omitempty"`
}

// Evidence sources.
const (
	EvidenceLog       = "log"
	EvidenceMetric    = "metric"
	EvidenceTelemetry = "telemetry"
	EvidenceClient    = "client"
	EvidenceLatency   = "latency"
	EvidenceFlags     = "flags"
	EvidenceProbe     = "probe"
)

// Evidence kinds. Value, Ref and Ratio per kind are in docs/methodology.md.
const (
	EvPreemptLog     = "preempt_log"      // a preemption log line (Mode)
	EvKVFullLog      = "kv_full_log"      // llama.cpp: no free KV cache cells
	EvPreemptions    = "preemptions"      // Value: preemptions during the level (counter or log lines)
	EvKVUsage        = "kv_usage"         // Value: the KV cache's fullest fraction
	EvAdmission      = "admission"        // Value: most running, Ref: requests sent; with requests waiting and the cache nearly full
	EvWaiting        = "waiting"          // Value: most requests waiting
	EvRunningPinned  = "running_pinned"   // Value: the running cap, Count: levels it held at, Ref: the most requests sent
	EvCapFlag        = "cap_flag"         // Name: the engine's sequence-cap flag, Value: its setting
	EvLittle         = "littles_law"      // Value: mean waiting ÷ completion rate (s), Ref: the measured wait (s), Ratio
	EvTTFTGrowth     = "ttft_growth"      // Value: p50 TTFT (s) with Low/High, Ref: p50 TTFT at the level below, Ratio
	EvServerQueue0   = "server_queue_0"   // Value: most waiting in the engine (0), Ref: most running, with fewer running than sent
	EvSlotWait       = "slot_wait"        // Value: p90 wait for a free client slot (s), Ref: the threshold
	EvAchievedRate   = "achieved_rate"    // Value: completions/s, Ref: the offered rate, Ratio
	EvTPOTRatio      = "tpot_ratio"       // Value: p50 TPOT (s), Ref: the baseline's, Ratio with Low/High
	EvRidge          = "ridge"            // Value: intensity at the knee (FLOP/byte), Ref: the probe's ridge, Ratio
	EvGPUUtil        = "gpu_util"         // Value: mean GPU utilization (percent)
	EvPromptIntake   = "prompt_intake"    // Value: share of the time between tokens in gaps holding a prompt intake, Ref: the baseline's
	EvServerCPU      = "server_cpu"       // Value: CPU demand of the server's busiest thread (fraction of a core), Name: the thread
	EvServerCPUTotal = "server_cpu_total" // Value: the server process's CPU demand (cores), Ref: the cores it decodes on
	EvClientCPU      = "client_cpu"       // Value: the client's CPU demand (fraction of GOMAXPROCS), Count: GOMAXPROCS
	EvSendLag        = "send_lag"         // Value: largest send lag (s), Ref: the limit, Count: samples over it
)

// Fix is one thing to change, in the serving engine's own flag when it
// has one (Flag "" otherwise).
type Fix struct {
	Action string `json:"action"` // a Fix* value
	Flag   string `json:"flag,omitempty"`
	// Value is a suggested setting, e.g. the operating point for a cap.
	Value string `json:"value,omitempty"`
	// Axis is set when Value is a load (admission control at the
	// operating point, the load to raise the sweep to): AxisConcurrency or
	// AxisRate, the unit of Value.
	Axis string `json:"axis,omitempty"`
	// Current is the flag's value as the server ran, when it set it: the
	// fix then changes a setting rather than adding one.
	Current string `json:"current,omitempty"`
}

// Fix actions.
const (
	FixMoreKVMemory      = "more_kv_memory"     // more memory for the KV cache
	FixQuantizeKV        = "quantize_kv"        // a quantised KV cache
	FixFewerSequences    = "fewer_sequences"    // fewer sequences competing for the cache
	FixSwapPreempted     = "swap_preempted"     // swap preempted sequences to CPU instead of recomputing (only with preemptions)
	FixSmallerModel      = "smaller_model"      // a smaller or more grouped model
	FixKVBudget          = "kv_budget"          // the test engine's admission budget
	FixRaiseSequenceCap  = "raise_sequence_cap" // more sequences at once, while the cache has room
	FixAdmissionControl  = "admission_control"  // cap or shape the load in front of the server
	FixMoreCompute       = "more_compute"       // a faster or second accelerator, or tensor parallelism
	FixQuantizeWeights   = "quantize_weights"   // fewer bytes and FLOPs per token
	FixMoreThreads       = "more_threads"       // CPU engines: more threads or cores for decoding
	FixCUDAGraphs        = "cuda_graphs"        // capture decode steps in CUDA graphs
	FixProfileHost       = "profile_host"       // profile the server's host side (scheduling, launches)
	FixChunkedPrefill    = "chunked_prefill"    // keep prefill from stalling decode
	FixClientCores       = "client_cores"       // give the load generator more cores or its own machine
	FixRaiseLoad         = "raise_load"         // none: sweep higher
	FixRecordMeasurement = "record_measurement" // inconclusive: record the deciding measurement
)

// Confidence is how sure the verdict is, and why not surer.
type Confidence struct {
	Level   string   `json:"level"`             // a Confidence* value
	Reasons []string `json:"reasons,omitempty"` // Why* values
}

// Confidence levels.
const (
	ConfidenceHigh   = "high"
	ConfidenceMedium = "medium"
	ConfidenceLow    = "low"
)

// Why the confidence is what it is.
const (
	WhyServerEvidence  = "server_evidence"  // the engine's own counters or log show the wall
	WhyIntervalsClear  = "intervals_clear"  // the deciding difference clears its interval
	WhySeveralLevels   = "several_levels"   // the wall shows at two or more levels
	WhyOneLevel        = "one_level"        // the wall shows at the highest level only
	WhyThinTail        = "thin_tail"        // a deciding p99 rests on fewer than 100 requests
	WhyLittleDisagrees = "little_disagrees" // Little's law and the measured wait differ by more than 2×
	WhyNoRidge         = "no_ridge"         // no probe: the knee's place against the ridge is unknown
	WhyMissing         = "missing_evidence" // inconclusive: the deciding measurement is missing
	WhyUntested        = "untested_range"   // none: nothing is said beyond the tested range
	WhyTTFTOnly        = "ttft_only"        // a queue seen in the client's latencies only
	WhyEarlierUnknown  = "earlier_unknown"  // a check at a lower load lacks the evidence to decide
)

// OperatingPoint is the load to run at: the largest level meeting the SLO
// with every lower level meeting it too, judged on TTFT from the intended
// send time. FreeTo is, separately, how far TPOT stays flat.
type OperatingPoint struct {
	At LoadPoint `json:"at"` // LevelIndex -1: no level meets the SLO
	// SLO is what was judged; SLOSource says whether the user gave it or
	// it is the stated default (SLOUser, SLODefault).
	SLO       SLO    `json:"slo"`
	SLOSource string `json:"slo_source"`
	// TTFTFrom is TTFTFromIntended when open-loop TTFT was judged from the
	// intended send time (closed loop: TTFTFromSend; they are the same).
	TTFTFrom      string  `json:"ttft_from"`
	OutputTokPerS float64 `json:"output_tok_per_s"`
	// FirstFailing is the lowest level failing the SLO, with the bounds it
	// missed; LevelIndex -1 when every level meets it.
	FirstFailing LoadPoint  `json:"first_failing"`
	Missed       []BoundHit `json:"missed,omitempty"`
	// Reliable is false when a bound's percentile at the point or at the
	// first failing level rests on too few requests to be a tail estimate.
	Reliable bool `json:"reliable"`
	// Capped is true when every tested level meets the SLO: the real
	// operating point may be higher.
	Capped bool `json:"capped"`
	// FreeTo is the end of the flat-TPOT region ("free concurrency"), from
	// Knees; LevelIndex -1 without a TPOT.
	FreeTo LoadPoint `json:"free_to"`
	// Beyond is the kind of the wall that holds the load at the operating
	// point (wallBeyond); its fixes are what lets the load go further. ""
	// when every level meets the SLO or no wall of the verdict is at or
	// below the first failing level.
	Beyond string `json:"beyond,omitempty"`
}

// SLO sources and the TTFT an SLO is judged on.
const (
	SLOUser          = "user"
	SLODefault       = "default"
	TTFTFromIntended = "intended_send"
	TTFTFromSend     = "send"
	// DefaultSLOSpec: TTFT as MLPerf Inference's server scenario bounds it
	// (Llama 2 70B: ttft_latency 2000 ms in LoadGen's mlperf.conf); TPOT
	// tighter than its 200 ms, 10 tokens/s per user.
	DefaultSLOSpec    = "ttft_p99=2s,tpot_p99=100ms"
	defaultSLOTTFTP99 = 2.0
	defaultSLOTPOTP99 = 0.100
)

// DefaultSLO is the SLO judged when the user gives none.
func DefaultSLO() *SLO {
	return &SLO{Spec: DefaultSLOSpec, Bounds: []SLOBound{
		{Metric: "ttft", Percentile: 99, MaxS: defaultSLOTTFTP99},
		{Metric: "tpot", Percentile: 99, MaxS: defaultSLOTPOTP99},
	}}
}

// BoundHit is one SLO bound at one level: the level's value, and whether
// it was known.
type BoundHit struct {
	Metric     string  `json:"metric"`
	Percentile float64 `json:"percentile"`
	ValueS     float64 `json:"value_s"`
	MaxS       float64 `json:"max_s"`
	Known      bool    `json:"known"`
	Reliable   bool    `json:"reliable"`
}
