package serverlog

import (
	"bytes"
	"strconv"
	"strings"
)

// vLLM prints records as
//
//	[(Proc pid=N) ]LEVEL MM-DD HH:MM:SS [file.py:N] message    (0.8 and later)
//	[(Proc pid=N) ]LEVEL MM-DD HH:MM:SS file.py:N] message     (before 0.8)
//
// with a year-less, zone-less stamp in the server's local time. Process
// prefixes name the V1 front end and engine core ("(APIServer pid=1)",
// "(EngineCore_0 pid=7)"), workers ("(VllmWorker rank=1 pid=9)",
// "(Worker_TP0 pid=99)") and Ray actors ("(RayWorkerWrapper pid=663)").

// parseVLLM reads one vLLM line.
func (s *Scanner) parseVLLM(b []byte) status {
	s.engineProc = false
	body := stripProcPrefix(b)
	if len(body) < len(b) {
		s.vllmProc(b[:len(b)-len(body)])
	}
	if len(body) > 22 && body[0] == '[' {
		// a process manager's "[2024-07-08 15:17:34] " before the record
		if y, mon, day, h, m, sec, ok := dateClock(body[1:]); ok && body[20] == ']' && body[21] == ' ' && vllmHeaderAt(body[22:]) {
			s.lineStamp = stamp{q: TimeNoZone, year: y, mon: mon, day: day, h: h, m: m, s: sec}
			body = body[22:]
		}
	}
	lvl, msg, ok := s.vllmHeader(body)
	if !ok {
		// A progress bar written without a newline can precede the record
		// on the same line ("... 1.31s/it]INFO 06-16 21:24:15 ...").
		if j := findVLLMHeader(body); j > 0 {
			lvl, msg, ok = s.vllmHeader(body[j:])
		}
	}
	if !ok && s.u.level != LevelUnknown && (s.u.logger == nil || loggerEngine(s.u.logger) == EngineVLLM) {
		// re-logged through Python logging: the wrapper printed the level
		lvl, msg, ok = s.u.level, body, true
		s.ev.Generation = loggerGeneration(s.u.logger)
	}
	if !ok {
		st := s.vllmHeaderless(body)
		if st == stEvent && s.ev.Generation == "" && s.genSeen == "" {
			s.ev.Generation = vllmTextGeneration(body)
		}
		return st
	}
	s.ev.Level = lvl
	st := s.vllmMessage(lvl, msg)
	if st == stEvent && s.ev.Generation == "" {
		s.ev.Generation = s.vllmGeneration(msg)
	}
	return st
}

// vllmGeneration tells vLLM V0 from V1 by the shape of a record: the
// source file that logged it (V1's code lives under vllm/v1/ with its own
// file names), the stats fields (V0 printed Swapped, Pending and the CPU
// cache; V1 "Engine 000:" and neither), or the text.
func (s *Scanner) vllmGeneration(msg []byte) string {
	if s.ev.Kind == KindStats {
		st := &s.ev.Stats
		switch {
		case st.Has(FieldEngineIndex):
			return "V1"
		case st.Has(FieldSwapped) || st.Has(FieldCPUKVUsage) || st.Has(FieldCPUPrefixCacheHitRate):
			return "V0"
		}
	}
	src := s.vllmSrc
	if c := bytes.LastIndexByte(src, ':'); c > 0 {
		src = src[:c]
	}
	switch bstr(src) {
	case "loggers.py", "core.py", "core_client.py", "async_llm.py", "gpu_model_runner.py", "gpu_worker.py", "kv_cache_utils.py", "multiproc_executor.py":
		return "V1"
	case "async_llm_engine.py", "engine.py", "client.py", "model_runner.py", "model_runner_base.py", "worker.py",
		"distributed_gpu_executor.py", "multiproc_gpu_executor.py", "gpu_executor.py", "ray_gpu_executor.py":
		return "V0"
	case "metrics.py", "llm_engine.py":
		if s.ev.Kind == KindStats {
			return "V0"
		}
	}
	if s.ev.Kind == KindPreemption {
		return "V0" // V1 logs no preemption
	}
	if s.genSeen != "" {
		return "" // the text is searched only until a line has told
	}
	return vllmTextGeneration(msg)
}

// vllmTextGeneration reads the generation from names in a message: V0's
// engine classes and paths, V1's engine core and paths.
func vllmTextGeneration(msg []byte) string {
	switch {
	case contains(msg, "/vllm/v1/"), contains(msg, "vllm.v1."), contains(msg, "EngineCore"), contains(msg, "Engine core"):
		return "V1"
	case contains(msg, "MQLLMEngine"), contains(msg, "MQEngineDeadError"), contains(msg, "AsyncEngineDeadError"),
		contains(msg, "/vllm/engine/async_llm_engine.py"), contains(msg, "vllm.engine.async_llm_engine"):
		return "V0"
	}
	return ""
}

// loggerGeneration gives the vLLM generation of a module path: vllm.v1.*
// is V1, the V0 engine, executor and worker modules are V0.
func loggerGeneration(logger []byte) string {
	switch {
	case bytes.HasPrefix(logger, []byte("vllm.v1.")):
		return "V1"
	case bytes.HasPrefix(logger, []byte("vllm.engine.")), bytes.HasPrefix(logger, []byte("vllm.executor.")), bytes.HasPrefix(logger, []byte("vllm.worker.")):
		return "V0"
	}
	return ""
}

// vllmProc reads a process prefix: the rank of a worker ("(VllmWorker
// rank=1 pid=9) ", "(Worker_TP1 pid=100) ", a Ray worker's pid), whose
// copies of a message are one event, and the generation it shows: V1's
// front end and engine core are "(APIServer pid=N)" and "(EngineCore...",
// V0's multiprocessing workers "(VllmWorkerProcess pid=N)".
func (s *Scanner) vllmProc(p []byte) {
	p = trimSpace(p)
	switch {
	case bytes.HasPrefix(p, []byte("(APIServer")), bytes.HasPrefix(p, []byte("(EngineCore")), bytes.HasPrefix(p, []byte("(Worker_")):
		s.ev.Generation = "V1"
	case bytes.HasPrefix(p, []byte("(VllmWorkerProcess")):
		s.ev.Generation = "V0"
	}
	s.engineProc = !bytes.HasPrefix(p, []byte("(APIServer"))
	for _, w := range [...]string{"(VllmWorker", "(Worker", "(RayWorkerWrapper", "(pid="} {
		if bytes.HasPrefix(p, []byte(w)) {
			s.ev.Rank = s.intern(p[1 : len(p)-1])
			return
		}
	}
}

// stripProcPrefix removes "(APIServer pid=118) " and similar prefixes.
func stripProcPrefix(b []byte) []byte {
	if len(b) > 0 && b[0] == '(' {
		lim := len(b)
		if lim > 128 {
			lim = 128
		}
		if i := index(b[:lim], ") "); i > 0 && bytes.IndexByte(b[1:i], '(') < 0 {
			return b[i+2:]
		}
	}
	return b
}

// vllmLevel reads the level word at the start of b.
func vllmLevel(b []byte) (Level, int) {
	if len(b) < 5 {
		return LevelUnknown, 0
	}
	switch b[0] {
	case 'I':
		return vllmLevelWord(b, "INFO ", LevelInfo)
	case 'W':
		return vllmLevelWord(b, "WARNING ", LevelWarning)
	case 'E':
		return vllmLevelWord(b, "ERROR ", LevelError)
	case 'D':
		return vllmLevelWord(b, "DEBUG ", LevelDebug)
	case 'C':
		return vllmLevelWord(b, "CRITICAL ", LevelCritical)
	}
	return LevelUnknown, 0
}

// vllmLevelWord returns lvl and the word's length when b starts with word, so
// that each level's length is the length of its word and not a number
// written beside it.
func vllmLevelWord(b []byte, word string, lvl Level) (Level, int) {
	if len(b) >= len(word) && bstr(b[:len(word)]) == word {
		return lvl, len(word)
	}
	return LevelUnknown, 0
}

// vllmHeader reads "LEVEL MM-DD HH:MM:SS source] " and sets the line's
// stamp. It returns the message after the header.
func (s *Scanner) vllmHeader(b []byte) (Level, []byte, bool) {
	lvl, n := vllmLevel(b)
	if n == 0 {
		return LevelUnknown, nil, false
	}
	mon, day, h, m, sec, ok := monthDayClock(b[n:])
	if !ok || n+14 >= len(b) || b[n+14] != ' ' {
		return LevelUnknown, nil, false
	}
	rest := b[n+15:]
	s.vllmSrc = nil
	// The source location: "[file.py:123] ", "file.py:123] ", or, in some
	// documentation copies, "file.py:123 ".
	if len(rest) > 0 && rest[0] == '[' {
		i := index(rest, "] ")
		if i < 0 || i > 200 {
			if i2 := bytes.IndexByte(rest, ']'); i2 == len(rest)-1 {
				s.vllmSrc = rest[1:i2]
				rest = rest[len(rest):]
			} else {
				return LevelUnknown, nil, false
			}
		} else {
			s.vllmSrc = rest[1:i]
			rest = rest[i+2:]
		}
	} else {
		sp := bytes.IndexByte(rest, ' ')
		if sp < 0 {
			sp = len(rest)
		}
		tok := rest[:sp]
		if len(tok) > 0 && tok[len(tok)-1] == ']' {
			tok = tok[:len(tok)-1]
		}
		colon := bytes.LastIndexByte(tok, ':')
		if colon <= 0 || !allDigits(tok, colon+1, len(tok)-colon-1) || colon+1 == len(tok) {
			return LevelUnknown, nil, false
		}
		s.vllmSrc = tok
		if sp < len(rest) {
			rest = rest[sp+1:]
		} else {
			rest = rest[sp:]
		}
	}
	s.lineStamp = stamp{q: TimeNoYear, mon: mon, day: day, h: h, m: m, s: sec}
	return lvl, rest, true
}

// vllmHeaderAt reports whether b starts with a vLLM record header
// ("INFO 07-08 07:17:34 ...").
func vllmHeaderAt(b []byte) bool {
	lvl, n := vllmLevel(b)
	if lvl == LevelUnknown {
		return false
	}
	_, _, _, _, _, ok := monthDayClock(b[n:])
	return ok
}

// findVLLMHeader finds a record header that does not start the line.
func findVLLMHeader(b []byte) int {
	for _, w := range [...]string{"INFO ", "WARNING ", "ERROR ", "CRITICAL ", "DEBUG "} {
		off := 0
		for {
			i := index(b[off:], w)
			if i < 0 {
				break
			}
			i += off
			if _, _, _, _, _, ok := monthDayClock(b[i+len(w):]); ok && i > 0 {
				return i
			}
			off = i + 1
		}
	}
	return -1
}

// vllmMessage reads the message text: the banner, the rules, and else, for
// warnings and worse, the problem classes.
func (s *Scanner) vllmMessage(lvl Level, msg []byte) status {
	if len(msg) == 0 {
		return stIgnored
	}
	if (msg[0] == ' ' || msg[0] >= 0x80) && contains(msg, "█") {
		return s.vllmBanner(msg)
	}
	if st, ok := vllmRules.match(s, msg); ok {
		return st
	}
	if lvl >= LevelWarning || lvl == LevelUnknown {
		return s.classify(lvl, msg)
	}
	return stIgnored
}

// vllmRules are the vLLM messages read for events and facts (see msgRules).
var vllmRules = newMsgRules(
	msgRule{"Avg prompt throughput", func(s *Scanner, msg, _ []byte) status { return s.vllmStats(msg) }},
	msgRule{"Aborted request ", func(s *Scanner, _, rest []byte) status {
		return s.problem(KindError, ProblemAbort, string(trimID(rest)))
	}},
	requestRule("Added request ", RequestAdded),
	msgRule{"Automatically detected platform ", func(s *Scanner, _, rest []byte) status {
		return s.fact(FactPlatform, strings.TrimSuffix(string(firstField(rest)), "."))
	}},
	sizeRule("Available KV cache memory: ", FactKVCacheGiB),
	// "Engine 000: Avg prompt throughput ..." (V1 with several engines) and
	// "Engine 000: num_gpu_blocks is: ..."
	msgRule{"Engine ", func(s *Scanner, _, rest []byte) status {
		idx, r2, ok := parseIntPrefix(rest)
		if !ok {
			return stNext
		}
		r3, ok := afterPrefix(r2, ": ")
		if !ok {
			return stNext
		}
		if _, ok := afterPrefix(r3, "Avg prompt throughput"); ok {
			s.ev.Stats.EngineIndex = idx
			s.ev.Stats.Set |= FieldEngineIndex
			return s.vllmStats(r3)
		}
		if v, ok := after(r3, "num_gpu_blocks is: "); ok {
			return s.intFact(FactKVCacheBlocksGPU, v)
		}
		return stNext
	}},
	msgRule{"Prefix cache hit rate: GPU: ", func(s *Scanner, _, rest []byte) status { return s.vllmPrefixHitRate(rest) }},
	msgRule{"Possibly too large swap space", func(s *Scanner, msg, _ []byte) status {
		s.ev.Generation = "V0" // V1 has no swap space
		return s.problem(KindWarning, ProblemSwapSpace, string(msg))
	}},
	msgRule{"Sequence group ", func(s *Scanner, _, rest []byte) status { return s.vllmPreemption(rest) }},
	msgRule{"Starting to load model ", func(s *Scanner, _, rest []byte) status {
		return s.fact(FactModel, strings.TrimSuffix(string(trimSpace(rest)), "..."))
	}},
	msgRule{"vLLM API server version ", func(s *Scanner, _, rest []byte) status {
		return s.fact(FactVersion, string(trimSpace(rest)))
	}},
	msgRule{"args: Namespace(", func(s *Scanner, _, rest []byte) status { return s.vllmArgs(rest, false) }},
	msgRule{"non-default args: {", func(s *Scanner, _, rest []byte) status { return s.vllmArgs(rest, true) }},
	msgRule{"Initializing a", func(s *Scanner, _, rest []byte) status { return s.vllmEngineConfig(rest) }},
	msgRule{"#", func(s *Scanner, msg, _ []byte) status { return s.vllmBlocks(msg) }},
	intRule("GPU KV cache size: ", FactKVCacheTokens),
	msgRule{"Graph capturing finished in ", func(s *Scanner, _, rest []byte) status { return s.vllmGraphDone(rest) }},
	msgRule{"Maximum concurrency for ", func(s *Scanner, _, rest []byte) status { return s.vllmConcurrency(rest) }},
	msgRule{"Memory profiling results: ", func(s *Scanner, _, rest []byte) status { return s.vllmMemoryProfile(rest) }},
	sizeRule("Model loading took ", FactWeightsGiB),
	sizeRule("Loading model weights took ", FactWeightsGiB),
	intRule("Using max model len ", FactMaxModelLen),
	msgRule{"Chunked prefill is enabled with max_num_batched_tokens=", func(s *Scanner, _, rest []byte) status {
		s.addFact(FactChunkedPrefill, "True")
		return s.intFact(FactMaxBatchedTokens, rest)
	}},
	constRule("Capturing cudagraphs", FactCUDAGraph, "captured"),
	constRule("Capturing CUDA graph", FactCUDAGraph, "captured"),
	constRule("Cudagraph is disabled", FactCUDAGraph, "disabled"),
	// V0's model runner dumps the inputs of a step that raised: the engine
	// loop dies with it (an INFO line, so it is read here).
	msgRule{"Writing input of failed execution", func(s *Scanner, msg, _ []byte) status {
		return s.fatal(ProblemEngineDead, string(trimSpace(msg)))
	}},
	requestRule("Received request ", RequestReceived),
	msgRule{"Resolved architecture: ", func(s *Scanner, _, rest []byte) status {
		return s.fact(FactArchitecture, string(trimSpace(rest)))
	}},
	requestRule("Finished request ", RequestFinished),
	msgRule{"the current vLLM instance can use total_gpu_memory", func(s *Scanner, _, rest []byte) status {
		if f, _, ok := floatAfter(rest, "gpu_memory_utilization ("); ok {
			return s.fact(FactGPUMemoryUtilization, fmtFloat(f))
		}
		return stNext
	}},
	msgRule{"model weights take ", func(s *Scanner, _, rest []byte) status {
		if v, ok := after(rest, "reserved for KV Cache is "); ok {
			s.sizeFact(FactWeightsGiB, rest)
			return s.sizeFact(FactKVCacheGiB, v)
		}
		return stNext
	}},
)

// vllmBanner reads the start-up banner of later releases (0.19), block
// letters with "version X" and "model M" beside them.
func (s *Scanner) vllmBanner(msg []byte) status {
	if v, ok := after(msg, "  version "); ok {
		return s.fact(FactVersion, string(firstField(v)))
	}
	if v, ok := after(msg, "  model "); ok {
		return s.fact(FactModel, string(firstField(v)))
	}
	return stIgnored
}

// vllmHeaderless handles lines without a vLLM header: the uvicorn access
// log, tracebacks and the final exception line of a crash.
func (s *Scanner) vllmHeaderless(b []byte) status {
	if rest, ok := afterPrefix(b, "INFO:"); ok {
		return s.uvicornAccess(rest)
	}
	if rest, ok := afterPrefix(b, "ERROR:"); ok {
		s.ev.Level = LevelError
		return s.classify(LevelError, trimSpace(rest))
	}
	return s.classify(LevelUnknown, b)
}

// vllmStats reads "Avg prompt throughput: 1.0 tokens/s, ..., Running: 3
// reqs, ...". Every release has used "Key: number unit" pairs; the keys
// changed (Pending -> Waiting, CPU KV cache and Swapped dropped in V1,
// prefix cache hit rate added), so unknown keys are skipped.
func (s *Scanner) vllmStats(line []byte) status {
	st := &s.ev.Stats
	it := kvIter{b: line}
	for key, val, ok := it.next(); ok; key, val, ok = it.next() {
		var f StatField
		switch bstr(key) {
		case "Avg prompt throughput":
			f = FieldPromptThroughput
		case "Avg generation throughput":
			f = FieldGenerationThroughput
		case "Running":
			f = FieldRunning
		case "Swapped":
			f = FieldSwapped
		case "Pending", "Waiting":
			f = FieldWaiting
		case "GPU KV cache usage", "KV cache usage":
			f = FieldKVUsage
		case "CPU KV cache usage":
			f = FieldCPUKVUsage
		case "Prefix cache hit rate", "GPU prefix cache hit rate":
			f = FieldPrefixCacheHitRate
		case "CPU prefix cache hit rate":
			f = FieldCPUPrefixCacheHitRate
		default:
			continue
		}
		if st.Set&f != 0 {
			// Two records glued on one line: keep the first.
			break
		}
		v, okv := kvNumber(val)
		if !okv {
			return s.bad("vLLM stats: %s: expected a number, found %q", key, val)
		}
		st.set(f, v)
	}
	if st.Set&^FieldEngineIndex == 0 {
		return s.bad("vLLM stats: expected \"Key: value\" pairs, found %q", clip(line))
	}
	s.ev.Kind = KindStats
	return stEvent
}

// vllmPrefixHitRate reads V0's separate line "Prefix cache hit rate: GPU:
// 62.26%, CPU: 0.00%".
func (s *Scanner) vllmPrefixHitRate(rest []byte) status {
	gpu, r, ok := parseFloatPrefix(rest)
	if !ok || len(r) == 0 || r[0] != '%' {
		return s.bad("vLLM prefix cache hit rate: expected \"GPU: N%%\", found %q", clip(rest))
	}
	_ = gpu
	st := &s.ev.Stats
	st.PrefixCacheHitRate, _ = kvNumber(rest)
	st.Set |= FieldPrefixCacheHitRate
	if c, ok := after(r, "CPU: "); ok {
		if _, r2, ok2 := parseFloatPrefix(c); ok2 && len(r2) > 0 && r2[0] == '%' {
			st.CPUPrefixCacheHitRate, _ = kvNumber(c)
			st.Set |= FieldCPUPrefixCacheHitRate
		}
	}
	s.ev.Kind = KindStats
	return stEvent
}

// vllmPreemption reads V0's warning
//
//	Sequence group <id> is preempted by PreemptionMode.<MODE> mode because
//	there is not enough KV cache space. ... total_num_cumulative_preemption=<n>
//
// (total_cumulative_preemption_cnt=<n> in older releases). Later V0
// releases print it only for every 50th preemption, so the cumulative
// count matters more than the number of lines.
func (s *Scanner) vllmPreemption(rest []byte) status {
	i := index(rest, " is preempted by ")
	if i < 0 {
		return s.classify(s.ev.Level, rest)
	}
	p := &s.ev.Preemption
	p.RequestID = string(rest[:i])
	p.Count = 1
	modeText := rest[i+len(" is preempted by "):]
	modeText, _ = afterPrefix(modeText, "PreemptionMode.")
	switch {
	case hasPrefixFold(modeText, "recompute"):
		p.Mode = ModeRecompute
	case hasPrefixFold(modeText, "swap"):
		p.Mode = ModeSwap
	default:
		return s.bad("vLLM preemption: unknown mode in %q", clip(modeText))
	}
	if v, ok := after(modeText, "cumulative_preemption"); ok {
		if eq := bytes.IndexByte(v, '='); eq >= 0 && eq < 8 {
			if n, _, ok2 := parseIntPrefix(v[eq+1:]); ok2 {
				p.Cumulative, p.CumulativeKnown = n, true
			}
		}
	}
	s.ev.Kind = KindPreemption
	return stEvent
}

// vllmBlocks reads "# GPU blocks: 1207, # CPU blocks: 1365" (V0), "# cuda
// blocks: 7191, # CPU blocks: 512" (V0 0.8), "# GPU blocks: 1381" (early
// V1) and "# cpu blocks: N" (CPU backend).
func (s *Scanner) vllmBlocks(msg []byte) status {
	it := kvIter{b: msg}
	for key, val, ok := it.next(); ok; key, val, ok = it.next() {
		k := strings.ToLower(bstr(key))
		n, _, okn := parseIntPrefix(val)
		if !okn {
			continue
		}
		switch k {
		case "# gpu blocks", "# cuda blocks", "# npu blocks", "# xpu blocks", "# hpu blocks":
			s.addFact(FactKVCacheBlocksGPU, strconv.Itoa(n))
		case "# cpu blocks":
			s.addFact(FactKVCacheBlocksCPU, strconv.Itoa(n))
		}
	}
	return s.configEvent()
}

// vllmConcurrency reads "Maximum concurrency for 2,048 tokens per request:
// 10.79x".
func (s *Scanner) vllmConcurrency(rest []byte) status {
	tokens, r, ok := parseIntPrefix(rest)
	if !ok {
		return s.bad("vLLM concurrency: expected a token count, found %q", clip(rest))
	}
	v, ok := after(r, ": ")
	if !ok {
		return s.bad("vLLM concurrency: expected \": N.NNx\", found %q", clip(r))
	}
	x, _, ok := parseFloatPrefix(v)
	if !ok {
		return s.bad("vLLM concurrency: expected a number, found %q", clip(v))
	}
	s.addFact(FactMaxConcurrencyTokens, strconv.Itoa(tokens))
	s.addFact(FactMaxConcurrency, fmtFloat(x))
	s.ev.Kind = KindConfig
	return stEvent
}

// vllmMemoryProfile reads V0's "Memory profiling results: total_gpu_memory=
// 7.92GiB ... kv_cache_size=3.54GiB gpu_memory_utilization=0.90".
func (s *Scanner) vllmMemoryProfile(rest []byte) status {
	if v, ok := after(rest, "kv_cache_size="); ok {
		s.sizeFact(FactKVCacheGiB, v)
	}
	if v, ok := after(rest, "gpu_memory_utilization="); ok {
		s.addNumber(FactGPUMemoryUtilization, v)
	}
	return s.configEvent()
}

// vllmGraphDone reads "Graph capturing finished in 21 secs, took 0.54 GiB".
func (s *Scanner) vllmGraphDone(rest []byte) status {
	secs, r, ok := parseFloatPrefix(rest)
	if !ok {
		return s.bad("vLLM graph capture: expected seconds, found %q", clip(rest))
	}
	s.addFact(FactCUDAGraph, "captured")
	s.addFact(FactCUDAGraphSeconds, fmtFloat(secs))
	if v, ok2 := after(r, "took "); ok2 {
		s.addGiB(FactCUDAGraphGiB, v)
	}
	s.ev.Kind = KindConfig
	return stEvent
}

// vllmEngineConfig reads "Initializing an LLM engine (v0.6.4.post1) with
// config: model='...', ...", "Initializing a V0 LLM engine (v0.8.3) ..."
// and "Initializing a V1 LLM engine (v0.10.2) ...".
func (s *Scanner) vllmEngineConfig(rest []byte) status {
	gen := "V0"
	switch {
	case bytes.HasPrefix(rest, []byte(" V1 ")):
		gen = "V1"
	case bytes.HasPrefix(rest, []byte(" V0 ")), bytes.HasPrefix(rest, []byte("n LLM engine")):
	default:
		return stIgnored
	}
	s.addFact(FactEngineGeneration, gen)
	if o := bytes.IndexByte(rest, '('); o >= 0 {
		if c := bytes.IndexByte(rest[o:], ')'); c > 0 {
			v := string(rest[o+1 : o+c])
			s.addFact(FactVersion, strings.TrimPrefix(v, "v"))
		}
	}
	if cfg, ok := after(rest, "with config: "); ok {
		eachTop(cfg, func(part []byte) {
			k, val, ok := kwarg(part)
			if !ok {
				return
			}
			key := bstr(k)
			switch key {
			case "model", "dtype", "max_seq_len", "tensor_parallel_size", "pipeline_parallel_size", "quantization", "kv_cache_dtype", "enable_prefix_caching", "enforce_eager":
			default:
				return
			}
			v := unquote(string(val))
			switch key {
			case "dtype":
				v = strings.TrimPrefix(v, "torch.")
			case "max_seq_len":
				key = "max_model_len" // the argument's name
			}
			s.settingFact(key, v)
		})
	}
	s.ev.Kind = KindConfig
	return stEvent
}

// vllmArgs reads the argument dump: "args: Namespace(...)" (every
// argument; non-defaults found with the defaults table) or, since 0.9,
// "non-default args: {...}". Only non-default arguments become facts; the
// whole dump stays in Event.Raw.
func (s *Scanner) vllmArgs(rest []byte, nonDefault bool) status {
	closer, item := byte(')'), kwarg
	if nonDefault {
		closer, item = '}', dictItem
	}
	end := len(rest) - 1
	for end >= 0 && (rest[end] == ' ' || rest[end] == '\t') {
		end--
	}
	if end < 0 || rest[end] != closer {
		end = bytes.LastIndexByte(rest, closer)
	}
	if end < 0 {
		return s.bad("vLLM args: no closing %q", closer)
	}
	n := 0
	eachTop(rest[:end], func(part []byte) {
		key, val, ok := item(part)
		if !ok {
			return
		}
		n++
		switch bstr(key) {
		case "dispatch_function", "subparser", "model_tag":
			return
		}
		if nonDefault || !isDefault(vllmDefaults, trimSpace(part), key, val) {
			s.nonDefaultArg(pyArg{string(key), string(val)})
		}
	})
	if n == 0 {
		return s.bad("vLLM args: no arguments found")
	}
	s.ev.Kind = KindConfig
	return stEvent
}

// nonDefaultArg records an argument the user set (fact "arg.KEY") and any
// fact it gives.
func (s *Scanner) nonDefaultArg(a pyArg) {
	s.ev.Facts = append(s.ev.Facts, Fact{Key: "arg." + a.key, Value: unquote(a.val), NonDefault: true})
	s.argFact(a)
}

// argFact maps well-known arguments to facts.
func (s *Scanner) argFact(a pyArg) {
	v := unquote(a.val)
	if v == "None" {
		return
	}
	s.settingFact(a.key, v)
}

// settingFact maps a well-known engine setting, by its argument name, to
// its fact.
func (s *Scanner) settingFact(key, v string) {
	if fact := settingFacts[key]; fact != "" {
		s.addFact(fact, v)
	} else if (key == "enforce_eager" || key == "disable_cuda_graph") && v == "True" {
		s.addFact(FactCUDAGraph, "disabled")
	}
}

// settingFacts are the facts of the engines' well-known arguments (vLLM's
// and SGLang's names).
var settingFacts = map[string]string{
	"model":                  FactModel,
	"model_path":             FactModel,
	"dtype":                  FactDtype,
	"quantization":           FactQuantization,
	"kv_cache_dtype":         FactKVCacheDtype,
	"max_model_len":          FactMaxModelLen,
	"context_length":         FactMaxModelLen,
	"tensor_parallel_size":   FactTensorParallel,
	"tp_size":                FactTensorParallel,
	"pipeline_parallel_size": FactPipelineParallel,
	"pp_size":                FactPipelineParallel,
	"gpu_memory_utilization": FactGPUMemoryUtilization,
	"max_num_seqs":           FactMaxNumSeqs,
	"max_running_requests":   FactMaxRunningRequests,
	"max_num_batched_tokens": FactMaxBatchedTokens,
	"enable_prefix_caching":  FactPrefixCaching,
}

// trimID returns a request ID without the trailing period vLLM prints.
func trimID(b []byte) []byte {
	b = trimSpace(b)
	if i := bytes.IndexAny(b, ": "); i >= 0 {
		b = b[:i]
	}
	for len(b) > 0 && (b[len(b)-1] == '.' || b[len(b)-1] == ',') {
		b = b[:len(b)-1]
	}
	return b
}

// uvicornAccess reads uvicorn's access line, as printed after "INFO:":
// `     127.0.0.1:60198 - "POST /v1/chat/completions HTTP/1.1" 200 OK`.
func (s *Scanner) uvicornAccess(rest []byte) status {
	q := bytes.IndexByte(rest, '"')
	if q < 0 {
		return stIgnored // "Started server process", "Application startup complete."
	}
	q2 := bytes.IndexByte(rest[q+1:], '"')
	if q2 < 0 {
		return stIgnored
	}
	req := rest[q+1 : q+1+q2]
	code, _, ok := parseIntPrefix(rest[q+2+q2:])
	if !ok {
		return stIgnored
	}
	parts := bytes.Fields(req)
	if len(parts) < 2 {
		return stIgnored
	}
	return s.httpEvent(parts[0], parts[1], code)
}

// clip shortens text quoted in syntax errors.
func clip(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}
