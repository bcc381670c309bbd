package serverlog

import (
	"fmt"
	"io"
	"sort"
	"time"
)

// Evidence points at the line that supports a finding, for quoting.
type Evidence struct {
	Line int64
	Raw  string
}

// Summary is what a log says about a run at a glance: what `headroom
// inspect-log` prints. Maxima carry the line they came from.
type Summary struct {
	Engine     Engine
	Generation string // vLLM "V0" or "V1" when the log says
	// GenerationInferred is true when no start-up line named the
	// generation and Generation comes from the shape of the log's lines
	// (source files, process prefixes, stats fields).
	GenerationInferred bool
	Version            string
	Model              string

	// Config holds the well-known facts (Fact* keys), the last value seen
	// for each, in a stable order.
	Config []Fact
	// NonDefaultArgs holds the arguments the argument dump marks as
	// changed from the defaults, in the order printed.
	NonDefaultArgs []Fact

	Counts Counts // lines read, recognised, unknown, ...

	First, Last               time.Time // earliest and latest event time
	FirstQuality, LastQuality TimeQuality

	StatsLines int
	KVUsageMax float64 // fraction 0..1, -1 when no line reported it
	KVUsageAt  Evidence
	RunningMax int // -1 when no line reported it
	RunningAt  Evidence
	WaitingMax int // -1 when no line reported it
	WaitingAt  Evidence
	SwappedMax int // -1 when no line reported it
	SwappedAt  Evidence
	// GenerationTokensPerSMax is the highest generation throughput a stats
	// line reported.
	GenerationTokensPerSMax float64

	// Preemptions is the best lower bound of the number of evicted
	// requests: the larger of the sum over preemption lines and the
	// engine's own cumulative count (vLLM V0 logs only every 50th
	// preemption but prints the running total).
	Preemptions       int
	PreemptionLines   int
	PreemptionsByMode map[string]int
	FirstPreemption   Evidence

	Errors     map[string]int // error lines by Problem class
	Warnings   map[string]int // warning lines by Problem class
	FirstError Evidence
	// Crash is the class of the first fatal error (the engine died, failed
	// to start, was killed, hung), "" when the log shows none; CrashAt is
	// its line.
	Crash   string
	CrashAt Evidence

	// llama.cpp
	SlotLaunches, SlotReleases int
	ContextShifts, KVFull      int
	// KVEvictions are idle slots' cached prompts dropped to make room
	// (KindKVEvict): cache reuse lost, not requests held back.
	KVEvictions              int
	PromptTokens, EvalTokens int     // summed over "prompt eval" and "eval" timing lines
	PromptMS, EvalMS         float64 // time spent on them

	HTTPStatus map[int]int    // HTTP status counts from access lines
	Requests   map[string]int // request lifecycle lines by action

	SyntaxErrors []*SyntaxError
}

// Summarizer accumulates a Summary from a stream of events.
type Summarizer struct {
	sum     Summary
	config  map[string]string
	order   []string
	preSum  int
	preCum  int
	genHint string
}

// NewSummarizer returns an empty Summarizer.
func NewSummarizer() *Summarizer {
	return &Summarizer{
		sum: Summary{
			KVUsageMax: -1, RunningMax: -1, WaitingMax: -1, SwappedMax: -1,
			PreemptionsByMode: map[string]int{}, Errors: map[string]int{}, Warnings: map[string]int{},
			HTTPStatus: map[int]int{}, Requests: map[string]int{},
		},
		config: map[string]string{},
	}
}

// configOrder is the order well-known facts are reported in.
var configOrder = []string{
	FactVersion, FactEngineGeneration, FactModel, FactArchitecture, FactDtype, FactQuantization, FactKVCacheDtype,
	FactMaxModelLen, FactTensorParallel, FactPipelineParallel, FactGPUMemoryUtilization, FactMaxNumSeqs,
	FactMaxRunningRequests, FactMaxBatchedTokens, FactChunkedPrefill, FactPrefixCaching,
	FactWeightsGiB, FactKVCacheGiB, FactKVCacheTokens, FactKVCacheBlocksGPU, FactKVCacheBlocksCPU,
	FactMaxConcurrency, FactMaxConcurrencyTokens, FactContextSize, FactSlotContext, FactSlots,
	FactCUDAGraph, FactCUDAGraphSeconds, FactCUDAGraphGiB, FactPlatform, FactListening,
}

// Add folds one event into the summary.
func (z *Summarizer) Add(ev *Event) {
	s := &z.sum
	if s.Engine == EngineUnknown {
		s.Engine = ev.Engine
	}
	if z.genHint == "" && ev.Generation != "" {
		z.genHint = ev.Generation
	}
	if !ev.Time.IsZero() {
		if s.First.IsZero() || ev.Time.Before(s.First) {
			s.First, s.FirstQuality = ev.Time, ev.TimeQuality
		}
		if s.Last.IsZero() || ev.Time.After(s.Last) {
			s.Last, s.LastQuality = ev.Time, ev.TimeQuality
		}
	}
	switch ev.Kind {
	case KindStats:
		z.addStats(ev)
	case KindPreemption:
		p := &ev.Preemption
		s.PreemptionLines++
		s.PreemptionsByMode[p.Mode] += p.Count
		z.preSum += p.Count
		if p.CumulativeKnown && p.Cumulative > z.preCum {
			z.preCum = p.Cumulative
		}
		if s.FirstPreemption.Line == 0 {
			s.FirstPreemption = Evidence{ev.Line, ev.Raw}
		}
	case KindConfig:
		for _, f := range ev.Facts {
			if len(f.Key) > 4 && f.Key[:4] == "arg." {
				if f.NonDefault {
					s.NonDefaultArgs = appendOrReplace(s.NonDefaultArgs, Fact{Key: f.Key[4:], Value: f.Value, NonDefault: true})
				}
				continue
			}
			if _, seen := z.config[f.Key]; !seen {
				z.order = append(z.order, f.Key)
			}
			z.config[f.Key] = f.Value
		}
	case KindError:
		s.Errors[ev.Problem.Class]++
		if s.FirstError.Line == 0 {
			s.FirstError = Evidence{ev.Line, ev.Raw}
		}
		if ev.Problem.Fatal && s.Crash == "" {
			s.Crash, s.CrashAt = ev.Problem.Class, Evidence{ev.Line, ev.Raw}
		}
	case KindWarning:
		s.Warnings[ev.Problem.Class]++
	case KindSlot:
		switch ev.Slot.Action {
		case SlotLaunch:
			s.SlotLaunches++
		case SlotRelease:
			s.SlotReleases++
		}
	case KindContextShift:
		s.ContextShifts++
	case KindKVFull:
		s.KVFull++
	case KindKVEvict:
		s.KVEvictions++
	case KindTiming:
		t := &ev.Timing
		switch t.Phase {
		case TimingPrompt:
			if t.Tokens > 0 {
				s.PromptTokens += t.Tokens
			}
			s.PromptMS += t.MS
		case TimingEval:
			if t.Tokens > 0 {
				s.EvalTokens += t.Tokens
			}
			s.EvalMS += t.MS
		}
	case KindRequest:
		s.Requests[ev.Request.Action]++
		if ev.Request.Action == RequestHTTP {
			s.HTTPStatus[ev.Request.Status]++
		}
	}
}

func appendOrReplace(fs []Fact, f Fact) []Fact {
	for i := range fs {
		if fs[i].Key == f.Key {
			fs[i] = f
			return fs
		}
	}
	return append(fs, f)
}

func (z *Summarizer) addStats(ev *Event) {
	s := &z.sum
	st := &ev.Stats
	s.StatsLines++
	if st.Has(FieldKVUsage) && st.KVUsage > s.KVUsageMax {
		s.KVUsageMax, s.KVUsageAt = st.KVUsage, Evidence{ev.Line, ev.Raw}
	}
	if st.Has(FieldRunning) && st.Running > s.RunningMax {
		s.RunningMax, s.RunningAt = st.Running, Evidence{ev.Line, ev.Raw}
	}
	if st.Has(FieldWaiting) && st.Waiting > s.WaitingMax {
		s.WaitingMax, s.WaitingAt = st.Waiting, Evidence{ev.Line, ev.Raw}
	}
	if st.Has(FieldSwapped) && st.Swapped > s.SwappedMax {
		s.SwappedMax, s.SwappedAt = st.Swapped, Evidence{ev.Line, ev.Raw}
	}
	if st.Has(FieldGenerationThroughput) && st.GenerationTokensPerS > s.GenerationTokensPerSMax {
		s.GenerationTokensPerSMax = st.GenerationTokensPerS
	}
}

// SetCounts records the scanner's line counts and syntax errors.
func (z *Summarizer) SetCounts(c Counts, errs []*SyntaxError) {
	z.sum.Counts = c
	z.sum.SyntaxErrors = errs
}

// SetScanner records what the scanner saw beyond its events: line counts,
// syntax errors and the vLLM generation the lines' shapes showed.
func (z *Summarizer) SetScanner(s *Scanner) {
	z.SetCounts(s.Counts(), s.SyntaxErrors())
	if z.genHint == "" {
		z.genHint = s.Generation()
	}
}

// Summary returns the summary of the events added so far.
func (z *Summarizer) Summary() Summary {
	s := z.sum
	s.Preemptions = z.preSum
	if z.preCum > s.Preemptions {
		s.Preemptions = z.preCum
	}
	rank := map[string]int{}
	for i, k := range configOrder {
		rank[k] = i
	}
	keys := append([]string(nil), z.order...)
	sort.SliceStable(keys, func(i, j int) bool {
		ri, oki := rank[keys[i]]
		rj, okj := rank[keys[j]]
		switch {
		case oki && okj:
			return ri < rj
		case oki != okj:
			return oki
		}
		return false
	})
	s.Config = nil
	for _, k := range keys {
		s.Config = append(s.Config, Fact{Key: k, Value: z.config[k]})
	}
	s.Version = z.config[FactVersion]
	s.Generation = z.config[FactEngineGeneration]
	if s.Generation == "" && z.genHint != "" && (s.Engine == EngineVLLM || s.Engine == EngineUnknown) {
		s.Generation, s.GenerationInferred = z.genHint, true
	}
	s.Model = z.config[FactModel]
	s.NonDefaultArgs = append([]Fact(nil), s.NonDefaultArgs...)
	return s
}

// Summarize summarises a slice of events (without line counts; see
// ScanSummary for a whole log).
func Summarize(events []Event) Summary {
	z := NewSummarizer()
	for i := range events {
		z.Add(&events[i])
	}
	return z.Summary()
}

// ScanSummary reads a whole log and summarises it in bounded memory. It
// returns the summary so far together with a read error.
func ScanSummary(r io.Reader, opts Options) (Summary, error) {
	s := NewScanner(r, opts)
	z := NewSummarizer()
	for s.Scan() {
		z.Add(s.Event())
	}
	z.SetScanner(s)
	sum := z.Summary()
	if sum.Engine == EngineUnknown {
		sum.Engine = s.Engine()
	}
	if err := s.Err(); err != nil {
		return sum, fmt.Errorf("serverlog: %w", err)
	}
	return sum, nil
}

// PreemptionLogging says how much a log's silence about preemptions is
// worth: whether "no preemption line" means "no preemption".
type PreemptionLogging uint8

// How completely engines log preemptions.
const (
	// PreemptionsNotLogged: the engine does not log preemptions (vLLM V1,
	// llama.cpp), or it is not known which engine or vLLM generation wrote
	// the log. A missing line proves nothing; use the engine's metric
	// (vllm:num_preemptions_total).
	PreemptionsNotLogged PreemptionLogging = iota
	// PreemptionsSampled: vLLM V0 logs the 1st, 51st, 101st, ...
	// preemption, each with the running total. A log with no preemption
	// line had none; a stretch without lines after the first one may have
	// had up to 49.
	PreemptionsSampled
	// PreemptionsAll: every preemption or retraction is a line (SGLang, the
	// test engine, transformers-cb). A stretch of log without one had none.
	PreemptionsAll
)

var preemptionLoggingNames = [...]string{"not-logged", "sampled", "all"}

func (p PreemptionLogging) String() string {
	if int(p) < len(preemptionLoggingNames) {
		return preemptionLoggingNames[p]
	}
	return fmt.Sprintf("preemptionlogging(%d)", p)
}

// PreemptionLogging says how completely the summarised log records
// preemptions.
func (s *Summary) PreemptionLogging() PreemptionLogging {
	switch s.Engine {
	case EngineSGLang, EngineNodeLlamaCpp, EngineTransformersCB:
		return PreemptionsAll
	case EngineVLLM:
		// V1 has no preemption log line; a preemption line means V0.
		if s.Generation == "V0" || (s.Generation == "" && s.PreemptionLines > 0) {
			return PreemptionsSampled
		}
	}
	return PreemptionsNotLogged
}
