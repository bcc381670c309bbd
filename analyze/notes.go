package analyze

import "github.com/headroom-llm/headroom/analyze/servermetrics"

// Note is a caveat about a report, a sweep or a level, as data: Kind says
// what it is, the other fields hold its facts; render words it
// (render/notes.go).
type Note struct {
	Kind string `json:"kind"` // a Note* value
	// File is the file it is about; Error an error's text as the system
	// gave it; Text a text the source gave (a tool's percentile method, the
	// collector's note on fixed output).
	File  string `json:"file,omitempty"`
	Error string `json:"error,omitempty"`
	Text  string `json:"text,omitempty"`
	// Count and Need are counts (requests, lines); Percentiles the
	// percentiles concerned; Value a number it names.
	Count       int       `json:"count,omitempty"`
	Need        int       `json:"need,omitempty"`
	Percentiles []float64 `json:"percentiles,omitempty"`
	Value       float64   `json:"value,omitempty"`
	// Name is a second text where one is not enough (the model's dtype
	// beside the probe's in Text).
	Name string `json:"name,omitempty"`
	// Table is the run table a note on rows is about; Of the rows
	// considered, of which Count were affected.
	Table string `json:"table,omitempty"`
	Of    int    `json:"of,omitempty"`
	// FromLog: a fact read from the server log rather than the manifest.
	FromLog bool `json:"from_log,omitempty"`
	// Metrics is NoteMetricsWarning's warning.
	Metrics *servermetrics.Warning `json:"metrics,omitempty"`
}

// Note kinds.
const (
	// The report and the run.
	NoteNoSweepRun   = "no_sweep_run"   // no sweep given: only the hardware ceiling
	NoteLogOnlyRun   = "log_only_run"   // no sweep given, a server log or /metrics dump: the wall it alone supports
	NoteSweepIsEmpty = "sweep_is_empty" // the manifest says sweep but no levels or requests were recorded

	// A sweep.
	NotePromptTarget       = "prompt_target"       // Count requests without a server prompt count: the target was used
	NoteOutputNotFixed     = "output_not_fixed"    // min_tokens/ignore_eos not honoured (Text: the collector's reason)
	NoteLogUnreadable      = "log_unreadable"      // File, Error
	NoteLogClockBad        = "log_clock_bad"       // server_log_lines could not be used (File, Error)
	NoteNoLogTimes         = "no_log_times"        // no server_log_lines: cut by the engine's own stamps
	NoteLogReadStopped     = "log_read_stopped"    // File, Error
	NoteLogUnrecognised    = "log_unrecognised"    // File, Count lines read
	NoteMetricsError       = "metrics_error"       // Error
	NoteMetricsWarning     = "metrics_warning"     // Metrics: the metrics reader's warning
	NoteOnlyLevelStats     = "only_level_stats"    // imported per-level statistics: no per-request data
	NoteNoRequests         = "no_requests"         // levels but no requests
	NoteNoProbe            = "no_probe"            // no probe run: no roofline gap
	NoteNoLevelsTable      = "no_levels_table"     // a level's window taken from its requests
	NoteSourcePercentile   = "source_percentiles"  // Text: the imported source's percentile method
	NoteIncompleteRequests = "incomplete_requests" // Count requests the load tool stopped itself (unfinished when it ended, or cancelled on purpose): neither completed nor failed
	NoteClosedIdle         = "closed_idle_conn"    // Count requests that never reached the server: it had closed the kept-alive connection they went out on

	// A run's rows as read (inputs.go): Table, Count of Of rows.
	NoteNonFinite       = "non_finite"        // rows with NaN or ±Inf (a Prometheus sample may be NaN): left out, or a nullable value cleared
	NoteBadTimes        = "bad_times"         // requests with times out of order or beyond any real request, or negative statistics: left out
	NoteBufferedStream  = "buffered_stream"   // successful requests whose text chunks all arrived in one read: TPOT and ITL are 0
	NoteNonFiniteResult = "non_finite_result" // Count values the analysis computed were NaN or ±Inf (an overflow): written as 0 or null

	// The roofline gap.
	NoteTensorParallel = "tensor_parallel" // Count GPUs per replica (FromLog), perfect scaling assumed
	NoteDTypeMismatch  = "dtype_mismatch"  // Text: the probe's GEMM dtype, Name: the model's
	NoteDecodeOnly     = "decode_only"     // prefill is not in the prediction
	NoteNoModelConfig  = "no_model_config" // no --model-config: no per-level prediction
	NoteFP8Ceiling     = "fp8_ceiling"     // FP8 weights: the compute ceiling is the probe's FP8 peak
	// NoteMeasuredFloor: the probe timed this model's decode GEMMs (Text: the
	// probe's model name, Name: the dtype); attention is modelled.
	NoteMeasuredFloor   = "measured_floor"
	NoteFloorOtherModel = "floor_other_model" // Text: the model whose GEMMs the probe timed, not this one
)

// Level statistics a source may lack (LevelStats.Missing).
const (
	LackITL             = "itl"                // no tokens table
	LackThroughput      = "throughput"         // no measured window
	LackRequestRate     = "request_throughput" // imports: request and total-token throughput
	LackWindow          = "measured_window"
	LackIntervals       = "intervals"
	LackErrorClasses    = "error_classes"
	LackPerRequestGoods = "per_request_goodput"
)

// TokenCounting says how output tokens were counted across a sweep: of OK
// successful requests, Server had the server's completion_tokens (the rest
// the client's chunk count) and Differ of those disagreed with the chunks.
// Imported: the source's own count.
type TokenCounting struct {
	OK       int  `json:"ok"`
	Server   int  `json:"server"`
	Differ   int  `json:"differ"`
	Imported bool `json:"imported,omitempty"`
}
