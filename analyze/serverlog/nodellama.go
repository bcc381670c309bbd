package serverlog

import (
	"bytes"
	"strconv"
	"strings"
)

// The project's test engine (test/engine, a shim over node-llama-cpp)
// writes one event per line, as fixed in docs/test-engine.md:
//
//	2026-11-30T12:00:00.457Z INFO step n=1234 running=4 waiting=2 batch_tokens=4 prefill_tokens=0 kv_used_tokens=1024 kv_budget_tokens=4096 kv_usage=0.250
//
// and the GPU engine (transformers-cb, docs/gpu-engine.md) the same layout
// with events of its own (start, model, cache, serving, stats, ...) and the
// same admit, preempt, finish and request events.
//
// The RFC 3339 stamp has already been removed by unwrap (it has the shape
// of a kubectl --timestamps prefix) and arrives as the wrapper stamp.

// parseNode reads one line of the test engine or of transformers-cb.
func (s *Scanner) parseNode(b []byte, wst stamp) status {
	sp := bytes.IndexByte(b, ' ')
	if sp < 0 {
		return stUnknown
	}
	lvl := levelWord(b[:sp])
	if lvl == LevelUnknown {
		return stUnknown
	}
	if wst.q != TimeComplete {
		return stUnknown
	}
	rest := b[sp+1:]
	sp = bytes.IndexByte(rest, ' ')
	verb := rest
	if sp >= 0 {
		verb = rest[:sp]
		rest = rest[sp+1:]
	} else {
		rest = nil
	}
	s.ev.Level = lvl
	kv := s.nodeFields(rest)
	switch bstr(verb) {
	case "start", "model", "cache", "serving", "listening", "stats":
		if lvl >= LevelError {
			// transformers-cb: "ERROR stats error=..." (a failed snapshot)
			return s.problem(KindError, ProblemOther, kv.get("error"))
		}
		return s.tfcbEvent(bstr(verb), kv)
	case "hf":
		// transformers' own loggers, relayed
		if lvl >= LevelError {
			return s.classify(lvl, []byte(kv.get("msg")))
		}
		return stIgnored
	case "engine":
		if lvl >= LevelError {
			// the test engine: a failed decode, after which it exits;
			// transformers-cb: start-up failed
			msg := kv.get("error")
			class := ProblemEngineDead
			if i := findMarker([]byte(msg)); i >= 0 {
				class = problemMarkers[i].class // the root cause, e.g. out of memory
			}
			return s.problem(KindError, class, msg)
		}
		if len(kv.words) == 0 || kv.words[0] != "start" {
			return stIgnored
		}
		for _, p := range kv.pairs {
			for _, key := range testEngineStartFacts[p.key] {
				s.addFact(key, p.val)
			}
		}
		if len(s.ev.Facts) == 0 {
			return s.bad("test engine start: no fields")
		}
		s.ev.Kind = KindConfig
		return stEvent
	case "admit":
		s.request(RequestAdmitted, []byte(kv.get("req")))
		r := &s.ev.Request
		r.PromptTokens = kv.int("prompt_tokens", -1)
		r.MaxTokens = kv.int("max_tokens", -1)
		r.Running = kv.int("running", -1)
		r.Waiting = kv.int("waiting", -1)
		return stEvent
	case "step":
		s.ev.Stats.Phase = "step"
		return s.statsEvent(kv, testEngineStepFields, "test engine step")
	case "preempt":
		p := &s.ev.Preemption
		p.Mode = kv.get("mode") // recompute; transformers-cb also cpu_offload (ModeOffload)
		if p.Mode == "" {
			p.Mode = ModeRecompute
		}
		p.RequestID = kv.get("req")
		p.Count = 1
		p.Generated = kv.int("generated", 0)
		p.KVUsedTokens = kv.int("kv_used_tokens", 0)
		p.KVBudgetTokens = kv.int("kv_budget_tokens", 0)
		if n := kv.int("total_preemptions", -1); n >= 0 {
			p.Cumulative, p.CumulativeKnown = n, true
		}
		s.ev.Kind = KindPreemption
		return stEvent
	case "finish":
		s.request(RequestFinished, []byte(kv.get("req")))
		r := &s.ev.Request
		r.PromptTokens = kv.int("prompt_tokens", -1)
		r.CompletionTokens = kv.int("completion_tokens", -1)
		r.Reason = kv.get("reason")
		r.TTFTMS = kv.float("ttft_ms", -1)
		r.E2EMS = kv.float("e2e_ms", -1)
		if r.Reason == "error" {
			// transformers-cb: the engine failed the request
			s.ev.Kind = KindError
			s.ev.Problem = Problem{Class: ProblemOther, Message: kv.get("error")}
		}
		return stEvent
	case "request":
		msg := kv.get("error")
		class := ProblemHTTP
		if strings.Contains(msg, "exceeds") || strings.Contains(msg, "maximum context length") {
			class = ProblemContextExceeded
		}
		s.problem(KindError, class, msg)
		return stEvent
	}
	if lvl >= LevelError {
		return s.problem(KindError, ProblemOther, string(b))
	}
	return stIgnored
}

// tfcbEvent reads transformers-cb's own events.
func (s *Scanner) tfcbEvent(verb string, kv nodeFieldSet) status {
	if verb == "stats" {
		return s.statsEvent(kv, tfcbStatsFields, "transformers-cb stats")
	}
	for _, p := range kv.pairs {
		if p.val == "" || p.val == "-" {
			continue
		}
		if key := tfcbFacts[verb+"."+p.key]; key != "" {
			s.addFact(key, p.val)
		} else if verb == "listening" && p.key == "port" {
			s.addFact(FactListening, kv.get("host")+":"+p.val)
		}
	}
	return s.configEvent()
}

// testEngineStartFacts are the facts each field of the test engine's start
// line gives.
var testEngineStartFacts = map[string][]string{
	"version": {FactVersion},
	"llama":   {"llama_cpp"},
	"model":   {FactModel},
	// each sequence's context is the engine's max_model_len
	"n_ctx_per_seq":    {FactSlotContext, FactMaxModelLen},
	"sequences":        {FactSlots},
	"kv_budget_tokens": {FactKVCacheTokens},
	"threads":          {"threads"},
	"batch":            {"batch"},
}

// tfcbFacts are the fact each "event.field" of transformers-cb's lines
// gives.
var tfcbFacts = map[string]string{
	"start.version":              FactVersion, // transformers' version
	"start.torch":                "torch",
	"start.server":               "server",
	"model.shape":                "model_shape",
	"model.dtype":                FactDtype,
	"model.params":               "params",
	"model.device":               "device",
	"model.attn":                 "attn",
	"cache.kv_blocks":            FactKVCacheBlocksGPU,
	"cache.kv_capacity_tokens":   FactKVCacheTokens,
	"serving.kv_capacity_tokens": FactKVCacheTokens,
	"cache.block_size":           "block_size",
	"cache.scheduler":            "scheduler",
	"cache.cpu_offload_gib":      "cpu_offload_gib",
	"cache.prefix_sharing":       "prefix_sharing",
	"cache.preempt_hook":         "preempt_hook",
	"cache.max_batch_tokens":     FactMaxBatchedTokens,
	"cache.cuda_graph":           "cuda_graph_setting",
	"serving.model":              FactModel,
	"serving.max_model_len":      FactMaxModelLen,
}

type nodeKV struct{ key, val string }

type nodeFieldSet struct {
	words []string // bare words before the first key=value
	pairs []nodeKV
}

func (f nodeFieldSet) get(k string) string {
	for _, p := range f.pairs {
		if p.key == k {
			return p.val
		}
	}
	return ""
}

func (f nodeFieldSet) int(k string, def int) int {
	n, err := strconv.Atoi(f.get(k))
	if err != nil {
		return def
	}
	return n
}

func (f nodeFieldSet) float(k string, def float64) float64 {
	x, err := strconv.ParseFloat(f.get(k), 64)
	if err != nil {
		return def
	}
	return x
}

// nodeFields splits `a=1 b="x y" c=2` (double-quoted values may contain
// spaces and \" escapes). The set lives in the scanner's buffers until the
// next line; its strings are the caller's to keep.
func (s *Scanner) nodeFields(b []byte) nodeFieldSet {
	s.nodeToks = appendFieldsQuoted(s.nodeToks[:0], string(b))
	out := nodeFieldSet{pairs: s.nodeKVs[:0]}
	for _, tok := range s.nodeToks {
		eq := strings.IndexByte(tok, '=')
		if eq <= 0 {
			out.words = append(out.words, tok)
			continue
		}
		v := tok[eq+1:]
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			if u, err := strconv.Unquote(v); err == nil {
				v = u
			} else {
				v = v[1 : len(v)-1]
			}
		}
		out.pairs = append(out.pairs, nodeKV{tok[:eq], v})
	}
	s.nodeKVs = out.pairs
	return out
}

// The numeric fields of the test engine's step lines and transformers-cb's
// stats lines, by key; other keys are skipped.
var (
	testEngineStepFields = map[string]StatField{
		"running": FieldRunning, "waiting": FieldWaiting, "batch_tokens": FieldBatchTokens,
		"prefill_tokens": FieldNewTokens, "kv_used_tokens": FieldKVUsedTokens,
		"kv_budget_tokens": FieldKVBudgetTokens, "kv_usage": FieldKVUsage,
	}
	tfcbStatsFields = map[string]StatField{
		"running": FieldRunning, "waiting": FieldWaiting, "kv_usage": FieldKVUsage,
		"gen_tokens_per_s": FieldGenerationThroughput,
	}
)

// statsEvent reads the fields of one engine's stats line into s.ev.Stats:
// an event when at least one is there, an error naming what (a stats
// line of the engine) when one is not a number or none is.
func (s *Scanner) statsEvent(kv nodeFieldSet, fields map[string]StatField, what string) status {
	st := &s.ev.Stats
	for _, p := range kv.pairs {
		f, ok := fields[p.key]
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(p.val, 64)
		if err != nil {
			return s.bad("%s: %s: expected a number, found %q", what, p.key, p.val)
		}
		st.set(f, v)
	}
	if st.Set == 0 {
		return s.bad("%s: no fields", what)
	}
	s.ev.Kind = KindStats
	return stEvent
}
