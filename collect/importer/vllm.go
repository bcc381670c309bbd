package importer

// vllm bench serve --save-result: one JSON object per run (several, one per
// line, with --append-result), written by vllm/benchmarks/serve.py (before
// that, benchmarks/benchmark_serving.py). Without --save-detailed it holds
// aggregates only; with it, per-request arrays: input_lens, output_lens,
// ttfts, itls, errors, and in newer versions start_times and latencies.
// Times in the arrays are seconds; start_times are time.perf_counter()
// readings, so they are relative to an unknown origin.

import (
	"cmp"
	"container/heap"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

type vllmResult struct {
	Date                  string          `json:"date"`
	Backend               string          `json:"backend"`
	EndpointType          string          `json:"endpoint_type"`
	Label                 *string         `json:"label"`
	ModelID               string          `json:"model_id"`
	TokenizerID           *string         `json:"tokenizer_id"`
	NumPrompts            *int64          `json:"num_prompts"`
	RequestRate           json.RawMessage `json:"request_rate"`
	MaxConcurrency        *int64          `json:"max_concurrency"`
	Duration              *float64        `json:"duration"`
	Completed             *int64          `json:"completed"`
	Failed                *int64          `json:"failed"`
	TotalInputTokens      int64           `json:"total_input_tokens"`
	TotalOutputTokens     int64           `json:"total_output_tokens"`
	RequestThroughput     *float64        `json:"request_throughput"`
	OutputThroughput      *float64        `json:"output_throughput"`
	TotalTokenThroughput  *float64        `json:"total_token_throughput"`
	MaxConcurrentRequests *int64          `json:"max_concurrent_requests"`
	RunNumber             *int64          `json:"run_number"`

	InputLens  []int64     `json:"input_lens"`
	OutputLens []int64     `json:"output_lens"`
	TTFTs      []float64   `json:"ttfts"`
	ITLs       [][]float64 `json:"itls"`
	Latencies  []float64   `json:"latencies"`
	StartTimes []float64   `json:"start_times"`
	Errors     []string    `json:"errors"`
}

// vllmKnownKeys are the result keys that are not --metadata KEY=VALUE pairs
// or vllm bench sweep's serve and bench overrides. ("request_goodput:", with
// its colon, is how benchmark_serving.py spelled it for a while.)
var vllmKnownKeys = []string{
	"date", "endpoint_type", "backend", "label", "model_id", "tokenizer_id", "num_prompts", "request_rate",
	"burstiness", "max_concurrency", "ramp_up_strategy", "ramp_up_start_rps", "ramp_up_end_rps", "duration",
	"completed", "failed", "total_input_tokens", "total_output_tokens", "request_throughput", "request_goodput",
	"request_goodput:", "output_throughput", "total_token_throughput", "input_lens", "output_lens", "ttfts", "itls", "latencies",
	"start_times", "queue_times", "generated_texts", "errors", "max_output_tokens_per_s", "max_concurrent_requests",
	"rtfx", "rps_change_events", "total_input_sequences", "input_sequence_throughput", "run_number",
	"best_of", "use_beam_search",
}

// VLLMPercentileMethod names how vllm bench serve computes its percentiles.
const VLLMPercentileMethod = "numpy.percentile, linear interpolation, over successful requests (vllm bench serve)"

func parseVLLM(f fileRef, opts Options) ([]*sweepSource, error) {
	var out []*sweepSource
	warmups := 0
	for i, v := range f.values {
		where := ""
		if len(f.values) > 1 {
			noun := "result"
			if f.syntax == "csv" {
				noun = "row"
			}
			where = fmt.Sprintf("%s %d of %d: ", noun, i+1, len(f.values))
		}
		src, err := parseVLLMResult(f, v, opts, where)
		if errors.Is(err, errWarmup) {
			warmups++
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s%w", where, err)
		}
		out = append(out, src)
	}
	if len(out) == 0 {
		return nil, errors.New(`only vllm bench sweep's warm-up run ("run_number": -1) is in the file: import the run=N.json files or the combination's summary.json`)
	}
	if warmups > 0 {
		out[0].notes = append(out[0].notes, fmt.Sprintf("%d warm-up result(s) (vllm bench sweep's run_number -1) left out", warmups))
	}
	return out, nil
}

var errWarmup = errors.New("warm-up run")

func parseVLLMResult(f fileRef, raw json.RawMessage, opts Options, where string) (*sweepSource, error) {
	var r vllmResult
	if err := decodeStrict(raw, &r); err != nil {
		return nil, err
	}
	if r.RunNumber != nil && *r.RunNumber < 0 {
		return nil, errWarmup
	}
	all := objectKeys(raw)
	if r.OutputThroughput == nil {
		if r.RequestThroughput != nil && r.TotalOutputTokens == 0 {
			return nil, errors.New(`no "output_throughput": a pooling (embedding) benchmark has no generation to import`)
		}
		return nil, errors.New(`no "output_throughput": not a whole vllm bench serve --save-result file (import the file the tool wrote, not a summary of it)`)
	}
	switch {
	case r.Duration == nil:
		return nil, errors.New(`no "duration": not a whole vllm bench serve --save-result file (import the file the tool wrote, not a summary of it)`)
	case *r.Duration <= 0:
		return nil, fmt.Errorf(`"duration" is %g: the benchmark measured nothing`, *r.Duration)
	case r.Completed == nil:
		return nil, errors.New(`no "completed": not a whole vllm bench serve --save-result file (import the file the tool wrote, not a summary of it)`)
	}
	rate, err := vllmRate(r.RequestRate)
	if err != nil {
		return nil, err
	}
	backend := cmp.Or(r.Backend, r.EndpointType, "openai")
	src := &sweepSource{
		kind: KindVLLMBench, tool: "vllm bench serve --save-result (backend " + backend + ")",
		file: f.path, sha256: f.sha256(),
		engine: rundir.Engine{
			Name:  "unknown (OpenAI-compatible server measured with vllm bench serve)",
			Model: r.ModelID,
		},
		workload: rundir.Workload{Endpoint: "completions", FixedOutputNote: "vllm bench serve sends ignore_eos for its random dataset (and with --ignore-eos); the file does not record whether it was sent"},
	}
	if r.RunNumber != nil {
		src.tool = "vllm bench sweep serve (vllm bench serve --save-result, backend " + backend + ")"
	}
	if strings.Contains(backend, "chat") {
		src.workload.Endpoint = "chat"
	}
	src.config = append(src.config, configItem{"backend", backend})
	if r.TokenizerID != nil {
		src.workload.Tokenizer = "vllm bench serve counted tokens with " + *r.TokenizerID
	}
	if r.Label != nil {
		src.label = *r.Label
		src.config = append(src.config, configItem{"label", *r.Label})
	}
	for _, k := range slices.Sorted(maps.Keys(all)) {
		if slices.Contains(vllmKnownKeys, k) || strings.HasSuffix(k, "_ms") || strings.HasPrefix(k, "spec_decode_") ||
			strings.HasPrefix(k, "diffusion_") || strings.HasPrefix(k, "probe_") {
			continue
		}
		if s := scalarString(all[k]); s != "" {
			src.tags = append(src.tags, k+"="+s)
			src.config = append(src.config, configItem{k, s})
		}
	}

	// The file is written when the benchmark ends; "date" is that local
	// time (zone unknown), so the run starts duration seconds before.
	durNS := nsFromS(*r.Duration)
	var end time.Time
	if d, err := time.Parse("20060102-150405", r.Date); err == nil {
		end = d
		src.notes = append(src.notes, where+`times are anchored at the file's "date" (the local time the result was saved, time zone not recorded, read as UTC) minus its duration`)
	} else {
		end = f.modTime
		src.notes = append(src.notes, where+`the result has no readable "date": times are anchored at the file's modification time minus its duration`)
	}
	startNS := end.UnixNano() - durNS
	if !opts.Date.IsZero() {
		startNS = opts.Date.UnixNano()
	}
	src.start = time.Unix(0, startNS)
	src.end = time.Unix(0, startNS+durNS)

	level := sourceLevel{origin: fmt.Sprintf("%s (%s)", f.path, strings.TrimSuffix(where, ": "))}
	if where == "" {
		level.origin = f.path
	}
	if r.RunNumber != nil {
		level.repeat = int(*r.RunNumber) + 1
	}
	numPrompts := int64(0)
	if r.NumPrompts != nil {
		numPrompts = *r.NumPrompts
	}
	switch {
	case r.MaxConcurrency != nil && *r.MaxConcurrency > 0:
		level.concurrency = *r.MaxConcurrency
	case math.IsInf(rate, 1) && numPrompts > 0:
		level.concurrency = numPrompts
		src.notes = append(src.notes, fmt.Sprintf("%sno --max-concurrency and an infinite request rate: all %d requests were sent at once (concurrency %d)", where, numPrompts, numPrompts))
	}
	if !math.IsInf(rate, 1) {
		level.rateRPS = rate
		if r.MaxConcurrentRequests != nil && *r.MaxConcurrentRequests > 0 {
			src.notes = append(src.notes, fmt.Sprintf("%sopen loop at %g requests/s: at most %d requests were in flight at once (vllm bench serve's max_concurrent_requests)", where, rate, *r.MaxConcurrentRequests))
		}
	}
	src.lacks = []string{
		"server log and /metrics", "GPU, driver and engine version", "server flags",
		"HTTP status codes of failed requests (only the reason phrase or the exception)",
	}

	if len(r.TTFTs) == 0 {
		return vllmAggregate(src, level, r, all, where)
	}
	if err := vllmRequests(src, &level, r, rate, startNS); err != nil {
		return nil, err
	}
	src.levels = []sourceLevel{level}
	return src, nil
}

// scalarString renders a JSON string, number or boolean as text; "" for
// null, objects and lists.
func scalarString(raw json.RawMessage) string {
	if s := rawString(raw); s != "" {
		return s
	}
	t := strings.TrimSpace(string(raw))
	if t == "true" || t == "false" {
		return t
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// vllmFailed is the number of failed requests of a result: "failed" when
// the file has it, else num_prompts − completed (benchmark_serving.py
// before "failed" was added counted only the completed ones).
func vllmFailed(src *sweepSource, r vllmResult, where string) int64 {
	if r.Failed != nil {
		return *r.Failed
	}
	if r.NumPrompts != nil && *r.NumPrompts > *r.Completed {
		src.notes = append(src.notes, fmt.Sprintf(`%sthe result has no "failed" (older vllm): %d failed requests are num_prompts − completed`, where, *r.NumPrompts-*r.Completed))
		return *r.NumPrompts - *r.Completed
	}
	if r.NumPrompts == nil {
		src.lacks = append(src.lacks, `the number of failed requests (no "failed" and no "num_prompts")`)
	}
	return 0
}

// vllmAggregate maps a result saved without --save-detailed to one row of
// per-level statistics, as vllm bench serve computed them.
func vllmAggregate(src *sweepSource, level sourceLevel, r vllmResult, all map[string]json.RawMessage, where string) (*sweepSource, error) {
	ms := func(keys ...string) float64 {
		for _, key := range keys {
			var v *float64
			if json.Unmarshal(all[key], &v) == nil && v != nil {
				return *v / 1e3
			}
		}
		return 0
	}
	row := &rundir.LevelStatsRow{
		RequestsOK: *r.Completed, Errors: vllmFailed(src, r, where),
		WindowS: *r.Duration, OutputTokPerS: *r.OutputThroughput,
		TTFTP50S: ms("median_ttft_ms", "p50_ttft_ms"), TTFTP90S: ms("p90_ttft_ms"), TTFTP99S: ms("p99_ttft_ms"),
		TPOTP50S: ms("median_tpot_ms", "p50_tpot_ms"), TPOTP90S: ms("p90_tpot_ms"), TPOTP99S: ms("p99_tpot_ms"),
		ITLP50S: ms("median_itl_ms", "p50_itl_ms"), ITLP90S: ms("p90_itl_ms"), ITLP99S: ms("p99_itl_ms"),
		E2EP50S: ms("median_e2el_ms", "p50_e2el_ms"), E2EP90S: ms("p90_e2el_ms"), E2EP99S: ms("p99_e2el_ms"),
		PercentileMethod: VLLMPercentileMethod,
	}
	if r.RequestThroughput != nil {
		row.RequestsPerS = *r.RequestThroughput
	}
	if r.TotalTokenThroughput != nil {
		row.TotalTokPerS = *r.TotalTokenThroughput
	}
	if *r.Completed > 0 {
		row.MeanPromptTokens = float64(r.TotalInputTokens) / float64(*r.Completed)
		row.MeanOutputTokens = float64(r.TotalOutputTokens) / float64(*r.Completed)
		src.workload.Prompt = rundir.Dist{Kind: "dataset", Mean: row.MeanPromptTokens}
		src.workload.Output = rundir.Dist{Kind: "dataset", Mean: row.MeanOutputTokens}
	}
	level.stats = row
	src.levels = []sourceLevel{level}
	src.lacks = append(src.lacks,
		"per-request and per-token times (saved without --save-detailed)",
		"percentiles other than those asked with --metric-percentiles (default: p99 only)")
	if r.NumPrompts != nil {
		src.workload.RequestsPerLevel = int(*r.NumPrompts)
	}
	return src, nil
}

// vllmRequests builds the requests of one --save-detailed result.
func vllmRequests(src *sweepSource, level *sourceLevel, r vllmResult, rate float64, startNS int64) error {
	n := len(r.TTFTs)
	for name, l := range map[string]int{"itls": len(r.ITLs), "output_lens": len(r.OutputLens), "input_lens": len(r.InputLens)} {
		if l != n {
			return fmt.Errorf(`"ttfts" has %d entries but %q has %d`, n, name, l)
		}
	}
	for name, l := range map[string]int{"errors": len(r.Errors), "latencies": len(r.Latencies), "start_times": len(r.StartTimes)} {
		if l != 0 && l != n {
			return fmt.Errorf(`"ttfts" has %d entries but %q has %d`, n, name, l)
		}
	}
	fail := vllmFailures(src, r)
	failed := func(i int) bool { return fail[i] }
	latency := func(i int) float64 {
		if len(r.Latencies) > 0 {
			return r.Latencies[i]
		}
		if failed(i) {
			return 0
		}
		// vllm's latency is the last chunk's arrival: ttft plus the gaps.
		s := r.TTFTs[i]
		for _, g := range r.ITLs[i] {
			s += g
		}
		return s
	}

	sendS := make([]float64, n)
	if len(r.StartTimes) > 0 {
		t0 := slices.Min(r.StartTimes)
		for i, s := range r.StartTimes {
			sendS[i] = s - t0
		}
		src.notes = append(src.notes, "send times are vllm's start_times (time.perf_counter() offsets, exact relative to each other); first-token and chunk times are send + ttft + the itls gaps")
	} else {
		lat := make([]float64, n)
		for i := range lat {
			lat[i] = latency(i)
		}
		conc := 0
		if r.MaxConcurrency != nil {
			conc = int(*r.MaxConcurrency)
		}
		sendS = replaySchedule(lat, conc, rate)
		how := "all requests at once"
		switch {
		case conc > 0 && !math.IsInf(rate, 1):
			how = fmt.Sprintf("arrivals evenly spaced at %g/s (the real Poisson arrivals are not recorded) and at most %d in flight", rate, conc)
		case conc > 0:
			how = fmt.Sprintf("at most %d in flight, each sent when one finishes", conc)
		case !math.IsInf(rate, 1):
			how = fmt.Sprintf("arrivals evenly spaced at %g/s (the real Poisson arrivals are not recorded)", rate)
		}
		src.notes = append(src.notes, "send times are reconstructed ("+how+"): this vllm version saves no start_times; first-token and chunk times are exact relative to each send")
		src.lacks = append(src.lacks, "request send times (reconstructed from the client's schedule)")
	}
	src.lacks = append(src.lacks, "tokens per streamed chunk (itls are gaps between chunks)", "absolute times (perf_counter offsets)")

	var promptSum, outSum, ok int64
	promptMin, promptMax := int64(math.MaxInt64), int64(0)
	for i := 0; i < n; i++ {
		send := startNS + nsFromS(sendS[i])
		req := sourceRequest{id: fmt.Sprintf("%d", i), sendNS: send, endNS: send + nsFromS(latency(i)), status: rundir.StatusOK}
		req.promptTokens = ptr(r.InputLens[i])
		if failed(i) {
			msg := ""
			if len(r.Errors) > 0 {
				msg = r.Errors[i]
			}
			req.status, req.httpStatus = classifyError(errorSummary(msg), 0)
			req.err = truncate(msg, 500)
			level.requests = append(level.requests, req)
			continue
		}
		first := send + nsFromS(r.TTFTs[i])
		req.firstNS = &first
		req.chunkNS = chunkTimes(first, r.ITLs[i])
		if len(r.Latencies) == 0 {
			req.endNS = req.chunkNS[len(req.chunkNS)-1]
		}
		req.outputTokens = ptr(r.OutputLens[i])
		level.requests = append(level.requests, req)
		ok++
		promptSum += r.InputLens[i]
		outSum += r.OutputLens[i]
		promptMin, promptMax = min(promptMin, r.InputLens[i]), max(promptMax, r.InputLens[i])
	}
	if ok > 0 {
		src.workload.Prompt = lengthDist(promptSum, ok, promptMin, promptMax)
		src.workload.Output = rundir.Dist{Kind: "dataset", Mean: float64(outSum) / float64(ok)}
		src.notes = append(src.notes, "workload output lengths are what the server returned; the file does not record what was asked")
	}
	src.workload.RequestsPerLevel = n
	return nil
}

// vllmFailures marks the failed requests of a --save-detailed result the
// way vllm bench serve counts them: a request is completed when its
// RequestFuncOutput says success, whatever it returned (a request with no
// output tokens and no error is completed), and failed otherwise. The
// file keeps no success flag, so a failure is known by its error text,
// else by its latency (0 for a failure, as the output starts; the time to
// the last chunk for a success). Older files have neither latencies nor
// always an error text: there, as many requests as num_prompts −
// completed are marked among those with nothing received (no first chunk,
// no chunks, no output tokens), in order.
func vllmFailures(src *sweepSource, r vllmResult) []bool {
	n := len(r.TTFTs)
	fail := make([]bool, n)
	count := 0
	for i := range fail {
		if (len(r.Errors) > 0 && r.Errors[i] != "") || (len(r.Latencies) > 0 && r.Latencies[i] <= 0) {
			fail[i] = true
			count++
		}
	}
	want := int64(count)
	switch {
	case r.Failed != nil:
		want = *r.Failed
	case r.Completed != nil:
		want = int64(n) - *r.Completed
	}
	for i := 0; i < n && int64(count) < want; i++ {
		if !fail[i] && r.TTFTs[i] <= 0 && len(r.ITLs[i]) == 0 && r.OutputLens[i] == 0 {
			fail[i] = true
			count++
		}
	}
	if int64(count) != want {
		src.warnings = append(src.warnings, fmt.Sprintf("the per-request arrays show %d failed requests but the result counts %d: the requests are imported as the arrays show them", count, want))
	}
	return fail
}

// vllmRate reads request_rate: a number, or "inf" (also written as a bare
// Infinity by older versions, read as null).
func vllmRate(raw json.RawMessage) (float64, error) {
	if isNull(raw) {
		return math.Inf(1), nil
	}
	if s := rawString(raw); s != "" {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, fmt.Errorf(`"request_rate" %q is not a number`, s)
		}
		return v, nil
	}
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, fmt.Errorf(`"request_rate": %w`, err)
	}
	if v <= 0 {
		return 0, fmt.Errorf(`"request_rate" %g is not positive`, v)
	}
	return v, nil
}

// replaySchedule reconstructs send times (seconds from the start) of a
// client that releases request i at i/rate (all at 0 for an infinite rate)
// and keeps at most conc in flight (no cap when conc <= 0), admitting
// waiting requests in order as earlier ones finish, as vllm bench serve's
// semaphore does.
func replaySchedule(latencyS []float64, conc int, rate float64) []float64 {
	sends := make([]float64, len(latencyS))
	free := &floatHeap{}
	for i, lat := range latencyS {
		arrive := 0.0
		if !math.IsInf(rate, 1) && rate > 0 {
			arrive = float64(i) / rate
		}
		send := arrive
		if conc > 0 && free.Len() == conc {
			send = max(arrive, heap.Pop(free).(float64))
		}
		sends[i] = send
		if conc > 0 {
			heap.Push(free, send+lat)
		}
	}
	return sends
}

type floatHeap []float64

func (h floatHeap) Len() int           { return len(h) }
func (h floatHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h floatHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *floatHeap) Push(x any)        { *h = append(*h, x.(float64)) }
func (h *floatHeap) Pop() any {
	old := *h
	v := old[len(old)-1]
	*h = old[:len(old)-1]
	return v
}

// lengthDist describes token lengths: fixed when every request had the
// same length, else "dataset" with the mean and range.
func lengthDist(sum, n, lo, hi int64) rundir.Dist {
	if lo == hi {
		return rundir.Dist{Kind: "fixed", Mean: float64(lo)}
	}
	return rundir.Dist{Kind: "dataset", Mean: float64(sum) / float64(n), Min: int(lo), Max: int(hi)}
}

// errorSummary keeps the line of an error text that says most: the last
// line of a Python traceback, or the text itself.
func errorSummary(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		// Python tracebacks end with the exception; the last line says most.
		lines := strings.Split(s, "\n")
		return strings.TrimSpace(lines[len(lines)-1])
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
