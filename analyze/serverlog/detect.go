package serverlog

import "bytes"

// detectLine names the engine a single (unwrapped) line belongs to, or
// returns EngineUnknown when the line could come from several (uvicorn
// access lines, Python tracebacks) or from none.
func detectLine(msg []byte) Engine {
	if len(msg) == 0 {
		return EngineUnknown
	}
	// The test engine: "INFO step n=..." after its RFC 3339 stamp (already
	// unwrapped). Checked first: its verbs are specific.
	if isNodeLine(msg) {
		return EngineNodeLlamaCpp
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
	if len(msg) > 21 && msg[0] == '[' {
		if _, _, _, _, _, _, ok := dateClock(msg[1:]); ok && msg[11] == ' ' {
			return EngineSGLang
		}
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

// isNodeLine matches the test engine's "LEVEL verb" with a known verb.
func isNodeLine(b []byte) bool {
	sp := bytes.IndexByte(b, ' ')
	if sp < 4 || sp > 5 {
		return false
	}
	switch bstr(b[:sp]) {
	case "INFO", "WARN", "ERROR", "DEBUG":
	default:
		return false
	}
	rest := b[sp+1:]
	for _, v := range [...]string{"engine start ", "admit req=", "step n=", "preempt req=", "finish req=", "request req="} {
		if bytes.HasPrefix(rest, []byte(v)) {
			return true
		}
	}
	return false
}
