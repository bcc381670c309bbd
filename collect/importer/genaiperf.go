package importer

// GenAI-Perf (triton-inference-server/perf_analyzer, genai-perf) writes the
// raw perf_analyzer export, profile_export.json: per experiment (a
// concurrency or a request rate) every request with its send timestamp and
// the receive timestamp of every response (nanoseconds), plus the
// responses themselves (SSE text for OpenAI endpoints, text_output for
// Triton). GenAI-Perf counts tokens later with a tokenizer; the export
// itself has no token counts unless the server sent usage.

import (
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
	if err := decodeStrict(f.data, &ex); err != nil {
		return nil, err
	}
	if len(ex.Experiments) == 0 {
		return nil, errors.New(`"experiments" is empty`)
	}
	src := &sweepSource{
		kind: KindGenAIPerf, tool: "GenAI-Perf (perf_analyzer profile_export.json, service kind " + cmpOr(ex.ServiceKind, "unknown") + ")",
		file: f.path, sha256: f.sha256(),
		engine:   rundir.Engine{Name: "unknown (" + cmpOr(ex.ServiceKind, "OpenAI-compatible") + " server measured with GenAI-Perf)"},
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
