package loadgen

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of a Config.
const (
	DefaultTimeout        = 10 * time.Minute // per request
	DefaultMaxErrorRate   = 0.5
	DefaultSampleInterval = 250 * time.Millisecond
)

// Config is what a Generator sends and how. Start from DefaultConfig.
type Config struct {
	// URL is the generation endpoint: http://host:port/v1/completions or
	// …/v1/chat/completions (Chat).
	URL string
	// URLs, when it holds more than one, are the generation endpoints of
	// several replicas of one model, used instead of URL: each request goes
	// to one of them as Balance picks, and its row says which
	// (RequestRow.Replica, the index in URLs).
	URLs []string
	// Balance picks each request's replica (default LeastOutstanding).
	Balance Balance
	// Chat sends {"messages": …} instead of {"prompt": …}.
	Chat bool
	// Model is the request's "model".
	Model string
	// Header is sent with every request (Authorization, for one).
	Header http.Header
	// Client sends the requests; nil: NewHTTPClient(MaxConns). A client
	// without CheckRedirect gets RefuseRedirects: the load goes only to URL.
	Client *http.Client
	// MaxConns sizes the default client's connection pool: the most streams
	// open at once.
	MaxConns int
	// Timeout bounds each request, from send to the end of its stream.
	Timeout time.Duration
	// Temperature is the sampling temperature sent.
	Temperature float64
	// FixedOutput sends min_tokens = max_tokens and ignore_eos, so every
	// request generates the same number of tokens, until the server rejects
	// them (HTTP 400 naming them): then requests go without, and
	// OnFallback says so.
	FixedOutput bool
	// NoUsage leaves out stream_options.include_usage (otherwise sent until
	// the server rejects it).
	NoUsage bool
	// MaxErrorRate stops a level (ErrMaxErrorRate) when more than this
	// fraction of its measured requests failed, checked once at least 10
	// finished; 1 never stops.
	MaxErrorRate float64
	// SampleInterval is how often Run samples the client's own CPU time,
	// open streams and send lag.
	SampleInterval time.Duration
	// Clock is the time base of every timestamp; the zero Clock: NewClock().
	Clock Clock
	// Progress receives a snapshot after every finished request and at each
	// phase's start and end, on the request's goroutine: keep it short.
	Progress func(Progress)
	// ChunkObserver sees every text chunk (benchmarks, debugging).
	ChunkObserver ChunkObserver
	// OnFallback is told, once each, when the server rejected an optional
	// field (min_tokens/ignore_eos, stream_options) and requests go on
	// without it. The message quotes the server's answer.
	OnFallback func(msg string)
}

// DefaultConfig is a Config for url with every default set.
func DefaultConfig(url string) Config {
	return Config{
		URL: url, Timeout: DefaultTimeout, MaxErrorRate: DefaultMaxErrorRate,
		SampleInterval: DefaultSampleInterval, FixedOutput: true,
	}
}

// ChunkObserver sees every text chunk: the request, the chunk's index, its
// receive time (the Clock's Unix ns) and its raw JSON-escaped text. It runs
// on the stream's goroutine, so it must be fast.
type ChunkObserver func(requestID string, index int, recvNS int64, rawText []byte)

// Generator sends the load. Make one with New; it is safe for concurrent use,
// but runs one level at a time.
type Generator struct {
	cfg    Config
	client *http.Client
	clock  Clock
	urls   []string // the targets: URLs, or URL alone
	lb     *balancer

	fixedOutput  atomic.Bool // min_tokens + ignore_eos still sent
	includeUsage atomic.Bool // stream_options.include_usage still sent
	openStreams  atomic.Int64
	sendLagMaxNS atomic.Int64 // largest send lag since the last client sample
	resent       atomic.Int64 // requests sent again on a new connection (see stream)

	mu        sync.Mutex
	fallbacks []string
}

// New checks cfg and returns a generator. It does not contact the server.
func New(cfg Config) (*Generator, error) {
	urls := cfg.URLs
	if len(urls) <= 1 {
		urls = []string{cfg.URL}
		if len(cfg.URLs) == 1 {
			urls = cfg.URLs
		}
	}
	for _, raw := range urls {
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("loadgen: URL %q: want http://host:port/v1/completions", raw)
		}
	}
	if _, err := ParseBalance(string(cfg.Balance)); err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	cfg.URL = urls[0]
	switch {
	case cfg.Timeout <= 0:
		return nil, fmt.Errorf("loadgen: timeout %v: want positive", cfg.Timeout)
	case cfg.MaxErrorRate < 0 || cfg.MaxErrorRate > 1:
		return nil, fmt.Errorf("loadgen: max error rate %v: want 0..1", cfg.MaxErrorRate)
	case cfg.SampleInterval <= 0:
		return nil, fmt.Errorf("loadgen: sample interval %v: want positive", cfg.SampleInterval)
	case cfg.Temperature < 0:
		return nil, fmt.Errorf("loadgen: temperature %v: want 0 or more", cfg.Temperature)
	}
	g := &Generator{cfg: cfg, clock: cfg.Clock, urls: urls, lb: newBalancer(cfg.Balance, len(urls))}
	if g.clock.isZero() {
		g.clock = NewClock()
	}
	g.client = cfg.Client
	if g.client == nil {
		g.client = NewHTTPClient(max(cfg.MaxConns, 1))
	} else if g.client.CheckRedirect == nil {
		c := *g.client
		c.CheckRedirect = RefuseRedirects
		g.client = &c
	}
	g.fixedOutput.Store(cfg.FixedOutput)
	g.includeUsage.Store(!cfg.NoUsage)
	return g, nil
}

// Clock is the generator's time base.
func (g *Generator) Clock() Clock { return g.clock }

// HTTPClient is the client the load goes through (for preparation requests
// and telemetry against the same server).
func (g *Generator) HTTPClient() *http.Client { return g.client }

// SetModel changes the model sent (a caller that learns it from the server
// after New). Call it before any request.
func (g *Generator) SetModel(m string) { g.cfg.Model = m }

// FixedOutputSent reports whether min_tokens/ignore_eos are still sent.
func (g *Generator) FixedOutputSent() bool { return g.fixedOutput.Load() }

// UsageRequested reports whether stream_options.include_usage is still sent.
func (g *Generator) UsageRequested() bool { return g.includeUsage.Load() }

// Fallbacks are the messages of the optional fields the server rejected.
func (g *Generator) Fallbacks() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.fallbacks...)
}

func (g *Generator) addFallback(msg string) {
	g.mu.Lock()
	g.fallbacks = append(g.fallbacks, msg)
	g.mu.Unlock()
	if g.cfg.OnFallback != nil {
		g.cfg.OnFallback(msg)
	}
}

// Targets is the number of servers the load is spread over (1 unless
// Config.URLs named several).
func (g *Generator) Targets() int { return len(g.urls) }

// OpenStreams is the number of requests in flight.
func (g *Generator) OpenStreams() int64 { return g.openStreams.Load() }

// CloseIdleConnections closes the kept-alive connections no stream uses,
// giving their file descriptors back (Run does it after every level, before
// the sink writes the level).
func (g *Generator) CloseIdleConnections() { g.client.CloseIdleConnections() }

// ErrMaxErrorRate is returned (wrapped) when a level's error rate stopped it.
var ErrMaxErrorRate = errors.New("error rate above the limit")
