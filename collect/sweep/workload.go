package sweep

import (
	"fmt"
	"github.com/headroom-llm/headroom/collect/loadgen"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/headroom-llm/headroom/rundir"
)

// outcome counters over every successful request, for the manifest's notes
type outcomes struct {
	ok             atomic.Int64
	lengthMismatch atomic.Int64 // completion tokens != requested output tokens
	usageMismatch  atomic.Int64 // client chunks != server completion_tokens
	noUsage        atomic.Int64
}

func (o *outcomes) add(row *rundir.RequestRow) {
	if row.Status != rundir.StatusOK {
		return
	}
	o.ok.Add(1)
	got := row.ClientChunks
	if row.ServerCompletionTokens != nil {
		got = *row.ServerCompletionTokens
		if got != row.ClientChunks {
			o.usageMismatch.Add(1)
		}
	} else {
		o.noUsage.Add(1)
	}
	if got != row.OutputTokensTarget {
		o.lengthMismatch.Add(1)
	}
}

// Workload describes what the sweep sent, for the manifest. Call it after
// Run: whether fixed output lengths held is known only then.
func (s *Sweep) Workload() *rundir.Workload {
	w := &rundir.Workload{
		Endpoint:           string(s.cfg.endpoint),
		EndpointPath:       s.cfg.endpointPath,
		Headers:            slices.Sorted(maps.Keys(s.cfg.headers)),
		ExtraBody:          s.cfg.extraBody,
		Prompt:             s.cfg.prompt.manifest(),
		Output:             s.cfg.output.manifest(),
		SharedPrefixTokens: s.cfg.sharedPrefix,
		Dataset:            s.cfg.dataset,
		Seed:               s.cfg.seed,
		Mode:               "closed",
		RequestsPerLevel:   s.cfg.requestsPerLevel,
		DurationPerLevelS:  s.cfg.durationPerLevel.Seconds(),
		WarmupPerLevel:     s.cfg.warmup,
		Temperature:        s.cfg.temperature,
		TimeoutPerRequest:  s.cfg.timeout.Seconds(),
	}
	if s.cfg.datasetCfg != nil {
		w.Prompt = rundir.Dist{Kind: "dataset"}
		w.DatasetSample = s.datasetStats
	}
	w.MaxModelLen = s.maxModelLen
	switch {
	case s.traceCfg != nil:
		w.Mode, w.MaxConcurrency = "open", s.cfg.maxConc
		w.Trace = s.traceRecord()
		w.Prompt, w.Output = rundir.Dist{Kind: "trace"}, rundir.Dist{Kind: "trace"}
		for _, l := range s.plan() {
			w.RatesRPS = append(w.RatesRPS, l.RateRPS)
		}
	case s.cfg.ramp != nil:
		r := s.cfg.ramp
		w.Mode, w.MaxConcurrency = "open", s.cfg.maxConc
		w.Ramp = &rundir.Ramp{Kind: r.kind, StartRPS: r.start, EndRPS: r.end}
	case len(s.cfg.rates) > 0:
		w.Mode, w.RatesRPS, w.MaxConcurrency = "open", s.cfg.rates, s.cfg.maxConc
	default:
		w.Levels = s.cfg.levels
	}
	if w.Mode == "open" && s.cfg.burstiness != 1 {
		w.Burstiness = s.cfg.burstiness
	}
	if s.search != nil {
		w.Search = s.search.record()
		loads := s.search.loads()
		if len(s.cfg.rates) > 0 {
			w.RatesRPS = loads
		} else {
			w.Levels = make([]int, len(loads))
			for i, x := range loads {
				w.Levels[i] = int(x)
			}
		}
	}
	if ss := s.cfg.sessions; ss != nil {
		w.Sessions = &rundir.SessionsWorkload{Source: "generated", TurnsMean: ss.TurnsMean, TurnsStddev: ss.TurnsStddev, MaxTurns: ss.MaxTurns,
			ThinkMeanS: ss.ThinkMean.Seconds(), ThinkStddevS: ss.ThinkStddev.Seconds(), PerLevel: ss.PerLevel, MeanTurns: s.meanTurns()}
		if s.cfg.datasetCfg != nil {
			w.Sessions.Source = "dataset"
		}
	}
	if s.saturating != nil {
		w.StopWhenSaturated, w.Saturated = true, s.saturating.saturated()
	}
	if s.prompts != nil {
		w.Tokenizer = s.prompts.method
	} else if s.datasetStats != nil {
		w.Tokenizer = s.datasetStats.Tokenizer + " (dataset prompts counted)"
	}
	w.FixedOutput, w.FixedOutputNote = s.fixedOutputState()
	sent := s.gen.FixedOutputSent()
	w.FixedOutputSent = &sent
	maxErr := s.cfg.maxErrorRate
	w.MaxErrorRate = &maxErr
	if s.Replicas() > 1 {
		w.Balance = string(s.cfg.balance)
		if w.Balance == "" {
			w.Balance = string(loadgen.LeastOutstanding)
		}
	}
	return w
}

func (s *Sweep) fixedOutputState() (bool, string) {
	switch {
	case !s.cfg.fixedOutput:
		return false, "min_tokens/ignore_eos not requested (--fixed-output=false): output lengths vary"
	case !s.gen.FixedOutputSent():
		for _, f := range s.gen.Fallbacks() {
			if strings.Contains(f, "min_tokens") {
				return false, s.secrets.String(f)
			}
		}
		return false, "the server rejected min_tokens/ignore_eos"
	}
	ok, bad := s.out.ok.Load(), s.out.lengthMismatch.Load()
	if bad > 0 {
		return false, fmt.Sprintf("min_tokens/ignore_eos were sent and accepted, but %d of %d successful requests generated a different number of tokens than asked: output lengths vary", bad, ok)
	}
	return true, "min_tokens = max_tokens and ignore_eos were sent and every successful request generated exactly the tokens asked"
}

// Warnings are the caveats of the run for the manifest: fallbacks, prompt
// sizing, token count disagreements, and levels where the client was the
// bottleneck.
func (s *Sweep) Warnings(levels []rundir.LevelRow) []string {
	var out []string
	for _, f := range s.gen.Fallbacks() {
		out = append(out, s.secrets.String(f))
	}
	s.mu.Lock()
	out = append(out, s.warnings...)
	samples := append([]rundir.ClientSampleRow(nil), s.samples...)
	s.mu.Unlock()
	if fixed, note := s.fixedOutputState(); !fixed && s.cfg.fixedOutput && s.gen.FixedOutputSent() {
		out = append(out, note)
	}
	if n := s.out.usageMismatch.Load(); n > 0 {
		out = append(out, fmt.Sprintf("%d of %d successful requests streamed a different number of text chunks than the server's completion_tokens: per-token times (TPOT) use the server's count", n, s.out.ok.Load()))
	}
	if n := s.out.noUsage.Load(); n > 0 && s.gen.UsageRequested() {
		out = append(out, fmt.Sprintf("%d of %d successful requests carried no usage counts: their token counts are the client's chunk counts", n, s.out.ok.Load()))
	}
	for _, l := range levels {
		if w := ClientBottleneck(l, samples, s.cfg.cpuWarnFraction, s.cfg.sendLagWarn); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// Notes are facts about the run worth keeping that are not caveats.
func (s *Sweep) Notes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	notes := append([]string(nil), s.notes...)
	if s.cfg.requestsPerLevel == 0 && s.cfg.durationPerLevel == 0 {
		notes = append(notes, fmt.Sprintf("measured requests per level: 4 × concurrency, at least %d so that p99 is a tail estimate (open loop: 16 s of arrivals, at least %d)", DefaultMinRequestsPerLevel, DefaultMinRequestsPerLevel))
	}
	if s.cfg.warmup < 0 {
		notes = append(notes, "warm-up per level: one request per concurrent stream (open loop: 1 s of arrivals), kept and marked warmup")
	}
	if ss := s.cfg.sessions; ss != nil && ss.PerLevel == 0 && s.cfg.durationPerLevel == 0 {
		notes = append(notes, fmt.Sprintf("measured sessions per level: the level's measured requests (4 × concurrency, at least %d, or --requests-per-level) divided by the mean of %.1f turns per session, at least one per concurrent session", DefaultMinRequestsPerLevel, s.meanTurns()))
	}
	return notes
}

// checkContext returns an error when the longest request the workload asks
// for (output, or prompt plus output) exceeds maxCtx tokens.
func (s *Sweep) checkContext(maxCtx int) error {
	if s.trace != nil || s.dialogs != nil {
		return nil // a trace's prompts are cut to fit (traceLengths); dataset sessions were filtered to fit
	}
	out, prompt, what := s.cfg.output.upper(), s.cfg.prompt.upper(), "--output-tokens"
	if s.dataset != nil {
		// Per record: the longest prompt and output of the same request.
		prompt, out, what = 0, 0, "the dataset's output_tokens"
		for _, r := range s.dataset {
			o := r.outputTokens
			if o == 0 {
				o = s.cfg.output.upper()
			}
			if r.promptTokens+o > prompt+out {
				prompt, out = r.promptTokens, o
			}
		}
	}
	switch {
	case out > maxCtx:
		return fmt.Errorf("%s asks for up to %d tokens, more than the server's context of %d (max_model_len)", what, out, maxCtx)
	case prompt+out > maxCtx:
		return fmt.Errorf("prompts of up to %d tokens plus %d output tokens exceed the server's context of %d (max_model_len)", prompt, out, maxCtx)
	}
	return nil
}
