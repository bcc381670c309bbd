package analyze

import "github.com/headroom-llm/headroom/analyze/serverlog"

// kvFixes are the seed's KV-cache fixes (less cache per sequence, more
// memory for the cache, a quantised cache, a smaller or more grouped
// model) in the named engine's own flags, so a reader can act on them.
// Each engine's flags are from its documentation: vLLM's engine arguments,
// SGLang's server arguments, llama.cpp's llama-server --help,
// docs/gpu-engine.md for transformers-cb and test/engine/server.mjs for the
// test engine. An engine not listed gets the same advice without flags.
func kvFixes(engine string) []string {
	eng, _ := serverlog.ParseEngine(engine)
	if engine == "" {
		eng = serverlog.EngineUnknown
	}
	smaller := "serve a smaller model, or one with more aggressive grouped-query attention (fewer KV heads)"
	switch eng {
	case serverlog.EngineVLLM:
		return []string{
			"lower --max-model-len (less KV cache per sequence)",
			"raise --gpu-memory-utilization (more memory for KV cache blocks)",
			"enable KV cache quantisation (e.g. --kv-cache-dtype fp8)",
			"lower --max-num-seqs (fewer sequences competing for the cache, fewer preemptions)",
			smaller,
		}
	case serverlog.EngineSGLang:
		return []string{
			"lower --context-length (less KV cache per sequence)",
			"raise --mem-fraction-static (more memory for the KV cache pool)",
			"enable KV cache quantisation (e.g. --kv-cache-dtype fp8_e5m2)",
			"lower --max-running-requests, or raise --schedule-conservativeness (admit fewer sequences than the cache can only just hold, fewer retractions)",
			smaller,
		}
	case serverlog.EngineLlamaCpp:
		return []string{
			"raise --ctx-size (-c): the KV cache is shared by the slots, each gets ctx-size ÷ --parallel tokens",
			"lower --parallel (-np): fewer slots, more context for each",
			"quantise the KV cache (--cache-type-k and --cache-type-v, e.g. q8_0)",
			smaller,
		}
	case serverlog.EngineTransformersCB:
		return []string{
			"raise --kv-blocks (more KV cache blocks; unset, the engine sizes the cache from --max-memory-percent of free GPU memory)",
			"lower --max-model-len (a shorter longest request)",
			"give preempted requests a CPU swap pool with --cpu-offload-gib instead of recomputing them",
			smaller,
		}
	case serverlog.EngineNodeLlamaCpp:
		return []string{
			"raise --kv-budget-tokens (default --sequences × --ctx-per-seq): the test engine's own admission budget of tokens across sequences, not GPU memory",
		}
	}
	return []string{
		"lower the server's maximum context length per request (less KV cache per sequence)",
		"give the KV cache more GPU memory (the engine's memory-fraction or KV-cache-size setting)",
		"quantise the KV cache (fp8 or 8-bit), if the engine supports it",
		"cap the number of concurrently running sequences",
		smaller,
	}
}
