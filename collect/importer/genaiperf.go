package importer

// GenAI-Perf (triton-inference-server/perf_analyzer, genai-perf) writes the
// raw perf_analyzer export, profile_export.json: per experiment (a
// concurrency or a request rate) every request with its send timestamp and
// the receive timestamp of every response (nanoseconds), plus the
// responses themselves (SSE text for OpenAI endpoints, text_output for
// Triton). GenAI-Perf counts tokens later with a tokenizer; the export
// itself has no token counts unless the server sent usage.

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

type genaiPerfExport struct {
	ServiceKind string `json:"service_kind"`
	Endpoint    string `json:"endpoint"`
	Experiments []struct {
		Experiment struct {
			Mode  string  `json:"mode"`
			Value float64 `json:"value"`
		} `json:"experiment"`
		Requests []genaiPerfRequest `json:"requests"`
	} `json:"experiments"`
}

type genaiPerfRequest struct {
	Timestamp          int64                        `json:"timestamp"`
	RequestInputs      map[string]json.RawMessage   `json:"request_inputs"`
	ResponseTimestamps []int64                      `json:"response_timestamps"`
	ResponseOutputs    []map[string]json.RawMessage `json:"response_outputs"`
}

// epochNSThreshold separates absolute (Unix epoch) nanosecond timestamps
// from relative ones: 1e17 ns is March 1973.
const epochNSThreshold = 1e17

func parseGenAIPerf(f fileRef, opts Options) ([]*sweepSource, error) {
	var ex genaiPerfExport
	if err := decodeStrict(f.values[0], &ex); err != nil {
		return nil, err
	}
	if len(ex.Experiments) == 0 {
		return nil, errors.New(`"experiments" is empty`)
	}
	src := &sweepSource{
		kind: KindGenAIPerf, tool: "GenAI-Perf (perf_analyzer profile_export.json, service kind " + cmp.Or(ex.ServiceKind, "unknown") + ")",
		file: f.path, sha256: f.sha256(),
		engine:   rundir.Engine{Name: "unknown (" + cmp.Or(ex.ServiceKind, "OpenAI-compatible") + " server measured with GenAI-Perf)"},
		workload: rundir.Workload{Endpoint: "completions"},
		lacks: []string{
			"output token counts unless the server sent usage (GenAI-Perf counts tokens with a tokenizer when it reports; the export has text only): otherwise the number of streamed chunks with text",
			"prompt token counts", "failed requests (perf_analyzer's export keeps responses, not errors)",
			"server log and /metrics", "GPU, driver and engine version", "server flags",
		},
		notes: []string{"send, first-token and chunk times are perf_analyzer's timestamps; responses without text (role-only, empty, [DONE]) are skipped as GenAI-Perf does, and the end is the last response with text"},
	}
	if strings.Contains(ex.Endpoint, "chat") {
		src.workload.Endpoint = "chat"
	}
	var minSend int64
	relative := false
	var outSum, ok int64
	for ei, e := range ex.Experiments {
		where := fmt.Sprintf("experiments[%d]", ei)
		level := sourceLevel{origin: fmt.Sprintf("%s (%s, %s %g)", f.path, where, e.Experiment.Mode, e.Experiment.Value)}
		switch e.Experiment.Mode {
		case "concurrency":
			level.concurrency = int64(e.Experiment.Value)
		case "request_rate":
			level.rateRPS = e.Experiment.Value
		default:
			return nil, fmt.Errorf("%s: unknown experiment mode %q (want concurrency or request_rate)", where, e.Experiment.Mode)
		}
		for ri, r := range e.Requests {
			if len(r.ResponseTimestamps) != len(r.ResponseOutputs) {
				return nil, fmt.Errorf("%s.requests[%d]: %d response timestamps but %d outputs", where, ri, len(r.ResponseTimestamps), len(r.ResponseOutputs))
			}
			if src.engine.Model == "" {
				src.engine.Model = genaiPerfModel(r.RequestInputs)
			}
			req := sourceRequest{id: fmt.Sprintf("e%d-%d", ei, ri), sendNS: r.Timestamp, endNS: r.Timestamp}
			for i, out := range r.ResponseOutputs {
				c := genaiPerfResponse(out)
				if c.completion != nil {
					req.outputTokens = c.completion
				}
				if c.prompt != nil {
					req.promptTokens = c.prompt
				}
				if c.err != "" && req.err == "" {
					req.err = c.err
				}
				if c.text {
					req.chunkNS = append(req.chunkNS, r.ResponseTimestamps[i])
				}
			}
			switch {
			case req.err != "":
				req.status = rundir.StatusServerError
				req.chunkNS = nil
			case len(req.chunkNS) == 0:
				req.status, req.err = rundir.StatusNoTokens, "no response with text"
			default:
				req.status = rundir.StatusOK
				req.firstNS = ptr(req.chunkNS[0])
				req.endNS = req.chunkNS[len(req.chunkNS)-1]
				ok++
				if req.outputTokens != nil {
					outSum += *req.outputTokens
				} else {
					outSum += int64(len(req.chunkNS))
				}
			}
			if len(r.ResponseTimestamps) > 0 && req.status != rundir.StatusOK {
				req.endNS = r.ResponseTimestamps[len(r.ResponseTimestamps)-1]
			}
			if r.Timestamp < epochNSThreshold {
				relative = true
			}
			if minSend == 0 || r.Timestamp < minSend {
				minSend = r.Timestamp
			}
			level.requests = append(level.requests, req)
		}
		src.levels = append(src.levels, level)
	}
	if relative {
		// Timestamps from a steady clock: anchor them at --date, else the
		// file's modification time.
		anchor := opts.Date
		if anchor.IsZero() {
			anchor = f.modTime
			src.notes = append(src.notes, "the timestamps are not Unix times: the run is anchored at the file's modification time")
		}
		shift := anchor.UnixNano() - minSend
		for li := range src.levels {
			for ri := range src.levels[li].requests {
				r := &src.levels[li].requests[ri]
				r.sendNS += shift
				r.endNS += shift
				if r.firstNS != nil {
					r.firstNS = ptr(*r.firstNS + shift)
				}
				for i := range r.chunkNS {
					r.chunkNS[i] += shift
				}
			}
		}
		src.start = anchor
		src.lacks = append(src.lacks, "absolute times (the timestamps are not Unix times)")
	} else {
		src.start = time.Unix(0, minSend)
	}
	if ok > 0 {
		src.workload.Output = rundir.Dist{Kind: "dataset", Mean: float64(outSum) / float64(ok)}
	}
	return []*sweepSource{src}, nil
}

// genaiPerfModel reads the model name from a request's OpenAI payload.
func genaiPerfModel(inputs map[string]json.RawMessage) string {
	var payload struct {
		Model string `json:"model"`
	}
	if p := rawString(inputs["payload"]); p != "" && json.Unmarshal([]byte(p), &payload) == nil {
		return payload.Model
	}
	return ""
}

// genaiPerfContent is what one recorded response holds.
type genaiPerfContent struct {
	text               bool
	completion, prompt *int64
	err                string
}

// genaiPerfResponse reads one response_outputs entry: an OpenAI SSE text
// (possibly several events received at once) or a Triton text_output.
func genaiPerfResponse(out map[string]json.RawMessage) genaiPerfContent {
	var c genaiPerfContent
	if t := rawString(out["text_output"]); t != "" {
		c.text = true
		return c
	}
	resp := rawString(out["response"])
	for _, ev := range strings.Split(resp, "\n\n") {
		ev = strings.TrimSpace(ev)
		ev = strings.TrimSpace(strings.TrimPrefix(ev, "data:"))
		if ev == "" || ev == "[DONE]" || strings.HasPrefix(ev, ":") {
			continue
		}
		var chunk struct {
			Choices []struct {
				Text  *string `json:"text"`
				Delta struct {
					Content          *string `json:"content"`
					ReasoningContent *string `json:"reasoning_content"`
				} `json:"delta"`
			} `json:"choices"`
			Usage *struct {
				PromptTokens     *int64 `json:"prompt_tokens"`
				CompletionTokens *int64 `json:"completion_tokens"`
			} `json:"usage"`
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal([]byte(ev), &chunk) != nil {
			continue
		}
		if !isNull(chunk.Error) {
			c.err = truncate(string(chunk.Error), 500)
		}
		for _, ch := range chunk.Choices {
			for _, s := range []*string{ch.Text, ch.Delta.Content, ch.Delta.ReasoningContent} {
				if s != nil && *s != "" {
					c.text = true
				}
			}
		}
		if u := chunk.Usage; u != nil {
			c.completion, c.prompt = u.CompletionTokens, u.PromptTokens
		}
	}
	return c
}

// GenAIPerfPercentileMethod names where the percentiles of a
// profile_export_genai_perf.json import come from.
const GenAIPerfPercentileMethod = "numpy.percentile, linear interpolation, as GenAI-Perf computed them (profile_export_genai_perf.json)"

// genaiPerfConfig is profile_export_genai_perf.json's input_config in both
// layouts: the flat one of GenAI-Perf up to 0.0.x/24.x (concurrency,
// request_rate, model, service_kind, endpoint_type, streaming, u) and the
// nested one of its config-file releases (model_names, endpoint.{type,
// service_kind, streaming, url}, perf_analyzer.stimulus.{concurrency,
// request_rate}).
type genaiPerfConfig struct {
	Concurrency  *float64        `json:"concurrency"`
	RequestRate  *float64        `json:"request_rate"`
	Model        json.RawMessage `json:"model"`
	ModelNames   []string        `json:"model_names"`
	ServiceKind  string          `json:"service_kind"`
	EndpointType string          `json:"endpoint_type"`
	Streaming    *bool           `json:"streaming"`
	URL          string          `json:"u"`
	Endpoint     json.RawMessage `json:"endpoint"`
	PerfAnalyzer *struct {
		Stimulus map[string]*float64 `json:"stimulus"`
	} `json:"perf_analyzer"`
}

func parseGenAIPerfSummary(f fileRef) ([]*sweepSource, error) {
	top := objectKeys(f.values[0])
	var cfg genaiPerfConfig
	if err := decodeStrict(top["input_config"], &cfg); err != nil {
		return nil, fmt.Errorf("input_config: %w", err)
	}
	stat := func(key string) statBlock {
		var s statBlock
		_ = json.Unmarshal(top[key], &s)
		return s
	}
	var ep struct {
		Type        string `json:"type"`
		ServiceKind string `json:"service_kind"`
		Streaming   *bool  `json:"streaming"`
		URL         string `json:"url"`
	}
	if objectKeys(cfg.Endpoint) != nil {
		_ = json.Unmarshal(cfg.Endpoint, &ep)
	} else {
		ep.Type = rawString(cfg.Endpoint)
	}
	serviceKind := cmp.Or(cfg.ServiceKind, ep.ServiceKind)
	endpointType := cmp.Or(cfg.EndpointType, ep.Type)
	streaming := cfg.Streaming
	if streaming == nil {
		streaming = ep.Streaming
	}
	model := ""
	if len(cfg.ModelNames) > 0 {
		model = cfg.ModelNames[0]
	} else {
		var list []string
		if json.Unmarshal(cfg.Model, &list) == nil && len(list) > 0 {
			model = list[0]
		} else {
			model = rawString(cfg.Model)
		}
	}
	level := sourceLevel{origin: f.path}
	conc, rate := cfg.Concurrency, cfg.RequestRate
	if cfg.PerfAnalyzer != nil {
		if v := cfg.PerfAnalyzer.Stimulus["concurrency"]; v != nil {
			conc = v
		}
		if v := cfg.PerfAnalyzer.Stimulus["request_rate"]; v != nil {
			rate = v
		}
	}
	switch {
	case rate != nil && *rate > 0:
		level.rateRPS = *rate
		if conc != nil && *conc > 0 {
			level.concurrency = int64(*conc)
		}
	case conc != nil && *conc > 0:
		level.concurrency = int64(*conc)
	default:
		return nil, errors.New("input_config has no concurrency or request_rate (nor perf_analyzer.stimulus): the load level is unknown (import profile_export.json, beside it, instead)")
	}
	thr := stat("output_token_throughput")
	if thr.Avg == nil {
		return nil, errors.New(`no "output_token_throughput": nothing to import`)
	}
	src := &sweepSource{
		kind: KindGenAIPerfSummary, tool: "GenAI-Perf (profile_export_genai_perf.json, service kind " + cmp.Or(serviceKind, "unknown") + ")",
		file: f.path, sha256: f.sha256(),
		engine:   rundir.Engine{Name: "unknown (" + cmp.Or(serviceKind, "OpenAI-compatible") + " server measured with GenAI-Perf)", Model: model, BaseURL: redactURL(cmp.Or(cfg.URL, ep.URL))},
		workload: rundir.Workload{Endpoint: "completions"},
		lacks: []string{
			"per-request and per-token times (import profile_export.json, beside it, for those)",
			"failed requests (GenAI-Perf's statistics cover the requests that completed)",
			"server log and /metrics", "GPU, driver and engine version", "server flags",
		},
		config: []configItem{{"service_kind", serviceKind}, {"endpoint_type", endpointType}},
	}
	if strings.Contains(endpointType, "chat") {
		src.workload.Endpoint = "chat"
	}
	sec := func(s statBlock, p *float64) float64 {
		if p == nil {
			return 0
		}
		scale, ok := unitSeconds(s.Unit)
		if !ok {
			scale = 1e-3 // GenAI-Perf writes its times in ms
		}
		return *p * scale
	}
	row := &rundir.LevelStatsRow{OutputTokPerS: *thr.Avg, PercentileMethod: GenAIPerfPercentileMethod}
	if c := stat("request_count"); c.Avg != nil {
		row.RequestsOK = int64(*c.Avg)
	} else {
		src.lacks = append(src.lacks, "the number of requests (this GenAI-Perf release does not write request_count)")
	}
	if v := stat("request_throughput").Avg; v != nil {
		row.RequestsPerS = *v
	}
	if v := stat("input_sequence_length").Avg; v != nil {
		row.MeanPromptTokens = *v
		src.workload.Prompt = rundir.Dist{Kind: "dataset", Mean: *v}
	}
	if v := stat("output_sequence_length").Avg; v != nil {
		row.MeanOutputTokens = *v
		src.workload.Output = rundir.Dist{Kind: "dataset", Mean: *v}
	}
	e2e := stat("request_latency")
	row.E2EP50S, row.E2EP90S, row.E2EP99S = sec(e2e, e2e.P50), sec(e2e, e2e.P90), sec(e2e, e2e.P99)
	if streaming != nil && !*streaming {
		src.notes = append(src.notes, "the run did not stream: GenAI-Perf's time_to_first_token is then the whole request latency (the only response is the last), so it is not imported as TTFT; there is no inter-token latency")
		src.lacks = append(src.lacks, "TTFT and TPOT (the run did not stream)")
	} else {
		ttft, itl := stat("time_to_first_token"), stat("inter_token_latency")
		row.TTFTP50S, row.TTFTP90S, row.TTFTP99S = sec(ttft, ttft.P50), sec(ttft, ttft.P90), sec(ttft, ttft.P99)
		// GenAI-Perf's inter-token latency is (latency − TTFT)/(output
		// tokens − 1) per request: headroom's TPOT.
		row.TPOTP50S, row.TPOTP90S, row.TPOTP99S = sec(itl, itl.P50), sec(itl, itl.P90), sec(itl, itl.P99)
	}
	level.stats = row
	src.levels = []sourceLevel{level}
	return []*sweepSource{src}, nil
}
