package sweep

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/headroom-llm/headroom/clientbound"
	"github.com/headroom-llm/headroom/collect/loadgen"
	"github.com/headroom-llm/headroom/collect/telemetry"
)

// Endpoint is the OpenAI-compatible API a sweep streams from.
type Endpoint string

// Endpoints.
const (
	EndpointCompletions Endpoint = "completions"     // POST /v1/completions
	EndpointChat        Endpoint = "chat"            // POST /v1/chat/completions
	pathCompletions              = "/v1/completions" //
	pathChat                     = "/v1/chat/completions"
)

// Defaults of the options.
const (
	DefaultEndpoint     = EndpointCompletions
	DefaultPromptTokens = 512 // the seed's script 02
	DefaultOutputTokens = 128 // the seed's script 02
	// DefaultRequestsPerLevel 0 means: 4 × the level's concurrency, at
	// least DefaultMinRequestsPerLevel.
	DefaultRequestsPerLevel    = 0
	DefaultMinRequestsPerLevel = 16
	// DefaultWarmup -1 means: one warm-up request per concurrent stream
	// (the level's concurrency), so the server has seen the level's batch
	// size before measuring starts.
	DefaultWarmup          = -1
	DefaultTimeout         = loadgen.DefaultTimeout // per request
	DefaultMaxErrorRate    = loadgen.DefaultMaxErrorRate
	DefaultSeed            = 1
	DefaultTemperature     = 0.0
	DefaultOpenLoopMaxConc = 1024
	DefaultSampleInterval  = loadgen.DefaultSampleInterval
	DefaultMetricsInterval = time.Second
	DefaultServerTimeout   = 10 * time.Minute // wait for a --server-cmd to answer
	// DefaultSendLagWarn is the send lag above which the manifest warns
	// that the client could not keep its schedule (clientbound's default).
	DefaultSendLagWarn = time.Duration(clientbound.DefaultSendLagS * float64(time.Second))
	// DefaultCPUWarnFraction is the share of GOMAXPROCS cores the client may
	// use during a level before the manifest warns that it was the
	// bottleneck (clientbound's default).
	DefaultCPUWarnFraction = clientbound.DefaultCPUFraction
)

// DefaultLevels are the closed-loop concurrency levels of the seed's sweep.
var DefaultLevels = []int{1, 2, 4, 8, 16, 32, 64, 128}

// Option configures a Sweep.
type Option func(*config) error

type config struct {
	baseURL          *url.URL
	endpoint         Endpoint
	model            string
	apiKey           string
	levels           []int
	rates            []float64 // open loop when not empty
	maxConc          int       // open loop cap
	requestsPerLevel int
	durationPerLevel time.Duration
	warmup           int
	prompt, output   Dist
	sharedPrefix     int
	dataset          string
	seed             int64
	temperature      float64
	timeout          time.Duration
	maxErrorRate     float64
	fixedOutput      bool // ask for min_tokens + ignore_eos
	sampleInterval   time.Duration
	sendLagWarn      time.Duration
	cpuWarnFraction  float64
	httpClient       *http.Client
	progress         func(Progress)
	logf             func(format string, args ...any)
	chunkObserver    ChunkObserver
	shard            *shardPlan // nil: the whole plan from this host

	// Record only
	label           string
	tags            []string
	serverLog       string
	serverCmd       string
	serverTimeout   time.Duration
	metricsInterval time.Duration // 0 disables scraping
	gpu             telemetry.GPUSource
	noGPU           bool
	engineDesc      string
}

func defaultConfig() config {
	return config{
		endpoint:         DefaultEndpoint,
		levels:           DefaultLevels,
		maxConc:          DefaultOpenLoopMaxConc,
		requestsPerLevel: DefaultRequestsPerLevel,
		warmup:           DefaultWarmup,
		prompt:           Fixed(DefaultPromptTokens),
		output:           Fixed(DefaultOutputTokens),
		seed:             DefaultSeed,
		temperature:      DefaultTemperature,
		timeout:          DefaultTimeout,
		maxErrorRate:     DefaultMaxErrorRate,
		fixedOutput:      true,
		sampleInterval:   DefaultSampleInterval,
		sendLagWarn:      DefaultSendLagWarn,
		cpuWarnFraction:  DefaultCPUWarnFraction,
		serverTimeout:    DefaultServerTimeout,
		metricsInterval:  DefaultMetricsInterval,
		logf:             func(string, ...any) {},
	}
}

// WithEndpoint picks /v1/completions (default) or /v1/chat/completions.
func WithEndpoint(e Endpoint) Option {
	return func(c *config) error {
		if e != EndpointCompletions && e != EndpointChat {
			return fmt.Errorf("endpoint %q: want %q or %q", e, EndpointCompletions, EndpointChat)
		}
		c.endpoint = e
		return nil
	}
}

// WithModel names the model; default: the first model of /v1/models.
func WithModel(m string) Option { return func(c *config) error { c.model = m; return nil } }

// WithAPIKey sends "Authorization: Bearer KEY". The key is never written
// to the run directory.
func WithAPIKey(k string) Option { return func(c *config) error { c.apiKey = k; return nil } }

// WithLevels sets closed-loop concurrency levels, run in the order given.
func WithLevels(levels ...int) Option {
	return func(c *config) error {
		if len(levels) == 0 {
			return errors.New("no concurrency levels")
		}
		for _, l := range levels {
			if l < 1 {
				return fmt.Errorf("concurrency %d: want at least 1", l)
			}
		}
		c.levels = append([]int(nil), levels...)
		return nil
	}
}

// WithRates makes the sweep open-loop: one level per Poisson arrival rate
// (requests per second), with at most maxConcurrency requests in flight
// (0: DefaultOpenLoopMaxConc). A request is sent at its intended time from
// the seeded schedule, or as soon as a slot frees up; both times are kept.
func WithRates(maxConcurrency int, rates ...float64) Option {
	return func(c *config) error {
		if len(rates) == 0 {
			return errors.New("no arrival rates")
		}
		for _, r := range rates {
			if !(r > 0) {
				return fmt.Errorf("rate %v: want a positive number of requests per second", r)
			}
		}
		if maxConcurrency < 0 {
			return fmt.Errorf("concurrency cap %d: want at least 1", maxConcurrency)
		}
		if maxConcurrency == 0 {
			maxConcurrency = DefaultOpenLoopMaxConc
		}
		c.rates = append([]float64(nil), rates...)
		c.maxConc = maxConcurrency
		return nil
	}
}

// WithRequestsPerLevel sets how many measured requests each level sends
// (warm-up not included). 0: 4 × concurrency, at least 16 (open loop: 16 ×
// the rate in requests per second, at least 16).
func WithRequestsPerLevel(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("requests per level %d: want 0 (automatic) or more", n)
		}
		c.requestsPerLevel = n
		return nil
	}
}

// WithDurationPerLevel makes each level send measured requests for d
// instead of a fixed number; requests in flight at the end are awaited.
func WithDurationPerLevel(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("duration per level %v: want positive", d)
		}
		c.durationPerLevel = d
		return nil
	}
}

// WithWarmup sets the warm-up requests per level (kept in the data, marked
// warmup); -1: the level's concurrency.
func WithWarmup(n int) Option {
	return func(c *config) error {
		if n < -1 {
			return fmt.Errorf("warmup %d: want -1 (automatic), 0 or more", n)
		}
		c.warmup = n
		return nil
	}
}

// WithPromptTokens sets the prompt length distribution (tokens, including
// any shared prefix).
func WithPromptTokens(d Dist) Option {
	return func(c *config) error {
		if err := d.Validate(); err != nil {
			return fmt.Errorf("prompt tokens: %w", err)
		}
		c.prompt = d
		return nil
	}
}

// WithOutputTokens sets the output length distribution (max_tokens, and
// min_tokens while the server accepts it).
func WithOutputTokens(d Dist) Option {
	return func(c *config) error {
		if err := d.Validate(); err != nil {
			return fmt.Errorf("output tokens: %w", err)
		}
		c.output = d
		return nil
	}
}

// WithSharedPrefix starts every prompt with the same n tokens (the seed's
// prefix-caching variation); the rest of each prompt stays unique.
func WithSharedPrefix(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("shared prefix %d: want 0 or more tokens", n)
		}
		c.sharedPrefix = n
		return nil
	}
}

// WithDataset takes prompts from a JSONL file (see docs/sweep.md) instead
// of generating them.
func WithDataset(path string) Option { return func(c *config) error { c.dataset = path; return nil } }

// WithSeed seeds every random choice (prompts, lengths, arrivals), so the
// same seed sends the same workload.
func WithSeed(seed int64) Option { return func(c *config) error { c.seed = seed; return nil } }

// WithTemperature sets the sampling temperature (default 0).
func WithTemperature(t float64) Option {
	return func(c *config) error {
		if t < 0 {
			return fmt.Errorf("temperature %v: want 0 or more", t)
		}
		c.temperature = t
		return nil
	}
}

// WithTimeout bounds each request, from send to the end of its stream.
func WithTimeout(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("timeout %v: want positive", d)
		}
		c.timeout = d
		return nil
	}
}

// WithMaxErrorRate stops the sweep when more than this fraction of a
// level's requests fail (checked once at least 10 have finished); 1 never stops.
func WithMaxErrorRate(r float64) Option {
	return func(c *config) error {
		if r < 0 || r > 1 {
			return fmt.Errorf("max error rate %v: want 0..1", r)
		}
		c.maxErrorRate = r
		return nil
	}
}

// WithFixedOutput asks for min_tokens = max_tokens and ignore_eos (default
// true), so every request generates the same number of tokens. A server
// that rejects them gets requests without them (recorded in the manifest).
func WithFixedOutput(on bool) Option { return func(c *config) error { c.fixedOutput = on; return nil } }

// WithHTTPClient replaces the tuned HTTP client (tests, proxies).
func WithHTTPClient(h *http.Client) Option {
	return func(c *config) error { c.httpClient = h; return nil }
}

// WithProgress receives a snapshot after every finished request and at
// each level's start and end. It runs on the request's goroutine: keep it short.
func WithProgress(f func(Progress)) Option {
	return func(c *config) error { c.progress = f; return nil }
}

// WithLogf receives notes meant for the person running the sweep (server
// started, fallbacks, warnings).
func WithLogf(f func(format string, args ...any)) Option {
	return func(c *config) error {
		if f != nil {
			c.logf = f
		}
		return nil
	}
}

// ChunkObserver sees every text chunk: the request, the chunk's index, its
// receive time (run time base, Unix ns) and its raw JSON-escaped text. It
// runs on the stream's goroutine, so it must be fast. For benchmarks and
// debugging.
type ChunkObserver = loadgen.ChunkObserver

// WithChunkObserver installs a ChunkObserver.
func WithChunkObserver(f ChunkObserver) Option {
	return func(c *config) error { c.chunkObserver = f; return nil }
}

// WithSampleInterval sets how often the client samples its own CPU time,
// open streams and send lag (default 250 ms).
func WithSampleInterval(d time.Duration) Option {
	return func(c *config) error {
		if d <= 0 {
			return fmt.Errorf("sample interval %v: want positive", d)
		}
		c.sampleInterval = d
		return nil
	}
}

// WithLabel and WithTags name the run in reports (Record only).
func WithLabel(l string) Option { return func(c *config) error { c.label = l; return nil } }

// WithTags adds free-form tags to the run (Record only).
func WithTags(tags ...string) Option {
	return func(c *config) error { c.tags = append(c.tags, tags...); return nil }
}

// WithServerLog follows a server's log file during the run, like tail -F
// from its current end (Record only).
func WithServerLog(path string) Option {
	return func(c *config) error { c.serverLog = path; return nil }
}

// WithServerCmd starts the server with this shell command line, captures its
// output, waits until it answers, and stops it at the end (Record only).
func WithServerCmd(cmd string, readyTimeout time.Duration) Option {
	return func(c *config) error {
		c.serverCmd = cmd
		if readyTimeout > 0 {
			c.serverTimeout = readyTimeout
		}
		return nil
	}
}

// WithMetricsInterval sets how often /metrics is scraped (Record only);
// 0 turns scraping off.
func WithMetricsInterval(d time.Duration) Option {
	return func(c *config) error {
		if d < 0 {
			return fmt.Errorf("metrics interval %v: want 0 (off) or positive", d)
		}
		c.metricsInterval = d
		return nil
	}
}

// WithGPU sets where GPU telemetry comes from (Record only); nil: NVML when
// available.
func WithGPU(src telemetry.GPUSource) Option {
	return func(c *config) error { c.gpu = src; return nil }
}

// WithNoGPU turns GPU telemetry off (Record only).
func WithNoGPU() Option { return func(c *config) error { c.noGPU = true; return nil } }

// WithEngineDescription records what the engine and model are when that is
// not obvious (manifest engine.description).
func WithEngineDescription(s string) Option {
	return func(c *config) error { c.engineDesc = s; return nil }
}

func parseBaseURL(s string) (*url.URL, error) {
	if s == "" {
		return nil, errors.New("no base URL: give the server's address, e.g. http://127.0.0.1:8000")
	}
	if !strings.Contains(s, "://") {
		s = "http://" + s
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("base URL %q: want http://host:port", s)
	}
	// Accept a base URL that already ends in /v1, as OpenAI clients use.
	u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1")
	return u, nil
}
