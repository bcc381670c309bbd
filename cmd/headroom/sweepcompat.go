package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/collect/sweep"
	"github.com/headroom-llm/headroom/slo"
)

// vllm bench serve's flags that mean what a headroom flag means, under
// that flag's name (docs/sweep.md has the whole table, and says which of
// its flags have no equivalent and why). They do not show in --help.
var sweepAliases = map[string]string{
	"num-prompts":         "requests-per-level",
	"max-concurrency":     "concurrency",
	"random-input-len":    "prompt-tokens",
	"input-len":           "prompt-tokens",
	"random-output-len":   "output-tokens",
	"output-len":          "output-tokens",
	"num-warmups":         "warmup",
	"served-model-name":   "model",
	"ignore-eos":          "fixed-output",
	"dataset-path":        "dataset",
	"sharegpt-output-len": "output-tokens",
	"hf-output-len":       "output-tokens",
	"custom-output-len":   "output-tokens",
}

// vllmWithout are vllm bench serve's flags that headroom has no
// equivalent for, each with what to do instead. They are known flags, so
// a vllm bench command line that uses one gets this answer rather than
// "unknown flag" (docs/sweep.md's table lists them too).
var vllmWithout = map[string]string{
	"tokenizer":                          "headroom loads no tokenizer: it counts tokens with the server's /tokenize, or fits the server's usage counts",
	"tokenizer-mode":                     "headroom loads no tokenizer: it counts tokens with the server's /tokenize, or fits the server's usage counts",
	"trust-remote-code":                  "headroom loads no tokenizer or model code",
	"use-beam-search":                    "headroom measures sampled decoding; beam search is not sent",
	"logprobs":                           `send it as a body field: --extra-body '{"logprobs":N}'`,
	"profile":                            "it drives vLLM's torch profiler; headroom records the server's /metrics, log and GPU telemetry instead",
	"save-result":                        "headroom always writes the run directory (-o); headroom import reads vllm bench's result files",
	"append-result":                      "headroom always writes a new run directory (-o); headroom compare reads many",
	"save-detailed":                      "the run directory always holds every request and every token",
	"result-dir":                         "name the run directory with -o",
	"result-filename":                    "name the run directory with -o",
	"request-id-prefix":                  "headroom names each request by its run, level and sequence number",
	"common-prefix-len":                  "give --random-prefix-len (a shared prefix on top of the input length) or --shared-prefix (within it)",
	"lora-modules":                       "a sweep sends one model: name the adapter with --model",
	"ready-check-timeout-sec":            "with --server-cmd the sweep waits --server-timeout for the server; without it the first request must succeed",
	"no-stream":                          "headroom reads local dataset files, never a dataset hub",
	"no-oversample":                      "a dataset with fewer usable records than a level sends is sent again from its start (a note says so)",
	"hf-subset":                          "headroom reads a Hugging Face dataset exported as JSONL (--dataset-name hf --dataset-path FILE), not the Hub",
	"hf-split":                           "headroom reads a Hugging Face dataset exported as JSONL (--dataset-name hf --dataset-path FILE), not the Hub",
	"hf-name":                            "headroom reads a Hugging Face dataset exported as JSONL (--dataset-name hf --dataset-path FILE), not the Hub",
	"random-batch-size":                  "embeddings are not measured",
	"no-reranker":                        "reranking is not measured",
	"sonnet-input-len":                   "the sonnet dataset is not built in: give its prompts as a custom JSONL file",
	"sonnet-output-len":                  "the sonnet dataset is not built in: give its prompts as a custom JSONL file",
	"sonnet-prefix-len":                  "the sonnet dataset is not built in: give its prompts as a custom JSONL file",
	"spec-bench-output-len":              "the spec_bench dataset is not built in: give its prompts as a custom JSONL file",
	"spec-bench-category":                "the spec_bench dataset is not built in: give its prompts as a custom JSONL file",
	"blazedit-min-distance":              "the blazedit dataset is not built in: give its prompts as a custom JSONL file",
	"blazedit-max-distance":              "the blazedit dataset is not built in: give its prompts as a custom JSONL file",
	"prefix-repetition-prefix-len":       "the prefix_repetition dataset is not built in: --shared-prefix gives every prompt one shared prefix",
	"prefix-repetition-suffix-len":       "the prefix_repetition dataset is not built in: --shared-prefix gives every prompt one shared prefix",
	"prefix-repetition-num-prefixes":     "the prefix_repetition dataset is not built in: --shared-prefix gives every prompt one shared prefix",
	"prefix-repetition-output-len":       "the prefix_repetition dataset is not built in: --shared-prefix gives every prompt one shared prefix",
	"random-mm-base-items-per-request":   "multimodal requests are not sent",
	"random-mm-num-mm-items-range-ratio": "multimodal requests are not sent",
	"random-mm-limit-mm-per-prompt":      "multimodal requests are not sent",
	"random-mm-bucket-config":            "multimodal requests are not sent",
}

// vllmWithoutSwitches are those of vllmWithout that take no value.
var vllmWithoutSwitches = []string{"trust-remote-code", "use-beam-search", "profile", "save-result", "append-result",
	"save-detailed", "no-stream", "no-oversample", "no-reranker"}

// rampFlags are vllm bench serve's ramp of the arrival rate.
type rampFlags struct {
	strategy   string
	start, end float64
}

// samplingFlags are sampling parameters sent in every request's body,
// those given only.
type samplingFlags struct {
	topP, minP, frequencyPenalty, presencePenalty, repetitionPenalty float64
	topK                                                             int
	extraBody                                                        string
	given                                                            map[string]bool
}

// samplingFields are the sampling flags and their body fields.
var samplingFields = map[string]string{
	"top-p": "top_p", "top-k": "top_k", "min-p": "min_p", "frequency-penalty": "frequency_penalty",
	"presence-penalty": "presence_penalty", "repetition-penalty": "repetition_penalty",
}

// compatFlags are vllm bench serve's flags whose value headroom reads
// differently from its own flag of the same meaning.
type compatFlags struct {
	requestRate      string // "inf": closed loop
	host             string
	port             int
	backend          string
	rangeRatio       float64
	prefixLen        int
	goodput          []string
	metadata         [][2]string
	percentileMetric string
	metricPercentile string
}

// aliasNames lists the aliases, for the command's "did you mean".
func aliasNames() string {
	names := slices.Collect(maps.Keys(sweepAliases))
	return strings.Join(slices.Sorted(slices.Values(append(names, slices.Collect(maps.Keys(sessionAliases))...))), ",")
}

func addCompatFlags(fl *pflag.FlagSet, f *sweepFlags) {
	c := &f.compat
	fl.StringVar(&f.ramp.strategy, "ramp-up-strategy", "", "one open-loop level whose arrival rate ramps from --ramp-up-start-rps to --ramp-up-end-rps: linear or exponential")
	fl.Float64Var(&f.ramp.start, "ramp-up-start-rps", 0, "the ramp's first rate, requests/s")
	fl.Float64Var(&f.ramp.end, "ramp-up-end-rps", 0, "the ramp's last rate, requests/s")
	fl.Var(&pairsFlag{dst: &f.headers, want: "KEY=VALUE"}, "header", "KEY=VALUE: an HTTP header sent with every request (repeatable; the value is never written to the run)")
	fl.Float64Var(&f.sampling.topP, "top-p", 0, "top_p sent with every request (default: the server's)")
	fl.IntVar(&f.sampling.topK, "top-k", 0, "top_k sent with every request (default: the server's)")
	fl.Float64Var(&f.sampling.minP, "min-p", 0, "min_p sent with every request")
	fl.Float64Var(&f.sampling.frequencyPenalty, "frequency-penalty", 0, "frequency_penalty sent with every request")
	fl.Float64Var(&f.sampling.presencePenalty, "presence-penalty", 0, "presence_penalty sent with every request")
	fl.Float64Var(&f.sampling.repetitionPenalty, "repetition-penalty", 0, "repetition_penalty sent with every request")
	fl.StringVar(&f.sampling.extraBody, "extra-body", "", `JSON object of more fields for every request's body, e.g. '{"chat_template_kwargs":{"enable_thinking":false}}'`)
	fl.BoolVar(&f.noProgress, "disable-tqdm", false, "no progress line on stderr")
	choiceVar(fl, &f.datasetName, "dataset-name", "", append([]string{sweep.DatasetRandom}, sweep.DatasetNames...),
		"format of --dataset: sharegpt (ShareGPT JSON), custom (JSONL of prompts), hf (JSONL rows of a Hugging Face dataset), or random (generated prompts); default: detected")
	fl.StringVar(&f.trace, "trace", "", "replay a timestamped trace open loop: Mooncake JSONL (timestamp ms, input_length, output_length, hash_ids) or BurstGPT CSV")
	choiceVar(fl, &f.traceFormat, "trace-format", "", []string{sweep.TraceMooncake, sweep.TraceBurstGPT}, "format of --trace (default: burstgpt for .csv, else mooncake)")
	f.traceSpeeds = []float64{1}
	positivesVar(fl, &f.traceSpeeds, "trace-speed", "0.5,1,2", "replay --trace at these speeds, one level each (2: twice as fast)")
	fl.IntVar(&f.traceBlockSize, "trace-block-size", sweep.DefaultTraceBlockSize, "tokens per hash id of --trace")
	fl.BoolVar(&f.disableShuffle, "disable-shuffle", false, "take --dataset's records in file order instead of an order seeded by --seed")
	fl.IntVar(&f.maxModelLen, "max-model-len", 0, "skip dataset prompts whose prompt and output exceed this many tokens (default: the max_model_len the server reports)")

	fl.StringVar(&c.requestRate, "request-rate", "", "vllm bench: --rate (inf: closed loop at --max-concurrency)")
	fl.StringVar(&c.host, "host", "", "vllm bench: the server's host (with --port: --base-url http://HOST:PORT)")
	fl.IntVar(&c.port, "port", 0, "vllm bench: the server's port")
	fl.StringVar(&c.backend, "backend", "", "vllm bench: openai or vllm (--endpoint completions), openai-chat (--endpoint chat)")
	fl.Float64Var(&c.rangeRatio, "random-range-ratio", 0, "vllm bench: prompt and output lengths uniform in [N·(1−r), N·(1+r)]")
	fl.IntVar(&c.prefixLen, "random-prefix-len", 0, "vllm bench: a shared prefix of N tokens before each prompt (added to the prompt length)")
	fl.StringArrayVar(&c.goodput, "goodput", nil, "vllm bench: KEY:MS, an SLO bound per request (ttft, tpot, e2el; repeatable): --slo with p99 bounds")
	fl.Var(&pairsFlag{dst: &c.metadata, want: "KEY=VALUE"}, "metadata", "vllm bench: KEY=VALUE recorded with the run, as a tag (repeatable)")
	fl.StringVar(&c.percentileMetric, "percentile-metrics", "", "vllm bench: accepted (ttft, tpot, itl, e2el); the report gives percentiles of all four")
	fl.StringVar(&c.metricPercentile, "metric-percentiles", "", "vllm bench: accepted (e.g. 25,50,99); pass them to headroom report --percentiles")
	fl.Bool("skip-chat-template", false, "vllm bench: accepted; headroom never applies a chat template on the client")
	for name := range vllmWithout {
		fl.String(name, "", "vllm bench: no equivalent ("+vllmWithout[name]+")")
		if slices.Contains(vllmWithoutSwitches, name) {
			fl.Lookup(name).NoOptDefVal = "true"
		}
		fl.Lookup(name).Hidden = true
	}
	for _, n := range []string{"request-rate", "host", "port", "backend", "random-range-ratio", "random-prefix-len", "goodput", "metadata",
		"percentile-metrics", "metric-percentiles", "disable-tqdm", "skip-chat-template"} {
		fl.Lookup(n).Hidden = true
	}
	fl.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if c, ok := sweepAliases[name]; ok {
			return pflag.NormalizedName(c)
		}
		if c, ok := sessionAliases[name]; ok {
			return pflag.NormalizedName(c)
		}
		return pflag.NormalizedName(name)
	})
}

// apply turns vllm bench serve's flags into headroom's.
func (c *compatFlags) apply(fl *pflag.FlagSet, f *sweepFlags) error {
	for _, name := range slices.Sorted(maps.Keys(vllmWithout)) {
		if fl.Changed(name) {
			return fmt.Errorf("--%s (vllm bench serve) has no equivalent here: %s", name, vllmWithout[name])
		}
	}
	f.outputGiven = fl.Changed("output-tokens")
	f.sampling.given = map[string]bool{}
	for name := range samplingFields {
		f.sampling.given[name] = fl.Changed(name)
	}
	if fl.Changed("request-rate") {
		if r := strings.ToLower(strings.TrimSpace(c.requestRate)); r != "inf" {
			v, err := strconv.ParseFloat(r, 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				return fmt.Errorf("--request-rate %q: want a positive number of requests/s, or inf", c.requestRate)
			}
			f.rate = []float64{v}
		} else {
			f.rate = nil
		}
	}
	if fl.Changed("host") || fl.Changed("port") {
		if fl.Changed("base-url") {
			return errors.New("--host/--port and --base-url do not mix")
		}
		host, port := cmp.Or(c.host, "127.0.0.1"), c.port
		if port == 0 {
			port = 8000
		}
		f.baseURL = "http://" + net.JoinHostPort(host, strconv.Itoa(port))
	}
	switch c.backend {
	case "":
	case "openai", "vllm":
		f.endpoint = string(sweep.EndpointCompletions)
	case "openai-chat":
		f.endpoint = string(sweep.EndpointChat)
	default:
		return fmt.Errorf("--backend %q: headroom speaks the OpenAI-compatible API: openai, vllm (completions) or openai-chat (chat)", c.backend)
	}
	if fl.Changed("random-range-ratio") {
		r := c.rangeRatio
		if !(r >= 0 && r < 1) {
			return fmt.Errorf("--random-range-ratio %v: want 0 <= r < 1", r)
		}
		for _, d := range []*distFlags{&f.prompt, &f.output} {
			if r > 0 {
				d.kind = sweep.DistUniform
				d.minTok = max(1, int(math.Floor(float64(d.mean)*(1-r))))
				d.maxTok = int(math.Ceil(float64(d.mean) * (1 + r)))
			}
		}
	}
	if c.prefixLen < 0 {
		return fmt.Errorf("--random-prefix-len %d: want 0 or more", c.prefixLen)
	}
	if c.prefixLen > 0 {
		// vllm bench: the prefix comes on top of the random part.
		f.sharedPrefix = c.prefixLen
		f.prompt.mean += c.prefixLen
		if f.prompt.maxTok > 0 {
			f.prompt.minTok += c.prefixLen
			f.prompt.maxTok += c.prefixLen
		}
	}
	if len(c.goodput) > 0 {
		s, err := goodputSLO(c.goodput)
		if err != nil {
			return err
		}
		if f.slo != nil {
			return errors.New("--goodput and --slo do not mix: give one SLO")
		}
		f.slo = s
	}
	for _, kv := range c.metadata {
		f.tags = append(f.tags, kv[0]+"="+kv[1])
	}
	if c.percentileMetric != "" {
		for _, m := range strings.Split(c.percentileMetric, ",") {
			if !slices.Contains([]string{"ttft", "tpot", "itl", "e2el"}, strings.TrimSpace(m)) {
				return fmt.Errorf("--percentile-metrics %q: %q is not one of ttft, tpot, itl, e2el", c.percentileMetric, m)
			}
		}
	}
	if c.metricPercentile != "" {
		if _, err := analyze.ParsePercentiles(c.metricPercentile); err != nil {
			return fmt.Errorf("--metric-percentiles: %w", err)
		}
	}
	return nil
}

// goodputSLO reads vllm bench serve's --goodput KEY:MS pairs: a request is
// good when each of its values is within its bound. headroom's SLO bounds
// a percentile; its per-request share of requests meeting the SLO is
// vllm's goodput. The pairs become p99 bounds.
func goodputSLO(pairs []string) (*slo.SLO, error) {
	var spec []string
	for _, p := range pairs {
		for _, kv := range strings.Fields(p) {
			k, v, ok := strings.Cut(kv, ":")
			ms, err := strconv.ParseFloat(v, 64)
			names := map[string]string{"ttft": "ttft", "tpot": "tpot", "e2el": "e2e"}
			if !ok || err != nil || !(ms > 0) || names[k] == "" {
				return nil, fmt.Errorf("--goodput %q: want KEY:MILLISECONDS with KEY ttft, tpot or e2el, e.g. ttft:2000", kv)
			}
			spec = append(spec, fmt.Sprintf("%s_p99=%sms", names[k], strconv.FormatFloat(ms, 'f', -1, 64)))
		}
	}
	return slo.Parse(strings.Join(spec, ","))
}

// workloadOptions are the options of the search, the saturation stop, the
// arrivals and the request fields.
func workloadOptions(f sweepFlags, concurrencyGiven bool) ([]sweep.Option, error) {
	var opts []sweep.Option
	if f.trace != "" {
		capConc := 0
		if concurrencyGiven {
			if len(f.concurrency) != 1 {
				return nil, usageError{errors.New("with --trace, --concurrency is one number: the cap on requests in flight")}
			}
			capConc = f.concurrency[0]
		}
		if len(f.rate) > 0 {
			return nil, usageError{errors.New("--trace times its own requests: leave out --rate (--trace-speed replays it faster or slower)")}
		}
		opts = append(opts, sweep.WithTrace(sweep.Trace{Path: f.trace, Format: f.traceFormat, Speeds: f.traceSpeeds, BlockSize: f.traceBlockSize}),
			sweep.WithMaxInFlight(capConc))
	}
	switch {
	case f.datasetName == sweep.DatasetRandom && f.dataset != "":
		return nil, usageError{fmt.Errorf("--dataset-name random generates its prompts: give --dataset-name sharegpt, custom or hf for %s", f.dataset)}
	case f.datasetName != "" && f.datasetName != sweep.DatasetRandom && f.dataset == "":
		return nil, usageError{fmt.Errorf("--dataset-name %s needs the file: --dataset-path FILE", f.datasetName)}
	case f.dataset != "":
		d := sweep.Dataset{Name: f.datasetName, Path: f.dataset, DisableShuffle: f.disableShuffle}
		if f.outputGiven {
			d.OutputTokens = f.output.mean
		}
		opts = append(opts, sweep.WithNamedDataset(d))
	}
	if f.maxModelLen != 0 {
		opts = append(opts, sweep.WithMaxModelLen(f.maxModelLen))
	}
	if f.burstiness != sweep.DefaultBurstiness {
		opts = append(opts, sweep.WithBurstiness(f.burstiness))
	}
	if f.ramp.strategy != "" {
		capConc := 0
		if concurrencyGiven {
			if len(f.concurrency) != 1 {
				return nil, usageError{errors.New("with a ramp, --concurrency is one number: the cap on requests in flight")}
			}
			capConc = f.concurrency[0]
		}
		if len(f.rate) > 0 {
			return nil, usageError{errors.New("--ramp-up-strategy sets the arrival rate itself: leave out --rate")}
		}
		opts = append(opts, sweep.WithRamp(f.ramp.strategy, f.ramp.start, f.ramp.end, capConc))
	}
	if f.findMax {
		if f.slo == nil {
			return nil, usageError{errors.New("--find-max needs an SLO: --slo ttft_p99=2s,tpot_p99=100ms (or vllm bench's --goodput)")}
		}
		fm := sweep.FindMax{SLO: f.slo, Limit: f.findMaxLimit, Precision: f.findMaxPrecision}
		if len(f.rate) == 0 && concurrencyGiven {
			if len(f.concurrency) != 1 {
				return nil, usageError{errors.New("--find-max starts from one --concurrency (or searches the rate from one --rate)")}
			}
			fm.Start = float64(f.concurrency[0])
		} else if len(f.rate) > 0 && concurrencyGiven && len(f.concurrency) != 1 {
			return nil, usageError{errors.New("with --rate, --concurrency is one number: the cap on requests in flight")}
		}
		opts = append(opts, sweep.WithFindMax(fm))
	} else if f.slo != nil {
		if len(f.compat.goodput) > 0 {
			return nil, usageError{errors.New("--goodput is an SLO: a sweep judges it only with --find-max; for the goodput of a run give it to headroom report --slo")}
		}
		return nil, usageError{errors.New("--slo is the SLO of --find-max; for a report's goodput give it to headroom report")}
	}
	if f.stopWhenSaturated {
		opts = append(opts, sweep.WithStopWhenSaturated(true))
	}
	for _, h := range f.headers {
		opts = append(opts, sweep.WithHeader(h[0], h[1]))
	}
	extra, err := f.sampling.body()
	if err != nil {
		return nil, usageError{err}
	}
	if len(extra) > 0 {
		opts = append(opts, sweep.WithExtraBody(extra))
	}
	return opts, nil
}

// body is the sampling fields given, and --extra-body's.
func (s samplingFlags) body() (map[string]any, error) {
	out := map[string]any{}
	if s.extraBody != "" {
		if err := json.Unmarshal([]byte(s.extraBody), &out); err != nil || out == nil {
			return nil, fmt.Errorf("--extra-body %q: want a JSON object", s.extraBody)
		}
	}
	values := map[string]any{"top-p": s.topP, "top-k": s.topK, "min-p": s.minP, "frequency-penalty": s.frequencyPenalty,
		"presence-penalty": s.presencePenalty, "repetition-penalty": s.repetitionPenalty}
	for flag, field := range samplingFields {
		if s.given[flag] {
			out[field] = values[flag]
		}
	}
	return out, nil
}
