package sweep

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/headroom-llm/headroom/collect/server"
	"github.com/headroom-llm/headroom/rundir"
)

// ErrMaxErrorRate is returned (wrapped) when a level's error rate stopped
// the sweep.
var ErrMaxErrorRate = errors.New("error rate above the limit")

// Recorder receives a sweep's rows. Request and ClientSample are called
// concurrently; LevelDone is called once per level after its last request.
type Recorder interface {
	Request(rundir.RequestRow, []rundir.TokenRow)
	ClientSample(rundir.ClientSampleRow)
	LevelDone(rundir.LevelRow) error
}

// Sweep is a configured load generator. Make one with New.
type Sweep struct {
	cfg    config
	base   *url.URL
	client *http.Client
	clock  clock
	genURL string

	model string // from the options or the server
	// runID prefixes every request id so that ids are unique across runs
	// (rundir.RequestID); Record sets it to the run's id.
	runID string

	fixedOutput  atomic.Bool // min_tokens + ignore_eos still sent
	includeUsage atomic.Bool // stream_options.include_usage still sent
	openStreams  atomic.Int64
	out          outcomes
	sendLagMaxNS atomic.Int64 // largest send lag since the last client sample

	prepared     bool
	startLevel   int      // first level to run (a resumed sweep)
	secretValues []string // see secrets
	prompts      *promptBuilder
	dataset      []datasetRecord
	tokenizer    tokenizer

	mu        sync.Mutex
	samples   []rundir.ClientSampleRow
	fallbacks []string
	warnings  []string
	notes     []string
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
	if cfg.sharedPrefix > 0 && cfg.dataset != "" {
		return nil, errors.New("sweep: a shared prefix and a dataset do not mix: put the prefix in the dataset")
	}
	s := &Sweep{cfg: cfg, base: u, model: cfg.model, clock: newClock()}
	s.secretValues = s.secrets()
	s.fixedOutput.Store(cfg.fixedOutput)
	s.includeUsage.Store(true)
	s.client = cfg.httpClient
	if s.client == nil {
		s.client = newHTTPClient(s.maxConcurrency())
	} else if s.client.CheckRedirect == nil {
		// The load goes only to the URL given, whatever client sends it.
		c := *s.client
		c.CheckRedirect = refuseRedirects
		s.client = &c
	}
	path := pathCompletions
	if cfg.endpoint == EndpointChat {
		path = pathChat
	}
	s.genURL = s.url(path)
	return s, nil
}

func (s *Sweep) url(path string) string {
	u := *s.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	return u.String()
}

// BaseURL is the server's address without credentials, for the manifest.
func (s *Sweep) BaseURL() string { return server.RedactURL(s.base.String()) }

// Model is the model the sweep sends (known after Prepare).
func (s *Sweep) Model() string { return s.model }

// Clock converts a time to Unix ns on the sweep's time base (one
// wall-clock reading plus the monotonic clock).
func (s *Sweep) Clock() func(time.Time) int64 { return s.clock.ns }

// HTTPClient is the client the sweep uses (for telemetry on the same server).
func (s *Sweep) HTTPClient() *http.Client { return s.client }

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

func (s *Sweep) addFallback(msg string) { s.warnInto(&s.fallbacks, msg) }

func (s *Sweep) warn(msg string) { s.warnInto(&s.warnings, msg) }

// warnInto records a warning, redacted, in list and prints it.
func (s *Sweep) warnInto(list *[]string, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	msg = s.redact(msg)
	*list = append(*list, msg)
	s.cfg.logf("warning: %s", msg)
}

func (s *Sweep) note(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.notes = append(s.notes, s.redact(msg))
}

// Prepare asks the server what it needs before the first level: the model
// (first of /v1/models when none was given), a tokenizer to size prompts
// (/tokenize, else usage counts), and whether min_tokens/ignore_eos and
// include_usage are accepted (one short request). Run calls it if needed.
func (s *Sweep) Prepare(ctx context.Context) error {
	if s.prepared {
		return nil
	}
	if s.model == "" {
		m, err := s.firstModel(ctx)
		if err != nil {
			return fmt.Errorf("sweep: no --model given and %s did not list one: %w", s.url("/v1/models"), err)
		}
		s.model = m
	}
	if s.cfg.dataset != "" {
		recs, err := readDataset(s.cfg.dataset)
		if err != nil {
			return fmt.Errorf("sweep: %w", err)
		}
		s.dataset = recs
	}
	s.tokenizer = s.findTokenizer(ctx)
	// One short request: checks the endpoint, and meets a rejection of
	// min_tokens/ignore_eos/include_usage before the first level.
	usage, err := s.probeRequest(ctx, " "+strings.Join(promptWords[:8], " "), 4)
	if err != nil {
		return fmt.Errorf("sweep: first request to %s failed: %w", s.genURL, err)
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
	spec := &requestSpec{id: "probe", prompt: prompt, outputTarget: maxTokens, level: -1}
	row, _ := s.do(ctx, spec)
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

// spec decides request seq of level li: prompt and lengths come from an RNG
// seeded by (seed, level, seq), so a workload does not depend on timing.
func (s *Sweep) spec(li, concurrency, seq int, warmup bool) *requestSpec {
	rng := rand.New(rand.NewPCG(uint64(s.cfg.seed), uint64(li)<<40|uint64(seq)))
	sp := &requestSpec{
		id: rundir.RequestID(s.runID, li, seq), level: li, concurrency: concurrency, seq: seq, warmup: warmup,
		outputTarget: s.cfg.output.Sample(rng),
	}
	if s.dataset != nil {
		rec := s.dataset[rng.IntN(len(s.dataset))]
		sp.prompt, sp.messages, sp.promptTarget = rec.prompt, rec.messages, rec.promptTokens
		if rec.outputTokens > 0 {
			sp.outputTarget = rec.outputTokens
		}
		return sp
	}
	sp.promptTarget = s.cfg.prompt.Sample(rng)
	levels := uint64(max(len(s.cfg.levels), len(s.cfg.rates)))
	sp.prompt = s.prompts.build(rng, sp.promptTarget, uint64(seq)*levels+uint64(li))
	return sp
}

func (s *Sweep) noteSendLag(d time.Duration) {
	for {
		cur := s.sendLagMaxNS.Load()
		if int64(d) <= cur || s.sendLagMaxNS.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}
