package importer

// guidellm (vllm-project/guidellm) writes benchmarks.json: a report with
// one benchmark per strategy of a sweep (synchronous, concurrent with N
// streams, throughput, constant or Poisson rates), each with its requests
// grouped as successful, incomplete and errored. Request times are Unix
// seconds (floats). Versions differ in where things live: 0.2-0.3 keep
// start_time, first_token_time, last_token_time and end_time on the request
// and the strategy under args; later versions keep the times under
// info.timings (request_start, first_token_iteration, last_token_iteration,
// request_end) and the strategy under config or scheduler. guidellm keeps
// the first and last token times and the number of token iterations, not
// the time of every token.

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// GuideLLMPercentileMethod names where sampled guidellm levels' statistics
// come from.
const GuideLLMPercentileMethod = "as guidellm computed them (benchmarks.json metrics)"

func parseGuideLLM(f fileRef) ([]*sweepSource, error) {
	var report map[string]any
	if err := decodeStrict(f.values[0], &report); err != nil {
		return nil, err
	}
	benches, _ := report["benchmarks"].([]any)
	if len(benches) == 0 {
		return nil, errors.New(`"benchmarks" is empty`)
	}
	version := str(dig(report, "metadata", "guidellm_version"))
	file := "benchmarks.json"
	if f.syntax == "yaml" {
		file = "benchmarks.yaml"
	}
	tool := "guidellm (" + file + ")"
	if version != "" {
		tool = "guidellm " + version + " (" + file + ")"
	}
	src := &sweepSource{
		kind: KindGuideLLM, tool: tool, file: f.path, sha256: f.sha256(),
		engine:   rundir.Engine{Name: "unknown (OpenAI-compatible server measured with guidellm)"},
		workload: rundir.Workload{Endpoint: "completions"},
		lacks: []string{
			"per-token times (guidellm keeps the first and last token times and the iteration count): no ITL distribution",
			"server log and /metrics", "GPU, driver and engine version", "server flags",
		},
		notes: []string{"send, first-token and end times are guidellm's request timestamps (Unix seconds)"},
	}
	src.engine.Model = firstStr(report, []string{"args", "model"}, []string{"args", "backend_kwargs", "model"})
	src.engine.BaseURL = redactURL(firstStr(report, []string{"args", "target"}))
	var minSend int64
	sampled := false
	var out []sourceLevel
	for bi, braw := range benches {
		b, _ := braw.(map[string]any)
		if b == nil {
			return nil, fmt.Errorf("benchmarks[%d] is not an object", bi)
		}
		where := fmt.Sprintf("benchmarks[%d]", bi)
		strategy := firstObj(b, []string{"config", "strategy"}, []string{"scheduler", "strategy"}, []string{"args", "strategy"})
		level := sourceLevel{}
		kind := str(strategy["type_"])
		switch kind {
		case "synchronous":
			level.concurrency = 1
		case "concurrent":
			level.concurrency = int64(num(strategy["streams"]))
		case "throughput":
			level.concurrency = int64(num(strategy["max_concurrency"]))
		case "constant", "poisson", "async":
			level.rateRPS = num(strategy["rate"])
			level.concurrency = int64(num(strategy["max_concurrency"]))
		case "trace":
			// A replayed trace sets no load: the level is known by the
			// requests in flight (below).
		default:
			return nil, fmt.Errorf("%s: unknown or missing strategy %q (looked in config.strategy, scheduler.strategy, args.strategy)", where, kind)
		}
		level.origin = fmt.Sprintf("%s (%s, %s)", f.path, where, kind)
		if src.engine.Model == "" {
			src.engine.Model = firstStr(b, []string{"worker", "backend_model"}, []string{"benchmarker", "backend", "model"})
		}
		if firstStr(b, []string{"worker", "backend_type"}) == "openai_http" || strings.Contains(firstStr(b, []string{"requests", "successful", "0", "request_type"}), "chat") {
			src.workload.Endpoint = "chat"
		}
		groups, _ := b["requests"].(map[string]any)
		if groups == nil {
			return nil, fmt.Errorf("%s: no \"requests\"", where)
		}
		// guidellm 0.4 and later keep the warm-up and cool-down requests
		// in the lists and measure over [measure_start_time,
		// measure_end_time]: a request counts when it ends after the start
		// and starts before the end (GenerativeRequestsAccumulator.
		// get_within_range). 0.2-0.3 kept only the measured ones.
		mStart := num(dig(b, "scheduler_metrics", "measure_start_time"))
		mEnd := num(dig(b, "scheduler_metrics", "measure_end_time"))
		windowed := mStart > 0 && mEnd > 0
		kept := map[string]int{}
		outside := 0
		for _, status := range []string{"successful", "incomplete", "errored"} {
			list, _ := groups[status].([]any)
			for ri, rraw := range list {
				r, _ := rraw.(map[string]any)
				req, err := guidellmRequest(r, status)
				if err != nil {
					return nil, fmt.Errorf("%s.requests.%s[%d]: %w", where, status, ri, err)
				}
				if minSend == 0 || req.sendNS < minSend {
					minSend = req.sendNS
				}
				if req.id == "" {
					req.id = fmt.Sprintf("b%d-%s-%d", bi, status, ri)
				}
				if windowed && (req.endNS < epochNSFromS(mStart) || req.sendNS > epochNSFromS(mEnd)) {
					req.warmup = true
					outside++
				} else {
					kept[status]++
				}
				if status == "incomplete" {
					// Cut off when the benchmark ended: guidellm counts it
					// neither as a success nor as an error, and neither
					// does the measurement here.
					req.warmup = true
				}
				level.requests = append(level.requests, req)
			}
		}
		if outside > 0 {
			src.notes = append(src.notes, fmt.Sprintf("%s: %d requests ran in guidellm's warm-up or cool-down (outside measure_start_time to measure_end_time) and are marked warm-up", where, outside))
		}
		if n := kept["incomplete"]; n > 0 {
			src.notes = append(src.notes, fmt.Sprintf("%s: %d incomplete requests (cut off when the benchmark ended) are kept but left out of the measurement, as guidellm leaves them out of its success and error counts", where, n))
		}
		totals := firstObj(b, []string{"request_totals"}, []string{"metrics", "request_totals"})
		for _, status := range []string{"successful", "incomplete", "errored"} {
			if float64(kept[status]) < num(totals[status]) {
				sampled = true
			}
		}
		level.stats = guidellmLevelStats(b, totals)
		if level.stats != nil && level.concurrency == 0 && level.rateRPS == 0 {
			// The throughput strategy without a cap: guidellm's mean
			// number of requests in flight stands for the level.
			if c := num(dig(b, "metrics", "request_concurrency", "successful", "mean")); c > 0 {
				level.stats.Concurrency = int64(math.Round(c))
			}
		}
		out = append(out, level)
	}
	if sampled {
		// Throughput from a sample of the requests would be understated:
		// use guidellm's own per-benchmark statistics instead.
		for i := range out {
			if out[i].stats == nil {
				return nil, fmt.Errorf("%s: guidellm kept only a sample of the requests and the benchmark has no metrics to use instead (run guidellm without --output-sampling)", out[i].origin)
			}
			if out[i].concurrency == 0 && out[i].rateRPS == 0 {
				out[i].concurrency = out[i].stats.Concurrency
				if out[i].concurrency > 0 {
					src.notes = append(src.notes, fmt.Sprintf("%s: no concurrency cap; %d is guidellm's mean number of requests in flight", out[i].origin, out[i].concurrency))
				}
			}
			out[i].requests = nil
		}
		src.lacks = append(src.lacks, "per-request times (guidellm kept only a sample of the requests, --output-sampling): per-level statistics are guidellm's own")
	} else {
		for i := range out {
			out[i].stats = nil
		}
	}
	if minSend > 0 {
		src.start = time.Unix(0, minSend)
	} else if t := num(dig(benches[0].(map[string]any), "start_time")); t > 0 {
		src.start = time.Unix(0, epochNSFromS(t))
	}
	src.levels = out
	return []*sweepSource{src}, nil
}

// guidellmRequest reads one request of any supported guidellm version.
func guidellmRequest(r map[string]any, group string) (sourceRequest, error) {
	var req sourceRequest
	if r == nil {
		return req, errors.New("not an object")
	}
	req.id = str(r["request_id"])
	timings := firstObj(r, []string{"info", "timings"}, []string{"info", "request_timings"}, []string{"scheduler_info", "request_timings"})
	pick := func(flat string, nested ...string) float64 {
		if v := num(r[flat]); v > 0 {
			return v
		}
		for _, k := range nested {
			if v := num(timings[k]); v > 0 {
				return v
			}
		}
		return 0
	}
	// 0.2-0.3: start_time, first_token_time, end_time on the request;
	// later: the computed request_start_time and request_end_time, and
	// info.timings (request_start, else resolve_start; first_token_iteration).
	start := pick("start_time", "request_start", "resolve_start")
	if start == 0 {
		start = num(r["request_start_time"])
	}
	end := pick("end_time", "request_end", "resolve_end")
	if end == 0 {
		end = num(r["request_end_time"])
	}
	first := pick("first_token_time", "first_token_iteration")
	if first == 0 {
		first = num(r["first_token_iteration"])
	}
	if start <= 0 {
		return req, errors.New("no start time (start_time or info.timings.request_start)")
	}
	req.sendNS = epochNSFromS(start)
	req.endNS = req.sendNS
	if end > 0 {
		req.endNS = epochNSFromS(end)
	}
	if v, ok := r["prompt_tokens"].(float64); ok {
		req.promptTokens = ptr(int64(v))
	}
	if v, ok := r["output_tokens"].(float64); ok {
		req.outputTokens = ptr(int64(v))
	}
	msg := cmp.Or(str(r["error"]), str(dig(r, "info", "error")))
	switch group {
	case "successful":
		req.status = rundir.StatusOK
		if first > 0 {
			req.firstNS = ptr(epochNSFromS(first))
		}
	case "incomplete":
		req.status, req.err = rundir.StatusCanceled, cmp.Or(msg, "incomplete when the benchmark ended")
	default:
		req.status, req.httpStatus = classifyError(errorSummary(msg), 0)
		req.err = truncate(cmp.Or(msg, "errored (no message)"), 500)
	}
	return req, nil
}

// guidellmLevelStats reads guidellm's per-benchmark statistics (used when
// the requests are a sample); nil when the benchmark has none. guidellm's
// inter_token_latency_ms is (latency − TTFT)/(output tokens − 1) per
// request, headroom's TPOT; guidellm keeps no per-chunk gaps, so there is
// no ITL.
func guidellmLevelStats(b map[string]any, totals map[string]any) *rundir.LevelStatsRow {
	m, _ := b["metrics"].(map[string]any)
	if m == nil {
		return nil
	}
	get := func(metric string, path ...string) float64 {
		return num(dig(m, append([]string{metric, "successful"}, path...)...))
	}
	row := &rundir.LevelStatsRow{
		OutputTokPerS:    get("output_tokens_per_second", "mean"),
		TotalTokPerS:     get("tokens_per_second", "mean"),
		RequestsPerS:     get("requests_per_second", "mean"),
		MeanPromptTokens: get("prompt_token_count", "mean"),
		MeanOutputTokens: get("output_token_count", "mean"),
		TTFTP50S:         get("time_to_first_token_ms", "median") / 1e3,
		TTFTP90S:         get("time_to_first_token_ms", "percentiles", "p90") / 1e3,
		TTFTP99S:         get("time_to_first_token_ms", "percentiles", "p99") / 1e3,
		TPOTP50S:         get("inter_token_latency_ms", "median") / 1e3,
		TPOTP90S:         get("inter_token_latency_ms", "percentiles", "p90") / 1e3,
		TPOTP99S:         get("inter_token_latency_ms", "percentiles", "p99") / 1e3,
		E2EP50S:          get("request_latency", "median"),
		E2EP90S:          get("request_latency", "percentiles", "p90"),
		E2EP99S:          get("request_latency", "percentiles", "p99"),
		WindowS:          num(b["duration"]),
		RequestsOK:       int64(num(totals["successful"])),
		Errors:           int64(num(totals["errored"])),
		Incomplete:       int64(num(totals["incomplete"])),
		PercentileMethod: GuideLLMPercentileMethod,
	}
	if row.OutputTokPerS == 0 {
		return nil
	}
	return row
}

// dig walks nested JSON objects (and arrays, by decimal index).
func dig(v any, path ...string) any {
	for _, k := range path {
		switch t := v.(type) {
		case map[string]any:
			v = t[k]
		case []any:
			var i int
			if _, err := fmt.Sscan(k, &i); err != nil || i < 0 || i >= len(t) {
				return nil
			}
			v = t[i]
		default:
			return nil
		}
	}
	return v
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func num(v any) float64 {
	switch t := v.(type) {
	case float64:
		if math.IsNaN(t) {
			return 0
		}
		return t
	case json.Number:
		f, _ := t.Float64()
		return f
	}
	return 0
}

func firstStr(v any, paths ...[]string) string {
	for _, p := range paths {
		if s := str(dig(v, p...)); s != "" {
			return s
		}
	}
	return ""
}

func firstObj(v any, paths ...[]string) map[string]any {
	for _, p := range paths {
		if m, ok := dig(v, p...).(map[string]any); ok {
			return m
		}
	}
	return map[string]any{}
}
