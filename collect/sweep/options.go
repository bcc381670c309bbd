package sweep

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
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
	// DefaultRequestsPerLevel 0 means: 4 × the level's concurrency (open
	// loop: 16 s of arrivals), at least DefaultMinRequestsPerLevel.
	DefaultRequestsPerLevel = 0
	// DefaultMinRequestsPerLevel is the p99's own need: the nearest-rank
	// p99 of fewer than stats.MinSamples(99) = 100 values is the largest
	// value seen, not a tail estimate.
	DefaultMinRequestsPerLevel = 100
	// DefaultWarmup -1 means: one warm-up request per concurrent stream
	// (the level's concurrency), so the server has seen the level's batch
	// size before measuring starts.
	DefaultWarmup          = -1
	DefaultTimeout         = loadgen.DefaultTimeout // per request
	DefaultMaxErrorRate    = loadgen.DefaultMaxErrorRate
	DefaultSeed            = 1
	DefaultBurstiness      = 1.0 // Poisson
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
	baseURL           *url.URL
	endpoint          Endpoint
	endpointPath      string // "": the endpoint's /v1 path
	headers           http.Header
	extraBody         map[string]any
	model             string
	apiKey            string
	levels            []int
	rates             []float64 // open loop when not empty
	maxConc           int       // open loop cap
	requestsPerLevel  int
	durationPerLevel  time.Duration
	warmup            int
	prompt, output    Dist
	sharedPrefix      int
	dataset           string   // the dataset's path
	datasetCfg        *Dataset // set with dataset
	maxModelLen       int      // 0: the server's
	traceCfg          *Trace   // replay a trace instead of levels
	burstiness        float64  // open loop: gamma shape of the gaps (1: Poisson)
	ramp              *rampCfg // one open-loop level whose rate ramps
	findMax           *FindMax // search for the highest load meeting an SLO
	stopWhenSaturated bool
	sessions          *Sessions // multi-turn conversations
	seed              int64
	temperature       float64
	timeout           time.Duration
	maxErrorRate      float64
	fixedOutput       bool // ask for min_tokens + ignore_eos
	sampleInterval    time.Duration
	sendLagWarn       time.Duration
	cpuWarnFraction   float64
	httpClient        *http.Client
	progress          func(Progress)
	logf              func(format string, args ...any)
	chunkObserver     ChunkObserver
	shard             *shardPlan // nil: the whole plan from this host

	// Record only
	label           string
	tags            []string
	serverLog       string   // the one server's log
	replicaLogs     []string // one per replica, in --base-url order
	balance         loadgen.Balance
	serverCmd       string
	serverTimeout   time.Duration
	metricsInterval time.Duration // 0 disables scraping
	gpu             telemetry.GPUSource
	noGPU           bool
	powercap        string // where RAPL counters are read (telemetry.Powercap)
	engineDesc      string
}

func defaultConfig() config {
	return config{
		endpoint:         DefaultEndpoint,
		powercap:         telemetry.Powercap,
		levels:           DefaultLevels,
		maxConc:          DefaultOpenLoopMaxConc,
		requestsPerLevel: DefaultRequestsPerLevel,
		warmup:           DefaultWarmup,
		prompt:           Fixed(DefaultPromptTokens),
		output:           Fixed(DefaultOutputTokens),
		seed:             DefaultSeed,
		burstiness:       DefaultBurstiness,
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

// WithEndpoint picks /v1/completions (default) or /v1/chat/completions,
// or names the endpoint by its path (vllm bench serve's --endpoint): a
// path ending in /chat/completions is the chat API, one ending in
// /completions the completions API, under whatever prefix a proxy puts.
func WithEndpoint(e Endpoint) Option {
	return func(c *config) error {
		switch {
		case e == EndpointCompletions || e == EndpointChat:
			c.endpoint, c.endpointPath = e, ""
		case strings.HasPrefix(string(e), "/") && strings.HasSuffix(string(e), "/chat/completions"):
			c.endpoint, c.endpointPath = EndpointChat, string(e)
		case strings.HasPrefix(string(e), "/") && strings.HasSuffix(string(e), "/completions"):
			c.endpoint, c.endpointPath = EndpointCompletions, string(e)
		default:
			return fmt.Errorf("endpoint %q: want %q, %q, or a path ending in /completions or /chat/completions", e, EndpointCompletions, EndpointChat)
		}
		if c.endpointPath == pathOf(c.endpoint) {
			c.endpointPath = ""
		}
		return nil
	}
}

// WithHeader sends an HTTP header with every request to the server (vllm
// bench serve's --header KEY=VALUE). Its value is treated as a secret:
// never written to the run, removed wherever the server echoes it.
func WithHeader(key, value string) Option {
	return func(c *config) error {
		if key == "" || strings.ContainsAny(key, " :\r\n") {
			return fmt.Errorf("header %q: want a header name such as X-Request-Source", key)
		}
		if c.headers == nil {
			c.headers = http.Header{}
		}
		c.headers.Add(key, value)
		return nil
	}
}

// WithExtraBody adds top-level fields to every request's body (sampling
// parameters such as top_p and top_k, vllm bench serve's --extra-body). It
// must be a JSON object and must not set the fields the sweep writes
// itself (model, prompt, messages, max_tokens, min_tokens, ignore_eos,
// temperature, stream, stream_options).
func WithExtraBody(fields map[string]any) Option {
	return func(c *config) error {
		for k := range fields {
			if slices.Contains(ownFields, k) {
				return fmt.Errorf("extra body field %q is the sweep's own (use its flag)", k)
			}
		}
		if c.extraBody == nil {
			c.extraBody = map[string]any{}
		}
		maps.Copy(c.extraBody, fields)
		return nil
	}
}

// ownFields are the body fields the load generator writes.
var ownFields = []string{"model", "prompt", "messages", "max_tokens", "min_tokens", "ignore_eos", "temperature", "stream", "stream_options"}

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

// rampCfg is a ramp of the arrival rate over one level (WithRamp).
type rampCfg struct {
	kind       string
	start, end float64
}

// WithBurstiness sets the open loop's inter-arrival distribution: gamma of
// this shape with mean 1/rate, as vllm bench serve's --burstiness (1, the
// default, is Poisson; below 1 burstier, above 1 more even).
func WithBurstiness(b float64) Option {
	return func(c *config) error {
		if !(b > 0) {
			return fmt.Errorf("burstiness %v: want a positive number (1: Poisson)", b)
		}
		c.burstiness = b
		return nil
	}
}

// WithRamp makes the sweep one open-loop level whose arrival rate moves
// from start to end requests per second over its requests (kind
// loadgen.RampLinear or RampExponential), as vllm bench serve's
// --ramp-up-strategy; at most maxConcurrency in flight (0: the default cap).
func WithRamp(kind string, start, end float64, maxConcurrency int) Option {
	return func(c *config) error {
		if _, err := loadgen.Ramp(kind, start, end, 1, 1, nil); err != nil {
			return err
		}
		if maxConcurrency < 0 {
			return fmt.Errorf("concurrency cap %d: want at least 1", maxConcurrency)
		}
		if maxConcurrency == 0 {
			maxConcurrency = DefaultOpenLoopMaxConc
		}
		c.ramp, c.maxConc = &rampCfg{kind: kind, start: start, end: end}, maxConcurrency
		return nil
	}
}

// WithFindMax replaces the fixed levels by a search for the highest load
// that meets f.SLO: the load doubles from f.Start until a level fails, then
// the boundary is bisected to f.Precision. The axis is concurrency, or the
// arrival rate when WithRates is given too (its rate is the start).
func WithFindMax(f FindMax) Option {
	return func(c *config) error {
		switch {
		case f.SLO == nil || len(f.SLO.Bounds) == 0:
			return errors.New("a search needs an SLO")
		case f.Start < 0 || f.Limit < 0:
			return fmt.Errorf("search from %v to %v: want positive loads", f.Start, f.Limit)
		case !(f.Precision >= 0 && f.Precision < 1):
			return fmt.Errorf("search precision %v: want a fraction from 0 to below 1", f.Precision)
		}
		c.findMax = &f
		return nil
	}
}

// WithStopWhenSaturated ends a sweep of rising levels early once the
// server is saturated: output throughput gained less than
// SaturationGainPerDoubling per doubling of the load over the last two
// steps while median TTFT rose significantly at each. The manifest says
// where (workload.saturated) and which levels were skipped.
func WithStopWhenSaturated(on bool) Option {
	return func(c *config) error { c.stopWhenSaturated = on; return nil }
}

// WithRequestsPerLevel sets how many measured requests each level sends
// (warm-up not included). 0: 4 × concurrency (open loop: 16 × the rate in
// requests per second), at least DefaultMinRequestsPerLevel.
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

// WithDataset takes prompts from a file (see docs/sweep.md) instead of
// generating them, its format detected (WithNamedDataset names it).
func WithDataset(path string) Option { return WithNamedDataset(Dataset{Path: path}) }

// WithNamedDataset takes prompts from a dataset file of a format vllm bench
// serve names: custom, sharegpt or hf.
func WithNamedDataset(d Dataset) Option {
	return func(c *config) error {
		switch {
		case d.Path == "":
			return errors.New("a dataset needs a file")
		case d.Name != "" && !slices.Contains(DatasetNames, d.Name):
			return fmt.Errorf("dataset format %q: want %s", d.Name, strings.Join(DatasetNames, ", "))
		case d.OutputTokens < 0:
			return fmt.Errorf("dataset output length %d: want 0 (from the dataset) or more", d.OutputTokens)
		}
		c.dataset, c.datasetCfg = d.Path, &d
		return nil
	}
}

// WithTrace replays a timestamped trace (Mooncake JSONL or BurstGPT CSV)
// open loop, one level per speed: each request at its arrival time divided
// by the speed, with the trace's input and output lengths, prompts built
// from its hash ids so that shared blocks are shared text. At most the
// WithRates cap (or DefaultOpenLoopMaxConc) is in flight.
func WithTrace(t Trace) Option {
	return func(c *config) error {
		if t.Path == "" {
			return errors.New("a trace needs a file")
		}
		if len(t.Speeds) == 0 {
			t.Speeds = []float64{1}
		}
		for _, v := range t.Speeds {
			if !(v > 0) || math.IsInf(v, 0) {
				return fmt.Errorf("trace speed %v: want a positive number (2: twice as fast)", v)
			}
		}
		if t.BlockSize == 0 {
			t.BlockSize = DefaultTraceBlockSize
		}
		if t.BlockSize < 1 {
			return fmt.Errorf("trace block size %d: want at least 1 token", t.BlockSize)
		}
		c.traceCfg = &t
		return nil
	}
}

// WithMaxInFlight caps the requests in flight of a trace replay or a ramp
// (0: DefaultOpenLoopMaxConc); WithRates takes the cap of rate levels.
func WithMaxInFlight(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("concurrency cap %d: want at least 1", n)
		}
		if n == 0 {
			n = DefaultOpenLoopMaxConc
		}
		c.maxConc = n
		return nil
	}
}

// WithMaxModelLen filters dataset prompts to n tokens of prompt and output
// (vllm's --max-model-len); default: the max_model_len the server reports.
func WithMaxModelLen(n int) Option {
	return func(c *config) error {
		if n < 0 {
			return fmt.Errorf("max model length %d: want 0 (the server's) or more", n)
		}
		c.maxModelLen = n
		return nil
	}
}

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
// from its current end (Record only). A sweep against several replicas
// takes one log per replica, in the order of their base URLs.
func WithServerLog(paths ...string) Option {
	return func(c *config) error {
		c.serverLog, c.replicaLogs = "", nil
		switch len(paths) {
		case 0:
		case 1:
			c.serverLog = paths[0]
		default:
			c.replicaLogs = append([]string(nil), paths...)
		}
		return nil
	}
}

// WithBalance sets how a sweep against several replicas spreads its
// requests (default loadgen.LeastOutstanding).
func WithBalance(b loadgen.Balance) Option {
	return func(c *config) error {
		b, err := loadgen.ParseBalance(string(b))
		c.balance = b
		return err
	}
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

// WithPowercap reads the host's RAPL energy counters from dir instead of
// telemetry.Powercap (Record only; tests give a fake folder).
func WithPowercap(dir string) Option {
	return func(c *config) error { c.powercap = dir; return nil }
}

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
