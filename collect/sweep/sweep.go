package sweep

import (
	"context"
	"errors"
	"fmt"
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
	cfg   config
	base  *url.URL
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
	secrets   *server.Secrets
	prompts   *promptBuilder
	dataset   []datasetRecord
	tokenizer tokenizer

	mu       sync.Mutex
	samples  []rundir.ClientSampleRow
	warnings []string
	notes    []string
}

// New checks the options and returns a sweep against baseURL (the server's
// address, with or without /v1). It does not contact the server.
func New(baseURL string, opts ...Option) (*Sweep, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if err := o(&cfg); err != nil {
			return nil, fmt.Errorf("sweep: %w", err)
		}
	}
	u, err := parseBaseURL(baseURL)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
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
	s := &Sweep{cfg: cfg, base: u, model: cfg.model, clock: loadgen.NewClock()}
	s.secrets = s.collectSecrets()
	logf := cfg.logf
	s.cfg.logf = func(format string, args ...any) { logf("%s", s.secrets.String(fmt.Sprintf(format, args...))) }
	path := pathCompletions
	if cfg.endpoint == EndpointChat {
		path = pathChat
	}
	g, err := loadgen.New(loadgen.Config{
		URL: s.url(path), Chat: cfg.endpoint == EndpointChat, Model: s.model, Header: s.header(),
		Client: cfg.httpClient, MaxConns: s.maxConcurrency(), Timeout: cfg.timeout, Temperature: cfg.temperature,
		FixedOutput: cfg.fixedOutput, MaxErrorRate: cfg.maxErrorRate, SampleInterval: cfg.sampleInterval,
		Clock: s.clock, Progress: cfg.progress, ChunkObserver: cfg.chunkObserver,
		OnFallback: func(msg string) { s.cfg.logf("warning: %s", msg) },
	})
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	s.gen = g
	return s, nil
}

func (s *Sweep) url(path string) string {
	u := *s.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	return u.String()
}

// header is what every request to the server carries: the API key.
func (s *Sweep) header() http.Header {
	h := http.Header{}
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
	if len(s.cfg.rates) > 0 {
		return s.cfg.maxConc
	}
	m := 1
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
	if s.model == "" {
		m, err := s.firstModel(ctx)
		if err != nil {
			return fmt.Errorf("sweep: no --model given and %s did not list one: %w", s.url("/v1/models"), err)
		}
		s.model = m
	}
	s.gen.SetModel(s.model)
	if s.cfg.dataset != "" {
		recs, err := readDataset(s.cfg.dataset)
		if err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		s.dataset = recs
	}
	s.tokenizer = s.findTokenizer(ctx)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	// One short request: checks the endpoint, and meets a rejection of
	// min_tokens/ignore_eos/include_usage before the first level.
	usage, err := s.probeRequest(ctx, " "+strings.Join(promptWords[:8], " "), 4)
	if err != nil {
		return fmt.Errorf("sweep: first request to %s failed: %w", s.url(pathOf(s.cfg.endpoint)), err)
	}
	if s.dataset == nil {
		if err := s.preparePrompts(ctx, usage >= 0); err != nil {
			return fmt.Errorf("sweep: sizing prompts: %w", err)
		}
	} else if s.tokenizer != nil && len(s.dataset) <= 5000 {
		for i := range s.dataset {
			if s.dataset[i].promptTokens == 0 && s.dataset[i].messages == nil {
				n, err := s.tokenizer.count(ctx, s.dataset[i].prompt)
				if err != nil {
					break
				}
				s.dataset[i].promptTokens = n
			}
		}
	}
	s.prepared = true
	return nil
}

func pathOf(e Endpoint) string {
	if e == EndpointChat {
		return pathChat
	}
	return pathCompletions
}

func (s *Sweep) firstModel(ctx context.Context) (string, error) {
	var out struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := s.getJSON(ctx, "/v1/models", &out); err != nil {
		return "", err
	}
	if len(out.Data) == 0 || out.Data[0].ID == "" {
		return "", errors.New("the list is empty")
	}
	return out.Data[0].ID, nil
}

// probeRequest sends one short streamed request outside any level and
// returns the server's prompt token count (-1 if it reports none).
func (s *Sweep) probeRequest(ctx context.Context, prompt string, maxTokens int) (int64, error) {
	row, _ := s.gen.Do(ctx, loadgen.Request{ID: "probe", Prompt: prompt, MaxTokens: maxTokens})
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
// concurrencies, or open-loop Poisson schedules seeded by (seed, level).
func (s *Sweep) plan() []loadgen.Level {
	var ls []loadgen.Level
	if len(s.cfg.rates) > 0 {
		for i, r := range s.cfg.rates {
			ls = append(ls, loadgen.Level{Index: i, Concurrency: s.cfg.maxConc, RateRPS: r, Arrivals: arrivals(s.cfg.seed, i, r)})
		}
	} else {
		for i, c := range s.cfg.levels {
			ls = append(ls, loadgen.Level{Index: i, Concurrency: c})
		}
	}
	for i := range ls {
		ls[i].Warmup, ls[i].Requests, ls[i].Duration = s.warmupCount(ls[i]), s.measuredCount(ls[i]), s.cfg.durationPerLevel
		if sp := s.cfg.shard; sp != nil {
			ls[i] = sp.shardLevel(ls[i], s.clockOffsetNS)
		}
	}
	return ls
}

// arrivals is the open-loop schedule of level li: a Poisson process of the
// given rate from an RNG seeded by (seed, level).
func arrivals(seed int64, li int, rate float64) loadgen.Schedule {
	return loadgen.Poisson(rate, rand.New(rand.NewPCG(uint64(seed), uint64(li)<<40|0xa771)))
}

// Next decides request seq of level l (the sweep is the load generator's
// Source): prompt and lengths come from an RNG seeded by (seed, level, seq),
// so a workload does not depend on timing.
func (s *Sweep) Next(l loadgen.Level, seq int, warmup bool) loadgen.Request {
	li := l.Index
	rng := rand.New(rand.NewPCG(uint64(s.cfg.seed), uint64(li)<<40|uint64(seq)))
	r := loadgen.Request{ID: rundir.RequestID(s.runID, li, seq), MaxTokens: s.cfg.output.Sample(rng)}
	if s.dataset != nil {
		rec := s.dataset[rng.IntN(len(s.dataset))]
		r.Prompt, r.Messages, r.PromptTokens = rec.prompt, rec.messages, rec.promptTokens
		if rec.outputTokens > 0 {
			r.MaxTokens = rec.outputTokens
		}
		return r
	}
	r.PromptTokens = s.cfg.prompt.Sample(rng)
	levels := uint64(max(len(s.cfg.levels), len(s.cfg.rates)))
	r.Prompt = s.prompts.build(rng, r.PromptTokens, uint64(seq)*levels+uint64(li))
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
	plan := s.plan()
	return s.gen.Run(ctx, plan[min(s.startLevel, len(plan)):], s, &observed{s: s, next: rec})
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
	o.next.Request(row, tokens)
}

func (o *observed) ClientSample(row rundir.ClientSampleRow) {
	o.s.mu.Lock()
	o.s.samples = append(o.s.samples, row)
	o.s.mu.Unlock()
	o.next.ClientSample(row)
}

func (o *observed) LevelDone(row rundir.LevelRow) error { return o.next.LevelDone(row) }
