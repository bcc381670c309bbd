package serverlog

import (
	"fmt"
	"strings"
	"time"

	"github.com/headroom-llm/headroom/engines"
)

// Engine names a serving engine whose log format the scanner knows. The
// values match the engine names used in run manifests (package engines),
// except llama.cpp's, "llamacpp" here.
type Engine string

// The engines the scanner reads. EngineUnknown means "detect it" in
// Options and "could not tell" in results.
const (
	EngineUnknown      Engine = ""
	EngineVLLM         Engine = "vllm"
	EngineSGLang       Engine = "sglang"
	EngineLlamaCpp     Engine = "llamacpp"
	EngineNodeLlamaCpp Engine = "node-llama-cpp"
	// EngineTransformersCB is the project's GPU engine (bench/gpu-engine):
	// transformers' continuous batching behind headroom's own server. Its
	// log has the test engine's layout with other events.
	EngineTransformersCB Engine = "transformers-cb"
)

// Engines lists the known engines in the order auto-detection prefers them.
var Engines = []Engine{EngineVLLM, EngineSGLang, EngineLlamaCpp, EngineNodeLlamaCpp, EngineTransformersCB}

// ParseEngine reads an engine name as a user types it or a manifest holds
// it: "auto" or "" for detection, and every spelling engines.Canonical
// knows of an engine whose log the scanner reads.
func ParseEngine(s string) (Engine, error) {
	if t := strings.ToLower(strings.TrimSpace(s)); t == "" || t == "auto" {
		return EngineUnknown, nil
	}
	name, _ := engines.Canonical(s)
	if e, ok := logEngines[name]; ok {
		return e, nil
	}
	return EngineUnknown, fmt.Errorf("unknown engine %q: want auto, vllm, sglang, llamacpp, node-llama-cpp or transformers-cb", s)
}

// logEngines maps the manifest's engine names to the scanner's.
var logEngines = map[string]Engine{
	engines.VLLM:           EngineVLLM,
	engines.SGLang:         EngineSGLang,
	engines.LlamaCpp:       EngineLlamaCpp,
	engines.NodeLlamaCpp:   EngineNodeLlamaCpp,
	engines.TransformersCB: EngineTransformersCB,
}

// Kind says what an event is about; it selects which payload field of Event
// is filled.
type Kind uint8

// Event kinds.
const (
	KindUnknown      Kind = iota
	KindStats             // periodic scheduler statistics (Event.Stats)
	KindPreemption        // a request evicted from the running batch (Event.Preemption)
	KindConfig            // start-up facts and arguments (Event.Facts)
	KindError             // an error (Event.Problem)
	KindWarning           // a warning worth reporting, e.g. swap space (Event.Problem)
	KindSlot              // llama.cpp slot activity (Event.Slot)
	KindTiming            // llama.cpp per-task prompt/eval timing (Event.Timing)
	KindContextShift      // llama.cpp context shift (Event.ContextShift)
	KindKVFull            // llama.cpp found no free KV cache cells (Event.Problem, Event.Slot)
	KindRequest           // request lifecycle and HTTP access lines (Event.Request)
	// KindKVEvict: llama.cpp (--kv-unified) found no free KV cache cells
	// and made room by dropping an idle slot's cached prompt (Event.Slot:
	// the slot in ID, the prompt's tokens in NPast). No running request
	// gave way, so it is not pressure on the cache; the allocation failure
	// and the retry that surround it are not KindKVFull events.
	KindKVEvict
)

var kindNames = [...]string{"unknown", "stats", "preemption", "config", "error", "warning", "slot", "timing", "context_shift", "kv_full", "request", "kv_evict"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Level is the severity printed on the line, when there is one.
type Level uint8

// Severity levels, in increasing order.
const (
	LevelUnknown Level = iota
	LevelDebug
	LevelInfo
	LevelWarning
	LevelError
	LevelCritical
)

var levelNames = [...]string{"", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}

func (l Level) String() string {
	if int(l) < len(levelNames) {
		return levelNames[l]
	}
	return fmt.Sprintf("level(%d)", l)
}

// TimeQuality says where an event's time came from and how much of it was
// inferred.
type TimeQuality uint8

// Time qualities, from best to worst.
const (
	TimeNone     TimeQuality = iota // the line carried no time
	TimeComplete                    // date, time and zone from the line or its wrapper
	TimeNoZone                      // date and time from the line; zone from Options.Location
	TimeNoYear                      // month, day and time from the line; year from Options, zone from Options.Location
	TimeRelative                    // llama.cpp offset since its log started (Event.Elapsed); Time set only if Options.Reference is
	TimeClock                       // time of day only (older SGLang "[16:43:29 TP0]"); the date is Options.Reference's, else 0000-01-01
)

var timeQualityNames = [...]string{"none", "complete", "no-zone", "no-year", "relative", "clock"}

func (q TimeQuality) String() string {
	if int(q) < len(timeQualityNames) {
		return timeQualityNames[q]
	}
	return fmt.Sprintf("timequality(%d)", q)
}

// Event is one recognised log line. Only the payload field that matches
// Kind is meaningful.
type Event struct {
	Line        int64         // 1-based line number in the input
	Raw         string        // the line as read, without the line break, for quoting as evidence
	Time        time.Time     // the engine's (or wrapper's) time of the line; zero when unknown
	TimeQuality TimeQuality   // how Time was obtained
	Elapsed     time.Duration // llama.cpp --log-timestamps offset, when TimeQuality is TimeRelative
	RecvTime    time.Time     // client receive time from the capture sidecar (see Align); zero when unknown
	Engine      Engine
	Kind        Kind
	Level       Level
	// Rank is the parallel rank that printed the line ("TP3", "rank=1"),
	// when the line says; the same message from several ranks at once is
	// one event (see Counts.Duplicates).
	Rank string
	// Generation is the vLLM generation ("V0" or "V1") the line's shape
	// shows (its source file, process prefix or fields), "" when it does
	// not tell.
	Generation string

	Stats        Stats        // KindStats
	Preemption   Preemption   // KindPreemption
	Facts        []Fact       // KindConfig
	Problem      Problem      // KindError, KindWarning, KindKVFull
	Slot         Slot         // KindSlot, KindKVFull, KindKVEvict
	Timing       Timing       // KindTiming
	ContextShift ContextShift // KindContextShift
	Request      Request      // KindRequest
}

// StatField is a bit set naming the Stats fields a line carried.
type StatField uint32

// Stats fields.
const (
	FieldPromptThroughput StatField = 1 << iota
	FieldGenerationThroughput
	FieldRunning
	FieldWaiting
	FieldSwapped
	FieldKVUsage
	FieldCPUKVUsage
	FieldPrefixCacheHitRate
	FieldCPUPrefixCacheHitRate
	FieldNewSeqs
	FieldNewTokens
	FieldCachedTokens
	FieldBatchTokens
	FieldPendingTokens
	FieldKVUsedTokens
	FieldKVBudgetTokens
	FieldCUDAGraph
	FieldAcceptLength
	FieldEngineIndex
)

// Stats is a periodic statistics line: vLLM's "Avg prompt throughput ..."
// line, SGLang's prefill and decode batch lines, the test engine's step
// line. Fractions are 0..1 even where the engine prints percent.
type Stats struct {
	Set   StatField // which fields the line carried
	Phase string    // "" for periodic summaries, "prefill" or "decode" for SGLang batches, "step" for the test engine

	EngineIndex           int     // vLLM V1 "Engine 000"
	PromptTokensPerS      float64 // vLLM average prompt throughput; SGLang prefill input throughput
	GenerationTokensPerS  float64 // vLLM average generation throughput; SGLang decode gen throughput
	Running               int     // requests in the running batch
	Waiting               int     // requests waiting (vLLM Pending/Waiting, SGLang #queue-req)
	Swapped               int     // vLLM V0 swapped requests
	KVUsage               float64 // GPU KV cache in use, fraction 0..1 (SGLang token usage, full token usage)
	CPUKVUsage            float64 // vLLM V0 CPU (swap) KV cache in use, fraction 0..1
	PrefixCacheHitRate    float64 // fraction 0..1
	CPUPrefixCacheHitRate float64 // vLLM V0 CPU prefix cache hit rate, fraction 0..1
	NewSeqs               int     // SGLang prefill #new-seq
	NewTokens             int     // SGLang prefill #new-token
	CachedTokens          int     // SGLang prefill #cached-token
	BatchTokens           int     // SGLang decode #token, test engine batch_tokens
	PendingTokens         int     // SGLang #pending-token
	KVUsedTokens          int     // test engine kv_used_tokens
	KVBudgetTokens        int     // test engine kv_budget_tokens
	CUDAGraph             bool    // SGLang "cuda graph: True"
	AcceptLength          float64 // SGLang speculative "accept len"
}

// Has reports whether the line carried field f.
func (s *Stats) Has(f StatField) bool { return s.Set&f != 0 }

// set records a numeric field read from a line: it marks f as carried and
// stores v in f's member (counts are truncated to int). Every engine's
// parser maps its own names to fields and stores them through here.
func (s *Stats) set(f StatField, v float64) {
	s.Set |= f
	switch f {
	case FieldPromptThroughput:
		s.PromptTokensPerS = v
	case FieldGenerationThroughput:
		s.GenerationTokensPerS = v
	case FieldRunning:
		s.Running = int(v)
	case FieldWaiting:
		s.Waiting = int(v)
	case FieldSwapped:
		s.Swapped = int(v)
	case FieldKVUsage:
		s.KVUsage = v
	case FieldCPUKVUsage:
		s.CPUKVUsage = v
	case FieldPrefixCacheHitRate:
		s.PrefixCacheHitRate = v
	case FieldCPUPrefixCacheHitRate:
		s.CPUPrefixCacheHitRate = v
	case FieldNewSeqs:
		s.NewSeqs = int(v)
	case FieldNewTokens:
		s.NewTokens = int(v)
	case FieldCachedTokens:
		s.CachedTokens = int(v)
	case FieldBatchTokens:
		s.BatchTokens = int(v)
	case FieldPendingTokens:
		s.PendingTokens = int(v)
	case FieldKVUsedTokens:
		s.KVUsedTokens = int(v)
	case FieldKVBudgetTokens:
		s.KVBudgetTokens = int(v)
	case FieldCUDAGraph:
		s.CUDAGraph = v != 0
	case FieldAcceptLength:
		s.AcceptLength = v
	case FieldEngineIndex:
		s.EngineIndex = int(v)
	}
}

// Preemption modes.
const (
	ModeRecompute = "recompute"   // vLLM RECOMPUTE, the test engine's recompute
	ModeSwap      = "swap"        // vLLM V0 SWAP (KV blocks moved to CPU)
	ModeRetract   = "retract"     // SGLang retraction
	ModeOffload   = "cpu_offload" // transformers-cb: KV moved to the CPU swap pool
)

// Preemption is one eviction event: a vLLM V0 "Sequence group ... is
// preempted" warning, an SGLang retraction, a test-engine preempt line.
type Preemption struct {
	Mode            string // ModeRecompute, ModeSwap or ModeRetract
	RequestID       string // the evicted request, when printed
	Count           int    // requests evicted by this event
	Cumulative      int    // the engine's own running total, when CumulativeKnown
	CumulativeKnown bool
	// SGLang: the scheduler's new-token ratio before and after the retraction.
	NewTokenRatioBefore, NewTokenRatioAfter float64
	// Test engine: the budget state at the eviction.
	KVUsedTokens, KVBudgetTokens, Generated int
}

// Fact is one start-up fact. Well-known facts use the Fact* keys; arguments
// from an argument dump use "arg.<name>" with the value as printed.
type Fact struct {
	Key   string
	Value string
	// NonDefault is true when the engine itself said the argument was not a
	// default (vLLM's "non-default args"), or when the value differs from
	// the engine's known default.
	NonDefault bool
}

// Well-known fact keys.
const (
	FactVersion              = "version"
	FactEngineGeneration     = "engine_generation" // vLLM "V0" or "V1"
	FactModel                = "model"
	FactArchitecture         = "architecture"
	FactDtype                = "dtype"
	FactQuantization         = "quantization"
	FactKVCacheDtype         = "kv_cache_dtype"
	FactMaxModelLen          = "max_model_len"
	FactTensorParallel       = "tensor_parallel_size"
	FactPipelineParallel     = "pipeline_parallel_size"
	FactGPUMemoryUtilization = "gpu_memory_utilization"
	FactKVCacheTokens        = "kv_cache_tokens"
	FactKVCacheBlocksGPU     = "kv_cache_blocks_gpu"
	FactKVCacheBlocksCPU     = "kv_cache_blocks_cpu"
	FactKVCacheGiB           = "kv_cache_gib"
	FactWeightsGiB           = "weights_gib"
	FactMaxConcurrency       = "max_concurrency"        // requests of FactMaxConcurrencyTokens tokens that fit the KV cache
	FactMaxConcurrencyTokens = "max_concurrency_tokens" // tokens per request in that estimate
	FactCUDAGraph            = "cuda_graph"             // "captured" or "disabled"
	FactCUDAGraphSeconds     = "cuda_graph_capture_s"
	FactCUDAGraphGiB         = "cuda_graph_gib"
	FactMaxNumSeqs           = "max_num_seqs"
	FactMaxBatchedTokens     = "max_num_batched_tokens"
	FactPrefixCaching        = "enable_prefix_caching"
	FactChunkedPrefill       = "chunked_prefill"
	FactPlatform             = "platform"
	FactContextSize          = "n_ctx"      // llama.cpp context (all slots)
	FactSlotContext          = "n_ctx_slot" // llama.cpp context per slot
	FactSlots                = "n_slots"    // llama.cpp parallel slots; test engine sequences
	FactMaxRunningRequests   = "max_running_requests"
	FactListening            = "listening"
)

// Problem classes for errors and warnings.
const (
	ProblemCUDAOOM         = "cuda_oom"         // CUDA/GPU out of memory
	ProblemEngineDead      = "engine_dead"      // the engine process died or the engine loop stopped
	ProblemAbort           = "abort"            // a request was aborted
	ProblemTimeout         = "timeout"          // a timeout
	ProblemKVInsufficient  = "kv_insufficient"  // the KV cache cannot hold even one request of the configured length
	ProblemContextExceeded = "context_exceeded" // a request longer than the context was refused
	ProblemKVFull          = "kv_full"          // llama.cpp found no free KV cache cells for a batch
	ProblemStartFailed     = "start_failed"     // the engine failed to start (core initialization failed)
	ProblemFatalSignal     = "fatal_signal"     // the process died of a signal or an assertion (SIGSEGV, abort, killed)
	ProblemCrash           = "crash"            // an exception reached the top of the server process
	ProblemSwapSpace       = "swap_space"       // vLLM V0 swap space warning
	ProblemPromptCache     = "prompt_cache"     // llama.cpp evicted a prompt-cache entry to make room (host-RAM cache thrashing)
	ProblemHTTP            = "http_error"       // an HTTP error status returned to a client
	ProblemOther           = "error"            // any other error-level line
)

// Problem is an error or a warning worth reporting.
type Problem struct {
	Class   string // one of the Problem* classes
	Message string // the message part of the line
	// Fatal is true for errors the engine does not survive: it died,
	// failed to start, was killed by a signal, or hung (an engine-level
	// timeout). A request's error, a refused prompt or a warning is not.
	Fatal bool
}

// Slot actions (llama.cpp).
const (
	SlotLaunch    = "launch"     // a task was assigned to the slot
	SlotNewPrompt = "new_prompt" // prompt size known
	SlotRelease   = "release"    // the task finished and the slot is free
	SlotActive    = "active"     // another line of the slot's task: the slot is busy
	SlotData      = "data"       // a census of the slots: Busy of them processing
)

// Slot is llama.cpp slot activity. Integer fields are -1 when the line did
// not carry them.
type Slot struct {
	Action       string // SlotLaunch, SlotNewPrompt, SlotRelease
	ID           int
	Task         int
	PromptTokens int  // new prompt: tokens in the prompt
	NCtxSlot     int  // new prompt: context of the slot
	NPast        int  // release, KindKVEvict: tokens in the slot's cache
	Truncated    bool // release: the prompt was truncated
	Busy         int  // data: slots processing a task
}

// Timing phases (llama.cpp).
const (
	TimingPrompt = "prompt" // prompt eval (prefill)
	TimingEval   = "eval"   // generation
	TimingTotal  = "total"
)

// Timing is one line of llama.cpp's per-task timing block.
type Timing struct {
	Slot, Task int // -1 when unknown
	Phase      string
	MS         float64 // milliseconds spent
	Tokens     int     // tokens processed or generated; -1 when not printed
	MSPerToken float64
	TokensPerS float64
}

// ContextShift is a llama.cpp context shift: n_discard tokens after the
// first n_keep were dropped to make room.
type ContextShift struct {
	Slot, Task             int // -1 when unknown
	NKeep, NLeft, NDiscard int
}

// Request actions.
const (
	RequestReceived = "received" // vLLM "Received request"
	RequestAdded    = "added"    // vLLM "Added request"
	RequestAdmitted = "admitted" // test engine admit
	RequestFinished = "finished" // vLLM "Finished request", test engine finish
	RequestHTTP     = "http"     // an HTTP access log line
)

// Request is a request lifecycle line or an HTTP access line. Integer
// fields are -1 when not printed.
type Request struct {
	Action           string
	ID               string
	Status           int // HTTP status
	Method, Path     string
	PromptTokens     int
	CompletionTokens int
	MaxTokens        int
	Reason           string  // finish reason
	TTFTMS, E2EMS    float64 // test engine finish line; -1 when not printed
	Running, Waiting int     // test engine admit line
}
