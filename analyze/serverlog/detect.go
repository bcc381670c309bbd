package serverlog

import "bytes"

// detectLine names the engine a single (unwrapped) line belongs to, or
// returns EngineUnknown when the line could come from several (uvicorn
// access lines, Python tracebacks) or from none.
func detectLine(msg []byte) Engine {
	if len(msg) == 0 {
		return EngineUnknown
	}
	// The test engine and transformers-cb: "INFO step n=..." after an
	// RFC 3339 stamp (already unwrapped). Checked first: the verbs are
	// specific.
	if e := eventLogEngine(msg); e != EngineUnknown {
		return e
	}
	body := stripProcPrefix(msg)
	if lvl, n := vllmLevel(body); lvl != LevelUnknown {
		if _, _, _, _, _, ok := monthDayClock(body[n:]); ok {
			return EngineVLLM
		}
	}
	if findVLLMHeader(body) > 0 {
		// a header after a progress bar or a terminal frame ("│ INFO 03-21 ...")
		return EngineVLLM
	}
	if len(msg) > 10 && msg[0] == '[' {
		if _, _, _, _, _, _, ok := dateClock(msg[1:]); ok && msg[11] == ' ' {
			if _, _, n, ok := sglangHeaderTail(msg[20:]); ok {
				// "[2024-07-08 15:17:34] INFO 07-08 07:17:34 metrics.py:334] ..." is a
				// process manager's stamp before a vLLM record
				if rest := msg[20+n:]; vllmHeaderAt(rest) {
					return EngineVLLM
				}
				return EngineSGLang
			}
		} else if _, _, _, ok := clock(msg, 1); ok {
			if _, _, n, ok := sglangHeaderTail(msg[9:]); ok && n > 1 {
				return EngineSGLang
			}
		}
		for _, p := range [...]string{"[gpu=", "[gpu_id="} {
			if bytes.HasPrefix(msg, []byte(p)) && (contains(msg, "Decode batch") || contains(msg, "Prefill batch")) {
				return EngineSGLang
			}
		}
	}
	if bytes.HasPrefix(msg, []byte("new fill batch. #seq: ")) {
		return EngineSGLang
	}
	for _, m := range llamaMarkers {
		if bytes.HasPrefix(body, []byte(m)) {
			return EngineLlamaCpp
		}
	}
	if d, n, ok := llamaElapsed(body); ok && d >= 0 && n+2 < len(body) && body[n] == ' ' && body[n+2] == ' ' {
		return EngineLlamaCpp
	}
	if len(body) > 0 && body[0] == '[' {
		// llama.cpp router: "[42027] ..."
		if i := bytes.IndexByte(body[:min(len(body), 12)], ']'); i > 1 {
			if _, ok := atoi(body[1:i]); ok && i+2 < len(body) {
				if e := detectLine(body[i+2:]); e == EngineLlamaCpp {
					return e
				}
			}
		}
	}
	if bytes.HasPrefix(body, []byte(`{"`)) && (contains(body, `"function":`) && (contains(body, `"tid":`) || contains(body, `"timestamp":`))) {
		return EngineLlamaCpp
	}
	switch {
	case contains(body, "server_args=ServerArgs("), contains(body, "sglang.launch_server"), contains(body, "sglang serve"):
		return EngineSGLang
	case contains(body, "vLLM API server version"), contains(body, "vllm serve"), contains(body, "vllm.entrypoints"):
		return EngineVLLM
	}
	return EngineUnknown
}

// llamaMarkers are line starts only llama.cpp prints.
var llamaMarkers = [...]string{
	"llama_model_loader:", "llama_new_context_with_model:", "llama_context:", "llama_kv_cache", "llm_load_print_meta:",
	"print_info:", "load_tensors:", "srv ", "slot launch_slot_", "slot update_slots", "slot print_timing",
	"slot      release", "main: server is listening", "main: HTTP server is listening", "llama server listening",
	"print_timings:", "build: ", "system_info: n_threads", "INFO [", "update_slots : ",
}

// engineEventLog is detectLine's answer for a line that the test engine and
// transformers-cb both print (admit, preempt, finish, request): one of the
// two, not known which.
const engineEventLog Engine = "event-log"

// isEventLog reports the engines whose log is "<RFC 3339> LEVEL event
// key=value ...".
func isEventLog(e Engine) bool { return e == EngineNodeLlamaCpp || e == EngineTransformersCB }

// eventLogEngine matches "LEVEL event key=..." with a known event: the test
// engine's own events, transformers-cb's own events, or engineEventLog for
// events both print.
func eventLogEngine(b []byte) Engine {
	sp := bytes.IndexByte(b, ' ')
	if sp < 4 || sp > 5 {
		return EngineUnknown
	}
	switch bstr(b[:sp]) {
	case "INFO", "WARN", "ERROR", "DEBUG":
	default:
		return EngineUnknown
	}
	rest := b[sp+1:]
	for _, v := range [...]string{"engine start ", "step n="} {
		if bytes.HasPrefix(rest, []byte(v)) {
			return EngineNodeLlamaCpp
		}
	}
	for _, v := range [...]string{"start engine=transformers-cb", "stats running=", "cache kv_blocks=", "serving model=", "model shape=", "tokenizer name="} {
		if bytes.HasPrefix(rest, []byte(v)) {
			return EngineTransformersCB
		}
	}
	for _, v := range [...]string{"admit req=", "preempt req=", "finish req=", "request req="} {
		if bytes.HasPrefix(rest, []byte(v)) {
			return engineEventLog
		}
	}
	return EngineUnknown
}

// loggerEngine names the engine of a Python logger ("vllm.engine.metrics",
// "sglang.srt.managers.scheduler") that a logging layout printed.
func loggerEngine(logger []byte) Engine {
	switch {
	case bytes.HasPrefix(logger, []byte("vllm.")), bstr(logger) == "vllm":
		return EngineVLLM
	case bytes.HasPrefix(logger, []byte("sglang.")), bstr(logger) == "sglang":
		return EngineSGLang
	}
	return EngineUnknown
}

// detectWeak names the engine of a line that only mentions it: a
// traceback frame in its source tree or an exception of one of its
// modules. Such lines decide only when no line in the engine's own layout
// does.
func detectWeak(msg []byte) Engine {
	switch {
	case contains(msg, "/vllm/"), contains(msg, "vllm.engine."), contains(msg, "vllm.v1."):
		return EngineVLLM
	case contains(msg, "/sglang/srt/"), contains(msg, "sglang.srt."):
		return EngineSGLang
	}
	return EngineUnknown
}
