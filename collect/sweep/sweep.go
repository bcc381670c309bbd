package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/headroom-llm/headroom/collect/loadgen"
	"github.com/headroom-llm/headroom/collect/server"
	"github.com/headroom-llm/headroom/rundir"
)

// ErrMaxErrorRate is returned (wrapped) when a level's error rate stopped
// the sweep.
var ErrMaxErrorRate = loadgen.ErrMaxErrorRate

// Recorder receives a sweep's rows. Request and ClientSample are called
// concurrently; LevelDone is called once per level after its last request.
type Recorder = loadgen.Sink

// Progress is a snapshot of the level in progress.
type Progress = loadgen.Progress

// Result says how a Run ended.
type Result = loadgen.Result

// Sweep is a configured sweep: the workload (levels, prompts, lengths) that
// it hands to the load generator (collect/loadgen), and the session around
// it that Record runs (server, log, telemetry, run directory). Make one
// with New.
type Sweep struct {
	cfg  config
	base *url.URL // the server, or replica 0 of several
	// bases are every replica's address when the sweep spreads its load
	// over several servers (--base-url URL1,URL2); len 1 otherwise.
	bases []*url.URL
	gen   *loadgen.Generator
	clock loadgen.Clock

	model string // from the options or the server
	// runID prefixes every request id so that ids are unique across runs
	// (rundir.RequestID); Record sets it to the run's id.
	runID string
	// clockOffsetNS is this host's clock minus the shards' reference
	// clock (a shard, once measured).
	clockOffsetNS int64

	out outcomes

	prepared   bool
	startLevel int // first level to run (a resumed sweep)
	// secrets is the one redaction pass of everything the sweep writes or
	// prints: the API key, the base URL's credentials, what the server
	// command and headroom's own free-text flags hide.
	secrets *server.Secrets
	prompts *promptBuilder
	dataset []datasetRecord
	// datasetStats is what the dataset gave; maxModelLen the context its
	// prompts were filtered to.
	datasetStats *rundir.DatasetSample
	maxModelLen  int
	// trace is the trace's requests, read by New.
	trace       []traceRow
	traceFormat string
	traceCfg    *Trace
	// datasetRecs are the dataset file's records, read by New.
	datasetRecs []datasetRecord
	// dialogs are the dataset's conversations sent as multi-turn sessions
	// (WithSessions with a dataset), counted by Prepare.
	dialogs       [][]dialogTurn
	datasetFormat string
	tokenizer     tokenizer

	// The adaptive drivers (--find-max, --stop-when-saturated) and what
	// they judge levels on.
	extra      json.RawMessage // the extra body fields, encoded once
	search     *search
	saturating *saturating
	levelLog   levelLog

	mu       sync.Mutex
	samples  []rundir.ClientSampleRow
	warnings []string
	notes    []string
}

// New checks the options and returns a sweep against baseURL (the server's
// address, with or without /v1; or several replicas' addresses separated by
// commas, over which the requests are spread). It does not contact the
// server.
func New(baseURL string, opts ...Option) (*Sweep, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, fmt.Errorf("sweep: %w", err)
		}
	}
	bases, err := parseBaseURLs(baseURL)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	if err := cfg.checkReplicas(len(bases)); err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	u := bases[0]
	cfg.baseURL = u
	if cfg.sharedPrefix > 0 && cfg.dataset == "" && float64(cfg.sharedPrefix) >= cfg.prompt.Mean {
		return nil, fmt.Errorf("sweep: shared prefix of %d tokens leaves nothing unique in prompts of %v tokens", cfg.sharedPrefix, cfg.prompt.Mean)
	}
	if err := cfg.checkShard(); err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	if cfg.sharedPrefix > 0 && cfg.dataset != "" {
		return nil, errors.New("sweep: a shared prefix and a dataset do not mix: put the prefix in the dataset")
	}
	if err := checkAdaptive(&cfg); err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	if err := checkSessions(&cfg); err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	s := &Sweep{cfg: cfg, base: u, bases: bases, model: cfg.model, clock: loadgen.NewClock()}
	s.secrets = s.collectSecrets()
	logf := cfg.logf
	s.cfg.logf = func(format string, args ...any) { logf("%s", s.secrets.String(fmt.Sprintf(format, args...))) }
	var urls []string
	if len(bases) > 1 {
		for i := range bases {
			urls = append(urls, s.replicaURL(i, s.endpointPath()))
		}
	}
	g, err := loadgen.New(loadgen.Config{
		URL: s.url(s.endpointPath()), URLs: urls, Balance: cfg.balance, Chat: cfg.endpoint == EndpointChat, Model: s.model, Header: s.header(),
		Client: cfg.httpClient, MaxConns: s.maxConcurrency(), Timeout: cfg.timeout, Temperature: cfg.temperature,
		FixedOutput: cfg.fixedOutput, MaxErrorRate: cfg.maxErrorRate, SampleInterval: cfg.sampleInterval,
		Clock: s.clock, Progress: cfg.progress, ChunkObserver: cfg.chunkObserver,
		OnFallback: func(msg string) { s.cfg.logf("warning: %s", msg) },
	})
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	s.gen = g
	if len(cfg.extraBody) > 0 {
		if s.extra, err = json.Marshal(cfg.extraBody); err != nil {
			return nil, fmt.Errorf("sweep: extra body: %w", err)
		}
	}
	if d := cfg.datasetCfg; d != nil {
		// Read now: a bad file is a usage error, before any server is
		// contacted or run directory made.
		if s.datasetRecs, s.datasetFormat, err = readDataset(d.Path, d.Name); err != nil {
			return nil, fmt.Errorf("sweep: %w", err)
		}
	}
	if t := cfg.traceCfg; t != nil {
		s.traceCfg = t
		if s.trace, s.traceFormat, err = readTrace(t.Path, t.Format); err != nil {
			return nil, fmt.Errorf("sweep: %w", err)
		}
	}
	if cfg.findMax != nil {
		s.search = newSearch(s, *cfg.findMax)
	}
	if cfg.stopWhenSaturated {
		s.saturating = &saturating{s: s}
	}
	return s, nil
}

// checkAdaptive checks how a search, a ramp and the saturation stop combine
// with the levels, and fills the search's defaults.
func checkAdaptive(c *config) error {
	if c.traceCfg != nil {
		switch {
		case c.dataset != "":
			return errors.New("a trace brings its own lengths: give a trace or a dataset")
		case c.ramp != nil || c.findMax != nil || c.stopWhenSaturated:
			return errors.New("a trace is replayed at its own times: it cannot be ramped, searched or stopped at saturation (give several speeds instead)")
		case c.durationPerLevel > 0:
			return errors.New("a trace is replayed to its end: leave out the duration per level")
		case c.sharedPrefix > 0:
			return errors.New("a trace's shared prefixes come from its hash ids: leave out the shared prefix")
		}
		if len(c.rates) > 1 {
			return errors.New("a trace's arrivals are its own: give the cap on requests in flight, not rates")
		}
	}
	if r := c.ramp; r != nil {
		switch {
		case len(c.rates) > 0:
			return errors.New("a ramp sets the arrival rate itself: give either --rate or a ramp")
		case c.durationPerLevel > 0:
			return errors.New("a ramp runs over a number of requests, not a duration")
		case c.findMax != nil || c.stopWhenSaturated:
			return errors.New("a ramp is one level: it cannot be searched or stopped at saturation")
		}
	}
	f := c.findMax
	if f == nil {
		return nil
	}
	if c.stopWhenSaturated {
		return errors.New("a search (--find-max) ends by itself: --stop-when-saturated applies to a sweep of given levels")
	}
	if len(c.rates) > 0 {
		if len(c.rates) != 1 {
			return errors.New("a search of the arrival rate starts from one rate")
		}
		if f.Start == 0 {
			f.Start = c.rates[0]
		}
		if f.Limit == 0 {
			f.Limit = 1024 * f.Start
		}
		if f.Precision == 0 {
			return errors.New("a search of the arrival rate needs a precision above 0")
		}
	} else {
		if f.Start == 0 {
			f.Start = 1
		}
		if f.Limit == 0 {
			f.Limit = DefaultFindMaxLimit
		}
		if f.Start != math.Trunc(f.Start) || f.Limit != math.Trunc(f.Limit) {
			return fmt.Errorf("a search of concurrency runs from %v to %v: want whole numbers", f.Start, f.Limit)
		}
	}
	if f.Limit < f.Start {
		return fmt.Errorf("search limit %v below its start %v", f.Limit, f.Start)
	}
	return nil
}

func (s *Sweep) url(path string) string {
	u := *s.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	return u.String()
}

// header is what every request to the server carries: the headers given
// and the API key.
func (s *Sweep) header() http.Header {
	h := s.cfg.headers.Clone()
	if h == nil {
		h = http.Header{}
	}
	if s.cfg.apiKey != "" {
		h.Set("Authorization", "Bearer "+s.cfg.apiKey)
	}
	return h
}

// hostPort is the server's host:port, with the scheme's port when the URL
// has none.
func (s *Sweep) hostPort() string {
	port := s.base.Port()
	if port == "" {
		port = "80"
		if s.base.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(s.base.Hostname(), port)
}

// BaseURL is the server's address without credentials, for the manifest.
func (s *Sweep) BaseURL() string { return server.RedactURL(s.base.String()) }

// Model is the model the sweep sends (known after Prepare).
func (s *Sweep) Model() string { return s.model }

// Clock converts a time to Unix ns on the sweep's time base (one
// wall-clock reading plus the monotonic clock).
func (s *Sweep) Clock() func(time.Time) int64 { return s.clock.NS }

// HTTPClient is the client the sweep uses (for telemetry on the same server).
func (s *Sweep) HTTPClient() *http.Client { return s.gen.HTTPClient() }

// Redact removes every secret the sweep knows from a message (for a caller
// that prints something of the sweep's).
func (s *Sweep) Redact(msg string) string { return s.secrets.String(msg) }

func (s *Sweep) maxConcurrency() int {
	if len(s.cfg.rates) > 0 || s.cfg.ramp != nil || s.cfg.traceCfg != nil {
		return s.cfg.maxConc
	}
	m := 1
	if s.cfg.findMax != nil {
		m = int(s.cfg.findMax.Limit)
	}
	for _, l := range s.cfg.levels {
		m = max(m, l)
	}
	return m
}

// warn records a warning, redacted, and prints it.
func (s *Sweep) warn(msg string) {
	msg = s.secrets.String(msg)
	s.mu.Lock()
	s.warnings = append(s.warnings, msg)
	s.mu.Unlock()
	s.cfg.logf("warning: %s", msg)
}

func (s *Sweep) note(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notes = append(s.notes, s.secrets.String(msg))
}

// Prepare asks the server what it needs before the first level: the model
// (first of /v1/models when none was given), a tokenizer to size prompts
// (/tokenize, else usage counts), and whether min_tokens/ignore_eos and
// include_usage are accepted (one short request). Run calls it if needed.
func (s *Sweep) Prepare(ctx context.Context) error {
	if s.prepared {
		return nil
	}
	err := s.prepare(ctx)
	if ctx.Err() != nil {
		// Interrupted (or stopped): whatever a step made of it, the
		// cancellation is the reason.
		return fmt.Errorf("sweep: preparing: %w", context.Cause(ctx))
	}
	return err
}

func (s *Sweep) prepare(ctx context.Context) error {
	served, err := s.servedModel(ctx)
	if s.model == "" {
		if err != nil {
			return fmt.Errorf("sweep: no --model given and %s did not list one: %w", s.url("/v1/models"), err)
		}
		s.model = served.id
	}
	s.maxModelLen = s.cfg.maxModelLen
	if s.maxModelLen == 0 && served.id == s.model {
		s.maxModelLen = served.maxModelLen
	}
	s.gen.SetModel(s.model)
	s.tokenizer = s.findTokenizer(ctx)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// One short request: checks the endpoint, and meets a rejection of
	// min_tokens/ignore_eos/include_usage before the first level.
	usage, err := s.probeRequest(ctx, " "+strings.Join(promptWords[:8], " "), 4)
	if err != nil {
		return fmt.Errorf("sweep: first request to %s failed: %w", s.url(s.endpointPath()), err)
	}
	if err := s.probeReplicas(ctx); err != nil {
		return err
	}
	if s.cfg.datasetCfg != nil && s.cfg.sessions != nil {
		if err := s.prepareDialogs(ctx); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
	} else if s.cfg.datasetCfg != nil {
		if err := s.prepareDataset(ctx); err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
	} else if err := s.preparePrompts(ctx, usage >= 0); err != nil {
		return fmt.Errorf("sweep: sizing prompts: %w", err)
	}
	s.prepared = true
	return nil
}

// endpointPath is the path requests go to.
func (s *Sweep) endpointPath() string {
	if s.cfg.endpointPath != "" {
		return s.cfg.endpointPath
	}
	return pathOf(s.cfg.endpoint)
}

func pathOf(e Endpoint) string {
	if e == EndpointChat {
		return pathChat
	}
	return pathCompletions
}

// servedModel is the first model /v1/models lists, with the context it
// reports (vLLM's and the test engine's max_model_len; 0 when not told).
type servedModel struct {
	id          string
	maxModelLen int
}

func (s *Sweep) servedModel(ctx context.Context) (servedModel, error) {
	var out struct {
		Data []struct {
			ID          string `json:"id"`
			MaxModelLen int    `json:"max_model_len"`
		} `json:"data"`
	}
	if err := s.getJSON(ctx, "/v1/models", &out); err != nil {
		return servedModel{}, err
	}
	if len(out.Data) == 0 || out.Data[0].ID == "" {
		return servedModel{}, errors.New("the list is empty")
	}
	for _, d := range out.Data {
		if d.ID == s.model {
			return servedModel{id: d.ID, maxModelLen: d.MaxModelLen}, nil
		}
	}
	return servedModel{id: out.Data[0].ID, maxModelLen: out.Data[0].MaxModelLen}, nil
}

// probeRequest sends one short streamed request outside any level and
// returns the server's prompt token count (-1 if it reports none).
func (s *Sweep) probeRequest(ctx context.Context, prompt string, maxTokens int) (int64, error) {
	// The extra body fields go along: a server that rejects one says so
	// before the first level.
	row, _ := s.gen.DoAt(ctx, 0, loadgen.Request{ID: "probe", Prompt: prompt, MaxTokens: maxTokens, Extra: s.extra})
	if row.Status != rundir.StatusOK && row.Status != rundir.StatusNoTokens {
		return -1, errors.New(row.Error)
	}
	if row.ServerPromptTokens == nil {
		return -1, nil
	}
	return *row.ServerPromptTokens, nil
}

// preparePrompts calibrates the prompt builder: per-word costs from the
// server's tokenizer, else a fit of usage counts, else the seed's rule.
func (s *Sweep) preparePrompts(ctx context.Context, haveUsage bool) error {
	words := promptWords[:]
	var b *promptBuilder
	if s.tokenizer != nil {
		var err error
		if b, err = calibrateWithTokenizer(ctx, s.tokenizer, words); err != nil {
			s.note("server /tokenize failed during calibration (" + err.Error() + "); prompts sized from usage counts")
			b = nil
		}
	}
	if b == nil && haveUsage {
		// two prompts of different lengths: tokens = base + perWord × words
		rng := rand.New(rand.NewPCG(uint64(s.cfg.seed), 7))
		gen := func(n int) string {
			var sb strings.Builder
			for range n {
				sb.WriteByte(' ')
				sb.WriteString(words[rng.IntN(len(words))])
			}
			return sb.String()
		}
		const w1, w2 = 40, 400
		p1, err1 := s.probeRequest(ctx, gen(w1), 1)
		p2, err2 := s.probeRequest(ctx, gen(w2), 1)
		if err1 == nil && err2 == nil && p1 > 0 && p2 > p1 {
			perWord := float64(p2-p1) / (w2 - w1)
			base := float64(p1) - w1*perWord
			b = calibrated(words, base, perWord, fmt.Sprintf("calibrated from usage: %.3f tokens per word + %.0f", perWord, base))
		}
	}
	if b == nil {
		b = calibrated(words, 1, seedTokensPerWord, "assumed 1.3 tokens per word (the server reports neither /tokenize nor usage)")
		s.warn("prompt lengths are estimates: the server offers neither /tokenize nor usage counts")
	}
	b.withPrefix(rand.New(rand.NewPCG(uint64(s.cfg.seed), 0x5eed)), s.cfg.sharedPrefix)
	s.prompts = b
	return nil
}

// plan is the sweep's levels for the load generator: closed-loop
// concurrencies, open-loop schedules seeded by (seed, level), or one ramp.
func (s *Sweep) plan() []loadgen.Level {
	var ls []loadgen.Level
	switch {
	case s.traceCfg != nil:
		for i, v := range s.traceCfg.Speeds {
			ls = append(ls, s.traceLevel(i, v))
		}
	case s.cfg.ramp != nil:
		ls = []loadgen.Level{s.rampLevel()}
	case len(s.cfg.rates) > 0:
		for i, r := range s.cfg.rates {
			ls = append(ls, s.levelAt(i, r))
		}
	default:
		for i, c := range s.cfg.levels {
			ls = append(ls, s.levelAt(i, float64(c)))
		}
	}
	return ls
}

// ownPlan is the levels this host runs: the plan, or this shard's share of
// it. (plan itself stays the whole plan: the workload, the dataset's pool
// and a resume are the plan's on every shard.)
func (s *Sweep) ownPlan() []loadgen.Level {
	ls := s.plan()
	if sp := s.cfg.shard; sp != nil {
		for i := range ls {
			ls[i] = sp.shardLevel(ls[i], s.clockOffsetNS)
		}
	}
	return ls
}

// arrivals is the open-loop schedule of level li: gamma gaps of the given
// rate and the sweep's burstiness (1: Poisson) from an RNG seeded by
// (seed, level).
func (s *Sweep) arrivals(li int, rate float64) loadgen.Schedule {
	return loadgen.Gamma(rate, s.cfg.burstiness, s.levelRNG(li))
}

func (s *Sweep) levelRNG(li int) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(s.cfg.seed), uint64(li)<<40|0xa771))
}

// rampLevel is the one level of a ramp: its warm-up and measured requests
// arrive at a rate moving from the ramp's start to its end; the level row
// records the mean rate.
func (s *Sweep) rampLevel() loadgen.Level {
	r := s.cfg.ramp
	l := loadgen.Level{Concurrency: s.cfg.maxConc, RateRPS: (r.start + r.end) / 2}
	l.Warmup, l.Requests = s.warmupCount(l), s.measuredCount(l)
	l.Arrivals, _ = loadgen.Ramp(r.kind, r.start, r.end, l.Warmup+l.Requests, s.cfg.burstiness, s.levelRNG(0)) // checked in New
	return l
}

// Next decides request seq of level l (the sweep is the load generator's
// Source): prompt and lengths come from an RNG seeded by (seed, level, seq),
// so a workload does not depend on timing.
func (s *Sweep) Next(l loadgen.Level, seq int, warmup bool) loadgen.Request {
	li := l.Index
	rng := rand.New(rand.NewPCG(uint64(s.cfg.seed), uint64(li)<<40|uint64(seq)))
	r := loadgen.Request{ID: rundir.RequestID(s.runID, li, seq), MaxTokens: s.cfg.output.Sample(rng), Extra: s.extra}
	if s.trace != nil {
		row := s.trace[seq%len(s.trace)]
		in, out, _ := traceLengths(row, s.maxModelLen)
		r.Prompt, r.PromptTokens = s.tracePrompt(row, in, seq)
		r.MaxTokens = out
		return r
	}
	if s.dataset != nil {
		// Every level sends the dataset's records in the same order.
		rec := s.dataset[seq%len(s.dataset)]
		r.Prompt, r.Messages, r.PromptTokens = rec.prompt, rec.messages, rec.promptTokens
		if rec.outputTokens > 0 {
			r.MaxTokens = rec.outputTokens
		}
		return r
	}
	r.PromptTokens = s.cfg.prompt.Sample(rng)
	levels := uint64(max(len(s.cfg.levels), len(s.cfg.rates)))
	if s.search != nil {
		levels = maxSearchLevels // a search's levels are not known ahead
	}
	r.Prompt, r.PromptTokens = s.prompts.build(rng, r.PromptTokens, uint64(seq)*levels+uint64(li))
	return r
}

// Run prepares the sweep if needed, runs every level (from the first that
// a resume has not done) and hands the rows to rec, redacted. See
// loadgen.Generator.Run for how it stops.
func (s *Sweep) Run(ctx context.Context, rec Recorder) (*Result, error) {
	if err := s.Prepare(ctx); err != nil {
		reason := "error"
		if ctx.Err() != nil {
			reason = "interrupted"
		}
		return &Result{Stopped: &rundir.Stopped{Reason: reason, Phase: "prepare", Error: err.Error()}}, err
	}
	p, err := s.planner()
	if err != nil {
		return &Result{Stopped: &rundir.Stopped{Reason: "error", Phase: "prepare", Error: err.Error()}}, err
	}
	return s.gen.RunPlanner(ctx, p, s, &observed{s: s, next: rec})
}

// observed is the sink between the load generator and a Recorder: it
// removes the secrets from what the server answered and keeps the counts
// and client samples the manifest's caveats need.
type observed struct {
	s    *Sweep
	next Recorder
}

func (o *observed) Request(row rundir.RequestRow, tokens []rundir.TokenRow) {
	// Servers and proxies may echo credentials in error bodies.
	row.Error, row.FinishReason = o.s.secrets.String(row.Error), o.s.secrets.String(row.FinishReason)
	o.s.out.add(&row)
	if o.s.search != nil || o.s.saturating != nil {
		o.s.levelLog.add(&row, tokens)
	}
	o.next.Request(row, tokens)
}

func (o *observed) ClientSample(row rundir.ClientSampleRow) {
	o.s.mu.Lock()
	o.s.samples = append(o.s.samples, row)
	o.s.mu.Unlock()
	o.next.ClientSample(row)
}

func (o *observed) LevelDone(row rundir.LevelRow) error { return o.next.LevelDone(row) }
