package rundir

// Table names. Each is a folder of Parquet part files in the run directory.
// The row type of each table is the struct below with the same name; its
// `parquet` tags are the column names. Times are Unix nanoseconds (`_ns`),
// durations seconds (`_s`); other units are in the column name.
const (
	TableProbeGEMM      = "probe_gemm"
	TableProbeBandwidth = "probe_bandwidth"
	TableProbeModelGEMM = "probe_model_gemm"
	TableLevels         = "levels"
	TableRequests       = "requests"
	TableTokens         = "tokens"
	TableServerMetrics  = "server_metrics"
	TableGPUTelemetry   = "gpu_telemetry"
	TableClientSamples  = "client_samples"
	TableServerLogLines = "server_log_lines"
	TableLevelStats     = "level_stats"
	TableServerCPU      = "server_cpu"
	TableCPUEnergy      = "cpu_energy"
)

// ProbeGEMMRow is one GEMM shape of the probe: (batch, k) @ (k, n), timed
// over Repeats repetitions of CallsPerRepeat back-to-back calls.
type ProbeGEMMRow struct {
	Device int32 `parquet:"device"`
	// Mode is "solo" (the GPU probed alone) or "concurrent" (every probed
	// GPU at once, `headroom probe --devices all` on several GPUs).
	Mode           string  `parquet:"mode"`
	Batch          int64   `parquet:"batch"`
	K              int64   `parquet:"k"`
	N              int64   `parquet:"n"`
	DType          string  `parquet:"dtype"`
	FLOP           float64 `parquet:"flop"`  // 2*B*K*N per call
	Bytes          float64 `parquet:"bytes"` // element size * (B*K + K*N + B*N) per call
	Intensity      float64 `parquet:"intensity_flop_per_byte"`
	Repeats        int64   `parquet:"repeats"`
	CallsPerRepeat int64   `parquet:"calls_per_repeat"`
	TimeMedianS    float64 `parquet:"time_per_call_median_s"`
	TimeMinS       float64 `parquet:"time_per_call_min_s"`
	TimeMaxS       float64 `parquet:"time_per_call_max_s"`
	FLOPPerS       float64 `parquet:"flop_per_s"` // from the median time
	// MaxRelErr is the largest relative error of the sampled output elements
	// against the CPU reference; negative when the result was not checked.
	MaxRelErr float64 `parquet:"max_rel_err"`
}

// ProbeModelGEMMRow is one weight GEMM of a model's decode step, timed by
// `headroom probe --model-config`: Tokens rows times a K×N weight, run
// CallsPerStep times per decode step of Batch sequences. The step's GEMM
// floor is the sum over a batch's rows (of one dtype) of CallsPerStep ×
// TimeMedianS.
type ProbeModelGEMMRow struct {
	Device int32  `parquet:"device"`
	Mode   string `parquet:"mode"`
	Model  string `parquet:"model"`
	Batch  int64  `parquet:"batch"` // decode batch (sequences in the step)
	Op     string `parquet:"op"`    // qkv, o, gate_up, down, lm_head, expert_gate_up, …
	DType  string `parquet:"dtype"` // bf16 or fp8_e4m3
	Tokens int64  `parquet:"tokens"`
	// RunTokens is the rows actually multiplied: Tokens, or Tokens padded to
	// a multiple of 16 where cuBLASLt has no FP8 kernel for it.
	RunTokens      int64   `parquet:"run_tokens"`
	K              int64   `parquet:"k"`
	N              int64   `parquet:"n"`
	CallsPerStep   float64 `parquet:"calls_per_step"` // layers, or layers × expected experts touched
	FLOP           float64 `parquet:"flop"`           // 2·RunTokens·K·N per call
	Bytes          float64 `parquet:"bytes"`          // least traffic per call: inputs at their width, bf16 output
	Repeats        int64   `parquet:"repeats"`
	CallsPerRepeat int64   `parquet:"calls_per_repeat"`
	TimeMedianS    float64 `parquet:"time_per_call_median_s"`
	TimeMinS       float64 `parquet:"time_per_call_min_s"`
	TimeMaxS       float64 `parquet:"time_per_call_max_s"`
	MaxRelErr      float64 `parquet:"max_rel_err"`
}

// ProbeBandwidthRow is one device-memory bandwidth measurement.
type ProbeBandwidthRow struct {
	Device         int32   `parquet:"device"`
	Mode           string  `parquet:"mode"`   // "solo" or "concurrent", as in ProbeGEMMRow
	Method         string  `parquet:"method"` // "copy_kernel", "memcpy_dtod", "read_kernel", ...
	BufferBytes    int64   `parquet:"buffer_bytes"`
	BytesPerCall   float64 `parquet:"bytes_per_call"` // bytes read plus bytes written
	Repeats        int64   `parquet:"repeats"`
	CallsPerRepeat int64   `parquet:"calls_per_repeat"`
	TimeMedianS    float64 `parquet:"time_per_call_median_s"`
	TimeMinS       float64 `parquet:"time_per_call_min_s"`
	TimeMaxS       float64 `parquet:"time_per_call_max_s"`
	BytesPerS      float64 `parquet:"bytes_per_s"` // from the median time
}

// LevelRow is one load level of a sweep: a concurrency (closed loop) or an
// arrival rate (open loop). The measured window runs from WarmupEndNS to
// EndNS; the analyzer cuts the server log and metrics by these times.
type LevelRow struct {
	LevelIndex  int32   `parquet:"level_index"`
	Concurrency int64   `parquet:"concurrency"` // closed loop, or the cap in open loop
	RateRPS     float64 `parquet:"rate_rps"`    // open loop; 0 for closed loop
	StartNS     int64   `parquet:"start_ns"`
	WarmupEndNS int64   `parquet:"warmup_end_ns"`
	EndNS       int64   `parquet:"end_ns"`
	Requests    int64   `parquet:"requests"` // measured requests, warmup excluded
	Errors      int64   `parquet:"errors"`
	Complete    bool    `parquet:"complete"`
}

// RequestRow is one request of a sweep. FirstTokenNS is the arrival of the
// first chunk that carried non-empty text.
type RequestRow struct {
	RequestID      string `parquet:"request_id"`
	LevelIndex     int32  `parquet:"level_index"`
	Concurrency    int64  `parquet:"concurrency"`
	Seq            int64  `parquet:"seq"` // order of sending within the level
	Warmup         bool   `parquet:"warmup"`
	Endpoint       string `parquet:"endpoint"`
	IntendedSendNS int64  `parquet:"intended_send_ns"` // open loop schedule; equals send_ns in closed loop
	SendNS         int64  `parquet:"send_ns"`
	FirstTokenNS   *int64 `parquet:"first_token_ns"`
	EndNS          int64  `parquet:"end_ns"`
	// Prompt and output token targets the client asked for.
	PromptTokensTarget int64 `parquet:"prompt_tokens_target"`
	OutputTokensTarget int64 `parquet:"output_tokens_target"`
	// ClientChunks counts streamed chunks with non-empty text.
	ClientChunks int64 `parquet:"client_chunks"`
	// Server-reported usage (stream_options.include_usage); null when absent.
	ServerPromptTokens     *int64 `parquet:"server_prompt_tokens"`
	ServerCompletionTokens *int64 `parquet:"server_completion_tokens"`
	FinishReason           string `parquet:"finish_reason"`
	Status                 string `parquet:"status"` // "ok" or an error class
	HTTPStatus             int32  `parquet:"http_status"`
	Error                  string `parquet:"error"`
	// Replica is the index (manifest replicas[]) of the server that got the
	// request when the sweep spread its load over several; null for a
	// sweep against one server and in runs written before the column.
	Replica *int32 `parquet:"replica"`
	// ServerCachedTokens is the prompt tokens the server says it took from
	// its prefix cache (usage.prompt_tokens_details.cached_tokens); null
	// when it did not say.
	ServerCachedTokens *int64 `parquet:"server_cached_tokens"`
	// SessionID names the conversation a multi-turn request belongs to;
	// null outside sessions.
	SessionID *string `parquet:"session_id"`
	// Turn is the request's turn in its conversation, 1 for the first;
	// null outside sessions.
	Turn *int32 `parquet:"turn"`
	// ThinkNS is the think time drawn before this turn, from the end of the
	// previous turn's answer to the turn's intended send time; null
	// outside sessions (0 for a first turn).
	ThinkNS *int64 `parquet:"think_ns"`
}

// Request statuses. Anything but StatusOK is an error class.
const (
	StatusOK          = "ok"
	StatusHTTPError   = "http_error"
	StatusConnect     = "connect_error"
	StatusTimeout     = "timeout"
	StatusStreamError = "stream_error"
	StatusServerError = "server_error" // an error object inside a 200 stream
	StatusNoTokens    = "no_tokens"
	StatusCanceled    = "canceled"
)

// TokenRow is one streamed chunk that carried text.
type TokenRow struct {
	RequestID string `parquet:"request_id"`
	Index     int32  `parquet:"index"` // 0-based among the request's text chunks
	RecvNS    int64  `parquet:"recv_ns"`
	Tokens    int32  `parquet:"tokens"` // tokens in the chunk as far as the client can tell
	Bytes     int32  `parquet:"bytes"`  // UTF-8 bytes of text in the chunk
}

// ServerMetricRow is one Prometheus sample scraped from the server, in long
// format. Labels are canonical: `k="v"` pairs sorted by key, comma-separated.
type ServerMetricRow struct {
	TimeNS int64   `parquet:"time_ns"`
	Name   string  `parquet:"name"`
	Labels string  `parquet:"labels"`
	Value  float64 `parquet:"value"`
	// Replica is the server scraped (manifest replicas[]) when the sweep
	// ran against several; null otherwise. Every replica is scraped in the
	// same tick and its rows carry that tick's time, so per-scrape sums
	// over replicas line up.
	Replica *int32 `parquet:"replica"`
}

// GPUTelemetryRow is one NVML sample of one GPU.
type GPUTelemetryRow struct {
	TimeNS          int64   `parquet:"time_ns"`
	Device          int32   `parquet:"device"`
	SMClockMHz      float64 `parquet:"sm_clock_mhz"`
	MemClockMHz     float64 `parquet:"mem_clock_mhz"`
	PowerW          float64 `parquet:"power_w"`
	TemperatureC    float64 `parquet:"temperature_c"`
	GPUUtilPct      float64 `parquet:"gpu_util_pct"`
	MemUtilPct      float64 `parquet:"mem_util_pct"`
	MemUsedBytes    int64   `parquet:"mem_used_bytes"`
	ThrottleReasons int64   `parquet:"throttle_reasons"` // NVML clocks-event reason bitmask
	Throttle        string  `parquet:"throttle"`         // names of the active reasons, comma-separated
	Processes       int32   `parquet:"processes"`        // compute processes on the GPU; -1 unknown
	// EnergyMJ is the GPU's total-energy counter (NVML, millijoules since
	// the driver loaded) at this sample; null where the GPU has none
	// (before Volta) and in runs recorded before the column existed.
	EnergyMJ *int64 `parquet:"energy_mj"`
}

// ClientSampleRow is one sample of the load generator's own state, so the
// analyzer can tell when the client, not the server, was the bottleneck.
type ClientSampleRow struct {
	TimeNS      int64   `parquet:"time_ns"`
	CPUUserS    float64 `parquet:"cpu_user_s"`   // cumulative process CPU time
	CPUSystemS  float64 `parquet:"cpu_system_s"` // cumulative process CPU time
	CPUs        int32   `parquet:"cpus"`         // GOMAXPROCS
	OpenStreams int64   `parquet:"open_streams"`
	SendLagMaxS float64 `parquet:"send_lag_max_s"` // largest actual-minus-intended send since the last sample
	// CPUWaitS is the cumulative time the process's threads were runnable
	// but waiting for a core (/proc schedstat); null when the kernel does
	// not report it, and in runs recorded before the column existed.
	CPUWaitS *float64 `parquet:"cpu_wait_s"`
	// Resent is the cumulative count of requests sent a second time, on a
	// new connection, because the server closed the kept-alive connection
	// they first went out on before answering; null in runs recorded
	// before the column existed.
	Resent *int64 `parquet:"resent"`
}

// ServerCPURow is one sample of one thread of the serving engine's
// processes (the process the sweep started or found listening on the
// server's port, and its descendants), read from /proc when the server
// runs on the sweep's host. Times are cumulative seconds: RunS and WaitS
// are schedstat's time on a CPU and time runnable but waiting for one, so
// (ΔRunS + ΔWaitS) / Δt is how much CPU the thread wanted, whatever else
// the host ran.
type ServerCPURow struct {
	TimeNS     int64   `parquet:"time_ns"`
	PID        int32   `parquet:"pid"`
	TID        int32   `parquet:"tid"`
	Thread     string  `parquet:"thread"` // the thread's name (comm)
	CPUUserS   float64 `parquet:"cpu_user_s"`
	CPUSystemS float64 `parquet:"cpu_system_s"`
	RunS       float64 `parquet:"run_s"`
	WaitS      float64 `parquet:"wait_s"`
	HostCPUs   int32   `parquet:"host_cpus"` // online CPUs of the host
	// Replica is the server the thread belongs to (manifest replicas[])
	// when the sweep ran against several; null otherwise.
	Replica *int32 `parquet:"replica"`
}

// CPUEnergyRow is one reading of one RAPL energy counter of the sweep's
// host (Linux powercap, /sys/class/powercap/intel-rapl:*), where it is
// readable. The counter counts up from an arbitrary start and wraps to 0
// after MaxEnergyRangeUJ; a reader takes differences between readings.
type CPUEnergyRow struct {
	TimeNS int64 `parquet:"time_ns"`
	// Zone is the powercap folder ("intel-rapl:0", "intel-rapl:0:1"); Name
	// its own name ("package-0", "dram", "core", "psys").
	Zone             string `parquet:"zone"`
	Name             string `parquet:"name"`
	EnergyUJ         int64  `parquet:"energy_uj"`
	MaxEnergyRangeUJ int64  `parquet:"max_energy_range_uj"`
}

// ServerLogLineRow maps a line of server.log (1-based) to the time the
// collector received it, so the analyzer can cut the log per level.
type ServerLogLineRow struct {
	Line   int64 `parquet:"line"`
	RecvNS int64 `parquet:"recv_ns"`
	// Replica is whose log the line is from (manifest replicas[]; the
	// file is ReplicaLogFile(replica)) when the sweep ran against several
	// servers; null for server.log.
	Replica *int32 `parquet:"replica"`
}

// LevelStatsRow holds per-level statistics imported from tools that keep no
// per-request data (e.g. the seed's serving_sweep.json, vllm bench serve
// without --save-detailed). Zero means absent. Percentiles are as the source
// tool computed them (PercentileMethod says how).
type LevelStatsRow struct {
	Concurrency int64 `parquet:"concurrency"`
	// RateRPS is the open loop's arrival rate (0: closed loop, or an
	// infinite rate).
	RateRPS    float64 `parquet:"rate_rps"`
	RequestsOK int64   `parquet:"requests_ok"`
	Errors     int64   `parquet:"errors"`
	// Incomplete requests were neither completed nor failed in the tool's
	// own count (guidellm's "incomplete": still running when the benchmark
	// ended).
	Incomplete       int64   `parquet:"incomplete"`
	WindowS          float64 `parquet:"window_s"`
	RequestsPerS     float64 `parquet:"requests_per_s"`
	OutputTokPerS    float64 `parquet:"output_tok_per_s"`
	TotalTokPerS     float64 `parquet:"total_tok_per_s"`
	MeanPromptTokens float64 `parquet:"mean_prompt_tokens"`
	MeanOutputTokens float64 `parquet:"mean_output_tokens"`
	TTFTP50S         float64 `parquet:"ttft_p50_s"`
	TTFTP90S         float64 `parquet:"ttft_p90_s"`
	TTFTP99S         float64 `parquet:"ttft_p99_s"`
	TPOTP50S         float64 `parquet:"tpot_p50_s"`
	TPOTP90S         float64 `parquet:"tpot_p90_s"`
	TPOTP99S         float64 `parquet:"tpot_p99_s"`
	ITLP50S          float64 `parquet:"itl_p50_s"`
	ITLP90S          float64 `parquet:"itl_p90_s"`
	ITLP99S          float64 `parquet:"itl_p99_s"`
	E2EP50S          float64 `parquet:"e2e_p50_s"`
	E2EP90S          float64 `parquet:"e2e_p90_s"`
	E2EP99S          float64 `parquet:"e2e_p99_s"`
	PercentileMethod string  `parquet:"percentile_method"`
}
