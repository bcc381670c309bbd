package rundir

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"
)

// ManifestFile is the name of the manifest inside a run directory.
const ManifestFile = "manifest.json"

// Kinds of measurement a run can hold.
const (
	KindProbe  = "probe"
	KindSweep  = "sweep"
	KindImport = "import"
)

// Manifest describes a run: what was measured, on what, with which settings,
// and whether the collection finished. Every number in a report carries the
// context recorded here, so collectors fill in all they know.
//
// Fields this version of headroom does not know are kept when a manifest is
// read and written back (see Extra).
type Manifest struct {
	FormatVersion int `json:"format_version"`
	// RunID identifies the run wherever it is copied: a UUID (version 7
	// for runs written from format 2 on, see NewRunID). Every table part
	// carries it in its run_id column. A format-1 manifest has none; it is
	// then derived from the run's start and host (see derivedRunID) when
	// the manifest is read, and recorded when it is rewritten.
	RunID           string    `json:"run_id"`
	HeadroomVersion string    `json:"headroom_version"`
	Kinds           []string  `json:"kinds"`
	Label           string    `json:"label,omitempty"`
	Tags            []string  `json:"tags,omitempty"`
	StartTime       time.Time `json:"start_time"`
	EndTime         time.Time `json:"end_time,omitzero"`
	// Complete is false while a collector is running and stays false when it
	// was interrupted; Stopped then says where and why.
	Complete bool     `json:"complete"`
	Stopped  *Stopped `json:"stopped,omitempty"`
	// Resumed lists every time an interrupted sweep was continued with
	// `headroom sweep --resume`, oldest first.
	Resumed []Resume `json:"resumed,omitempty"`
	Host    Host     `json:"host"`
	GPUs    []GPU    `json:"gpus,omitempty"`
	Engine  *Engine  `json:"engine,omitempty"`
	// Replicas lists the servers of a sweep that spread its load over
	// several (headroom sweep --base-url URL1,URL2): one box of N servers.
	// Engine then describes replica 0 (the set's engine); rows of the
	// requests, server_metrics, server_log_lines and server_cpu tables say
	// which replica they are from. Absent for a sweep against one server.
	Replicas []Replica `json:"replicas,omitempty"`
	// GPULinks is how the run's GPUs are connected, pair by pair, from
	// NVML's topology (NVLink, a PCIe switch, the CPU): the interconnect a
	// tensor-parallel server depends on. Absent with fewer than two GPUs
	// or without NVML.
	GPULinks []GPULink `json:"gpu_links,omitempty"`
	Workload *Workload `json:"workload,omitempty"`
	Probe    *Probe    `json:"probe,omitempty"`
	Source   *Source   `json:"source,omitempty"`
	// Shard is set in a run that is one shard of a sweep from several
	// hosts (sweep --shard); Merged in the run merge made of them.
	Shard  *Shard   `json:"shard,omitempty"`
	Merged *Merged  `json:"merged,omitempty"`
	Notes  []string `json:"notes,omitempty"`
	// Warnings are problems found while collecting that a reader of any
	// number from this run must know (throttled GPU, client-bound sweep,
	// min_tokens rejected by the server, ...).
	Warnings []string `json:"warnings,omitempty"`

	// Extra holds the raw JSON of fields unknown to this version, at any
	// depth, so that rewriting a manifest never drops them.
	Extra json.RawMessage `json:"-"`
}

// Stopped records why and where an incomplete run stopped.
type Stopped struct {
	Reason string    `json:"reason"` // "interrupted", "error", "max-error-rate", ...
	Error  string    `json:"error,omitempty"`
	Phase  string    `json:"phase,omitempty"` // e.g. "probe gemm", "sweep"
	Level  *int      `json:"level,omitempty"` // index of the level in progress
	Time   time.Time `json:"time"`
}

// Resume records one continuation of an interrupted sweep.
type Resume struct {
	Time time.Time `json:"time"`
	// FromLevel is the index of the first level run by this continuation.
	FromLevel       int    `json:"from_level"`
	HeadroomVersion string `json:"headroom_version,omitempty"`
	// Superseded is the folder (relative to the run) that received the rows
	// of the interrupted level, which was run again; "" if there were none.
	Superseded string `json:"superseded,omitempty"`
}

// Host is the machine the collector ran on.
type Host struct {
	Hostname    string `json:"hostname,omitempty"`
	OS          string `json:"os,omitempty"`
	Arch        string `json:"arch,omitempty"`
	Kernel      string `json:"kernel,omitempty"`
	CPUModel    string `json:"cpu_model,omitempty"`
	CPUs        int    `json:"cpus,omitempty"`
	MemoryBytes int64  `json:"memory_bytes,omitempty"`
}

// GPU is one accelerator as seen by the driver.
type GPU struct {
	Index             int     `json:"index"`
	Name              string  `json:"name"`
	UUID              string  `json:"uuid,omitempty"`
	BusID             string  `json:"bus_id,omitempty"`
	MemoryBytes       int64   `json:"memory_bytes,omitempty"`
	Driver            string  `json:"driver,omitempty"`
	CUDAVersion       string  `json:"cuda_version,omitempty"`
	ComputeCapability string  `json:"compute_capability,omitempty"`
	SMClockMaxMHz     int     `json:"sm_clock_max_mhz,omitempty"`
	MemClockMaxMHz    int     `json:"mem_clock_max_mhz,omitempty"`
	PowerLimitW       float64 `json:"power_limit_w,omitempty"`
}

// Engine is the inference server a sweep ran against.
type Engine struct {
	Name             string `json:"name"`
	Version          string `json:"version,omitempty"`
	BaseURL          string `json:"base_url,omitempty"`
	Model            string `json:"model,omitempty"`
	Quantization     string `json:"quantization,omitempty"`
	DType            string `json:"dtype,omitempty"`
	MaxContextTokens int    `json:"max_context_tokens,omitempty"`
	// Flags are the server's arguments exactly as given (secrets redacted).
	Flags []string `json:"flags,omitempty"`
	// Config holds facts read from the server (log, /version, /v1/models),
	// e.g. "kv_cache_tokens", "tensor_parallel_size".
	Config map[string]string `json:"config,omitempty"`
	// Description says plainly what the engine and model are when that is
	// not obvious, e.g. "random-weight model: meaningless text, real timing".
	Description string `json:"description,omitempty"`
}

// Replica is one server of a set a sweep spread its load over.
type Replica struct {
	Index   int    `json:"index"`
	BaseURL string `json:"base_url"`
	// Engine is what this replica reported (name, version, model, flags,
	// facts), as Manifest.Engine is for a single server.
	Engine *Engine `json:"engine,omitempty"`
	// ServerLog is the file in the run directory that holds this
	// replica's log (ReplicaLogFile), "" when none was followed.
	ServerLog string `json:"server_log,omitempty"`
}

// ReplicaLogFile is the file holding replica i's server log in a run that
// spread its load over several servers (a single server's is
// ServerLogFile).
func ReplicaLogFile(i int) string { return fmt.Sprintf("server-%d.log", i) }

// GPULink is how two GPUs of the run are connected.
type GPULink struct {
	A int `json:"a"` // GPU index (gpus[].index)
	B int `json:"b"`
	// Path is the closest connection NVML reports: "nvlink", "same_board",
	// "pcie_switch" (one switch), "pcie_switches" (several), "pcie_host_bridge"
	// (one host bridge), "numa_node" (host bridges of one CPU),
	// "cpu_interconnect" (across CPU sockets), or "unknown".
	Path string `json:"path"`
	// NVLinks is the number of active NVLink links of GPU A (on an NVSwitch
	// system they reach the switch, not B); 0 without NVLink.
	NVLinks int `json:"nvlinks,omitempty"`
}

// Interconnect names how a run's GPUs talk to each other in a few words:
// "NVLink (18 links per GPU)" when every pair has NVLink, else the slowest
// path of any pair ("PCIe switch", "PCIe host bridge", "CPU interconnect");
// "" when unknown.
func (m *Manifest) Interconnect() string {
	if len(m.GPULinks) == 0 {
		return ""
	}
	rank := map[string]int{"nvlink": 0, "same_board": 1, "pcie_switch": 2, "pcie_switches": 3, "pcie_host_bridge": 4, "numa_node": 5, "cpu_interconnect": 6}
	words := map[string]string{"nvlink": "NVLink", "same_board": "same board", "pcie_switch": "PCIe switch",
		"pcie_switches": "PCIe switches", "pcie_host_bridge": "PCIe host bridge", "numa_node": "PCIe across host bridges",
		"cpu_interconnect": "CPU interconnect"}
	worst, links := "", 0
	for _, l := range m.GPULinks {
		r, ok := rank[l.Path]
		if !ok {
			return ""
		}
		if worst == "" || r > rank[worst] {
			worst = l.Path
		}
		if l.Path == "nvlink" && (links == 0 || l.NVLinks < links) {
			links = l.NVLinks
		}
	}
	if worst == "nvlink" && links > 0 {
		return fmt.Sprintf("NVLink (%d links per GPU)", links)
	}
	return words[worst]
}

// Workload is what a sweep sent.
type Workload struct {
	Endpoint string `json:"endpoint"` // "completions" or "chat"
	// EndpointPath is the request path when it is not the endpoint's /v1
	// path (a proxy's prefix).
	EndpointPath string `json:"endpoint_path,omitempty"`
	// Headers names the extra HTTP headers sent (their values are never
	// kept); ExtraBody the extra top-level body fields, e.g. top_p.
	Headers            []string       `json:"headers,omitempty"`
	ExtraBody          map[string]any `json:"extra_body,omitempty"`
	Prompt             Dist           `json:"prompt_tokens"`
	Output             Dist           `json:"output_tokens"`
	SharedPrefixTokens int            `json:"shared_prefix_tokens,omitempty"`
	Dataset            string         `json:"dataset,omitempty"`
	Seed               int64          `json:"seed"`
	Mode               string         `json:"mode"` // "closed" (concurrency) or "open" (Poisson rate)
	Levels             []int          `json:"levels,omitempty"`
	RatesRPS           []float64      `json:"rates_rps,omitempty"`
	MaxConcurrency     int            `json:"max_concurrency,omitempty"`
	RequestsPerLevel   int            `json:"requests_per_level,omitempty"`
	DurationPerLevelS  float64        `json:"duration_per_level_s,omitempty"`
	WarmupPerLevel     int            `json:"warmup_requests_per_level"`
	Temperature        float64        `json:"temperature"`
	// FixedOutput is true when min_tokens and ignore_eos were sent and
	// accepted; false means output lengths vary (the seed's caveat).
	FixedOutput     bool   `json:"fixed_output"`
	FixedOutputNote string `json:"fixed_output_note,omitempty"`
	// FixedOutputSent says whether min_tokens and ignore_eos were still
	// being sent at the end (false when asked not to or after the server
	// rejected them): what a resumed sweep must send to stay the same
	// workload. Absent in runs written before it existed.
	FixedOutputSent   *bool   `json:"fixed_output_sent,omitempty"`
	Tokenizer         string  `json:"tokenizer,omitempty"` // how prompts were sized: "server /tokenize", "calibrated", ...
	TimeoutPerRequest float64 `json:"timeout_per_request_s,omitempty"`
	// MaxErrorRate is the sweep's --max-error-rate (1 = never stop).
	MaxErrorRate *float64 `json:"max_error_rate,omitempty"`
	// Balance is how requests were spread over several replicas:
	// "least-outstanding" (to the replica with the fewest requests in
	// flight) or "round-robin"; "" for one server.
	Balance string `json:"balance,omitempty"`
	// DatasetSample says which records of the dataset were sent and how
	// they were counted.
	DatasetSample *DatasetSample `json:"dataset_sample,omitempty"`
	// Trace, when set, is the trace the sweep replayed, one level per speed.
	Trace *TraceReplay `json:"trace,omitempty"`
	// MaxModelLen is the context the prompts were filtered to (the
	// server's, or --max-model-len); 0: not known.
	MaxModelLen int `json:"max_model_len,omitempty"`
	// Burstiness is the open loop's gamma shape of inter-arrival gaps when
	// not 1 (Poisson), as vllm bench serve's --burstiness.
	Burstiness float64 `json:"burstiness,omitempty"`
	// Ramp, when set, made the sweep one open-loop level whose arrival
	// rate moved from StartRPS to EndRPS over its requests.
	Ramp *Ramp `json:"ramp,omitempty"`
	// Search is the search for the highest load meeting an SLO (sweep
	// --find-max): its probes, in the order run (the levels), and what it found.
	Search *Search `json:"search,omitempty"`
	// StopWhenSaturated is sweep --stop-when-saturated; Saturated says where
	// the sweep stopped raising the load, when it did.
	StopWhenSaturated bool        `json:"stop_when_saturated,omitempty"`
	Saturated         *Saturation `json:"saturated,omitempty"`
	// Sessions, when set, made every level a closed loop of multi-turn
	// conversations: levels are the sessions in progress at once.
	Sessions *SessionsWorkload `json:"sessions,omitempty"`
}

// SessionsWorkload is how a sweep's multi-turn sessions were drawn.
type SessionsWorkload struct {
	// Source is "dataset" (the dataset's conversations, their user turns
	// in order) or "generated" (turns of the prompt and output
	// distributions).
	Source string `json:"source"`
	// TurnsMean and TurnsStddev: turns per generated session (a normal
	// truncated at zero, rounded up, at least 1); MaxTurns caps any session
	// (0: no cap).
	TurnsMean   float64 `json:"turns_mean,omitempty"`
	TurnsStddev float64 `json:"turns_stddev,omitempty"`
	MaxTurns    int     `json:"max_turns,omitempty"`
	// ThinkMeanS and ThinkStddevS: the think time before each later turn,
	// a normal truncated at zero, in seconds.
	ThinkMeanS   float64 `json:"think_mean_s"`
	ThinkStddevS float64 `json:"think_stddev_s"`
	// PerLevel is the measured sessions per level as given (0: derived
	// from the requests per level and the mean turns); MeanTurns the mean
	// user turns of the sessions drawn from.
	PerLevel  int     `json:"sessions_per_level,omitempty"`
	MeanTurns float64 `json:"mean_turns"`
}

// DatasetSample is what a sweep took from its dataset: the records
// considered in seeded order until enough were usable, why the others were
// skipped, and the lengths of those used.
type DatasetSample struct {
	Format string `json:"format"` // custom, sharegpt, hf
	// Shuffled: records taken in an order seeded by the sweep's seed
	// (false: file order); OutputOverride: every request's output length
	// when given instead of the dataset's (0: not given).
	Shuffled       bool           `json:"shuffled"`
	OutputOverride int            `json:"output_override,omitempty"`
	Records        int            `json:"records"`
	Considered     int            `json:"considered"`
	Used           int            `json:"used"`
	Skipped        map[string]int `json:"skipped,omitempty"` // by reason
	// Reused: fewer usable records than a level sends; they are sent again
	// in the same order.
	Reused       bool          `json:"reused,omitempty"`
	Tokenizer    string        `json:"tokenizer"`
	PromptTokens *TokenSummary `json:"prompt_tokens,omitempty"`
	// OutputTokens are the lengths the records decide (reference answers,
	// or given); absent when the output distribution decides them.
	OutputTokens *TokenSummary `json:"output_tokens,omitempty"`
}

// TraceReplay is a replayed trace: its requests sent open loop at their
// arrival times divided by each speed, one level per speed.
type TraceReplay struct {
	Path      string    `json:"path"`
	Format    string    `json:"format"` // mooncake, burstgpt
	Rows      int       `json:"rows"`
	SpanS     float64   `json:"span_s"` // first to last arrival at speed 1
	Speeds    []float64 `json:"speeds"`
	BlockSize int       `json:"block_size"` // tokens per hash id
	// Cut counts the requests whose prompt was shortened (arrival kept) so
	// that prompt and output fit the model's context.
	Cut int `json:"cut,omitempty"`
	// PromptTokens are all prompts' tokens as sent; RepeatedBlockTokens
	// those in blocks an earlier request already sent: what a prefix
	// cache holding everything could serve.
	PromptTokens        int64 `json:"prompt_tokens"`
	RepeatedBlockTokens int64 `json:"repeated_block_tokens"`
}

// TokenSummary summarizes token counts.
type TokenSummary struct {
	N    int     `json:"n"`
	Mean float64 `json:"mean"`
	Min  int     `json:"min"`
	Max  int     `json:"max"`
}

// Ramp is an arrival rate moving over one level: "linear" or "exponential"
// in the request's index, as vllm bench serve's --ramp-up-strategy.
type Ramp struct {
	Kind     string  `json:"kind"`
	StartRPS float64 `json:"start_rps"`
	EndRPS   float64 `json:"end_rps"`
}

// Search is a search for the highest load that meets an SLO: the load is
// raised (doubled) until a level fails, then the boundary between the last
// passing and the first failing load is bisected until it is narrower than
// the precision. Every probe is a level of the run.
type Search struct {
	SLO  string `json:"slo"`
	Axis string `json:"axis"` // "concurrency" (closed loop) or "rate_rps" (open loop)
	// Start and Limit are the first load probed and the highest allowed.
	Start float64 `json:"start"`
	Limit float64 `json:"limit"`
	// Precision: the search ends when the interval is at most this
	// fraction of its lower end (concurrency: and at least 1 wide).
	Precision float64       `json:"precision"`
	Probes    []SearchProbe `json:"probes"`
	// Done is false while the search runs and when it was interrupted.
	Done bool `json:"done"`
	// Max is the highest load that met the SLO (0: none did), Fail the
	// lowest that failed (0: none failed up to Limit). The boundary lies in
	// [Max, Fail).
	Max       float64 `json:"max"`
	MaxLevel  int     `json:"max_level"` // level index; -1: none
	Fail      float64 `json:"fail,omitempty"`
	FailLevel int     `json:"fail_level"` // -1: none
	// Capped: every load up to Limit met the SLO.
	Capped bool `json:"capped,omitempty"`
	// Reliable: every bound at both sides rests on enough requests for its
	// percentile to be a tail estimate.
	Reliable bool `json:"reliable"`
}

// SearchProbe is one probed level and its verdict.
type SearchProbe struct {
	LevelIndex    int           `json:"level_index"`
	Concurrency   int           `json:"concurrency"`
	RateRPS       float64       `json:"rate_rps,omitempty"`
	Pass          bool          `json:"pass"`
	Sustained     bool          `json:"sustained"`
	Requests      int           `json:"requests"`
	Errors        int           `json:"errors"`
	Bounds        []SearchBound `json:"bounds"`
	OutputTokPerS float64       `json:"output_tok_per_s"`
}

// SearchBound is one SLO bound at one probe.
type SearchBound struct {
	Metric     string  `json:"metric"`
	Percentile float64 `json:"percentile"`
	MaxS       float64 `json:"max_s"`
	ValueS     float64 `json:"value_s"`
	N          int     `json:"n"`
	Known      bool    `json:"known"`
	Reliable   bool    `json:"reliable"`
	Pass       bool    `json:"pass"`
}

// Saturation is where sweep --stop-when-saturated stopped raising the
// load: the last two levels each gained less than GainLimit of output
// throughput per doubling of the load over the best level before them,
// while median TTFT rose significantly at each of the last two steps (its
// 95 % intervals do not overlap).
type Saturation struct {
	LevelIndex  int     `json:"level_index"`
	Concurrency int     `json:"concurrency"`
	RateRPS     float64 `json:"rate_rps,omitempty"`
	GainLimit   float64 `json:"gain_limit_per_doubling"`
	// PeakLevel is the level of highest throughput before the last two.
	PeakLevel         int     `json:"peak_level"`
	PeakOutputTokPerS float64 `json:"peak_output_tok_per_s"`
	// The last three levels, lowest load first: their output throughput
	// and median TTFT with its interval; GainPerDoubling is each of the
	// last two levels' gain over the peak level, per doubling of the load.
	Levels          []int     `json:"levels"`
	OutputTokPerS   []float64 `json:"output_tok_per_s"`
	GainPerDoubling []float64 `json:"gain_per_doubling"`
	TTFTP50S        []float64 `json:"ttft_p50_s"`
	TTFTP50LowS     []float64 `json:"ttft_p50_low_s"`
	TTFTP50HighS    []float64 `json:"ttft_p50_high_s"`
	// Skipped are the planned loads not run.
	Skipped []float64 `json:"skipped"`
}

// Dist is a length distribution in tokens.
type Dist struct {
	Kind   string  `json:"kind"` // "fixed", "uniform", "normal", "lognormal", "dataset", "trace"
	Mean   float64 `json:"mean"`
	StdDev float64 `json:"stddev,omitempty"`
	Min    int     `json:"min,omitempty"`
	Max    int     `json:"max,omitempty"`
}

// String describes the distribution in one short phrase, the same in a
// report's context table, a comparison's context keys and the identity of
// repeated runs: "fixed 512", "normal 512 ± 128", "uniform 512 [256, 768]",
// "lognormal 512 ± 128 [64, 2048]", "dataset 212"; "" when there is none.
func (d Dist) String() string {
	if d.Kind == "" && d.Mean == 0 {
		return ""
	}
	tokens := func(v float64) string { return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64) }
	s := tokens(d.Mean)
	if d.Kind != "" {
		s = d.Kind + " " + s
	}
	if d.StdDev > 0 {
		s += " ± " + tokens(d.StdDev)
	}
	if d.Max > 0 && d.Max >= d.Min {
		s += fmt.Sprintf(" [%d, %d]", d.Min, d.Max)
	}
	return s
}

// Probe holds the probe's headline numbers, as the seed's script 01 defines
// them, so a reader need not open the tables for the summary.
type Probe struct {
	ProbeRoofline
	KneeBatch int  `json:"knee_batch,omitempty"` // smallest B at >= 90% of peak; 0 if not reached
	Validated bool `json:"validated"`
	Throttled bool `json:"throttled"`
	// ClocksBelowBase is true when a timed point ran with the SM clock below
	// the GPU's base (default applications) clock for a reason other than
	// the power cap, e.g. clocks locked low.
	ClocksBelowBase bool `json:"clocks_below_base,omitempty"`
	// Busy is true when NVML listed another compute process on a probed GPU.
	Busy    bool  `json:"busy,omitempty"`
	Devices []int `json:"devices,omitempty"`
	// FP8 is the roofline of the same GEMM in FP8 (E4M3, cuBLASLt), when
	// measured: the ceiling of models served with FP8 weights.
	FP8 *ProbeCeiling `json:"fp8,omitempty"`
	// Model names the model whose decode GEMMs the probe_model_gemm table
	// holds, and the config it was read from.
	Model       string `json:"model,omitempty"`
	ModelConfig string `json:"model_config,omitempty"`
}

// ProbeRoofline is the probe's bf16 GEMM roofline: the GEMM (dtype, K,
// N), its peak throughput and the batch it was reached at, the best copy
// bandwidth and its method, and the ridge, peak / bandwidth. Its fields
// stand in the JSON of the struct that embeds it (Probe, and the
// analyzer's roofline).
type ProbeRoofline struct {
	DType              string  `json:"dtype"`
	K                  int     `json:"k"`
	N                  int     `json:"n"`
	PeakFLOPPerS       float64 `json:"peak_flop_per_s"`
	PeakBatch          int     `json:"peak_batch"`
	BandwidthBytesPerS float64 `json:"bandwidth_bytes_per_s"`
	BandwidthMethod    string  `json:"bandwidth_method"`
	RidgeFLOPPerByte   float64 `json:"ridge_flop_per_byte"`
}

// ProbeCeiling is one dtype's GEMM roofline, as Probe's bf16 fields.
type ProbeCeiling struct {
	DType            string  `json:"dtype"`
	PeakFLOPPerS     float64 `json:"peak_flop_per_s"`
	PeakBatch        int     `json:"peak_batch"`
	RidgeFLOPPerByte float64 `json:"ridge_flop_per_byte"`
	KneeBatch        int     `json:"knee_batch,omitempty"`
}

// Source describes where an imported run came from.
type Source struct {
	Tool   string `json:"tool"` // e.g. "seed roofline probe (script 01)"
	File   string `json:"file"`
	SHA256 string `json:"sha256"`
	// Lacks lists what the source format does not carry, e.g. "per-token times".
	Lacks []string `json:"lacks,omitempty"`
}

// HasKind reports whether the run holds the given kind of measurement.
func (m *Manifest) HasKind(kind string) bool {
	for _, k := range m.Kinds {
		if k == kind {
			return true
		}
	}
	return false
}

// AddKind records a kind of measurement once.
func (m *Manifest) AddKind(kind string) {
	if !m.HasKind(kind) {
		m.Kinds = append(m.Kinds, kind)
	}
}
