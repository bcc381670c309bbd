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
	Resumed  []Resume  `json:"resumed,omitempty"`
	Host     Host      `json:"host"`
	GPUs     []GPU     `json:"gpus,omitempty"`
	Engine   *Engine   `json:"engine,omitempty"`
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

// Workload is what a sweep sent.
type Workload struct {
	Endpoint           string    `json:"endpoint"` // "completions" or "chat"
	Prompt             Dist      `json:"prompt_tokens"`
	Output             Dist      `json:"output_tokens"`
	SharedPrefixTokens int       `json:"shared_prefix_tokens,omitempty"`
	Dataset            string    `json:"dataset,omitempty"`
	Seed               int64     `json:"seed"`
	Mode               string    `json:"mode"` // "closed" (concurrency) or "open" (Poisson rate)
	Levels             []int     `json:"levels,omitempty"`
	RatesRPS           []float64 `json:"rates_rps,omitempty"`
	MaxConcurrency     int       `json:"max_concurrency,omitempty"`
	RequestsPerLevel   int       `json:"requests_per_level,omitempty"`
	DurationPerLevelS  float64   `json:"duration_per_level_s,omitempty"`
	WarmupPerLevel     int       `json:"warmup_requests_per_level"`
	Temperature        float64   `json:"temperature"`
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
}

// Dist is a length distribution in tokens.
type Dist struct {
	Kind   string  `json:"kind"` // "fixed", "uniform", "normal", "lognormal", "dataset"
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
	DType              string  `json:"dtype"`
	K                  int     `json:"k"`
	N                  int     `json:"n"`
	PeakFLOPPerS       float64 `json:"peak_flop_per_s"`
	PeakBatch          int     `json:"peak_batch"`
	BandwidthBytesPerS float64 `json:"bandwidth_bytes_per_s"`
	BandwidthMethod    string  `json:"bandwidth_method"`
	RidgeFLOPPerByte   float64 `json:"ridge_flop_per_byte"`
	KneeBatch          int     `json:"knee_batch,omitempty"` // smallest B at >= 90% of peak; 0 if not reached
	Validated          bool    `json:"validated"`
	Throttled          bool    `json:"throttled"`
	// ClocksBelowBase is true when a timed point ran with the SM clock below
	// the GPU's base (default applications) clock for a reason other than
	// the power cap, e.g. clocks locked low.
	ClocksBelowBase bool `json:"clocks_below_base,omitempty"`
	// Busy is true when NVML listed another compute process on a probed GPU.
	Busy    bool  `json:"busy,omitempty"`
	Devices []int `json:"devices,omitempty"`
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
