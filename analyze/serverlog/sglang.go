package serverlog

import (
	"bytes"
	"strconv"
	"strings"
)

// SGLang prints records as
//
//	[YYYY-MM-DD HH:MM:SS] message
//	[YYYY-MM-DD HH:MM:SS TP0] message          (scheduler of tensor-parallel rank 0)
//	[YYYY-MM-DD HH:MM:SS DP0 TP0 EP0] message  (data/expert parallel ranks)
//
// in the server's local time without a zone. Releases before the
// timestamped format printed "[gpu=0] " or "[gpu_id=0] " instead.

// parseSGLang reads one SGLang line.
func (s *Scanner) parseSGLang(b []byte) status {
	msg, ok := s.sglangHeader(b)
	if !ok && s.u.level != LevelUnknown && bytes.HasPrefix(s.u.logger, []byte("sglang")) {
		// re-logged through Python logging ("... [INFO] sglang.srt.managers.scheduler_metrics_mixin: ...")
		msg, ok = b, true
	}
	if !ok {
		if rest, ok2 := afterPrefix(b, "INFO:"); ok2 {
			return s.uvicornAccess(rest)
		}
		// Records quoted without their prefix (documentation, other tools
		// re-logging them) are still read when the message is known.
		if st := s.sglangMessage(b, false); st != stUnknown {
			return st
		}
		s.ev = Event{}
		return s.classify(LevelUnknown, b)
	}
	return s.sglangMessage(msg, true)
}

// sglangHeader strips the bracketed prefix and sets the stamp and the
// line's rank tags.
func (s *Scanner) sglangHeader(b []byte) ([]byte, bool) {
	if len(b) < 3 || b[0] != '[' {
		return nil, false
	}
	if y, mon, day, h, m, sec, ok := dateClock(b[1:]); ok && b[11] == ' ' {
		ns, tags, n, ok := sglangHeaderTail(b[20:])
		if !ok {
			return nil, false
		}
		s.lineStamp = stamp{q: TimeNoZone, year: y, mon: mon, day: day, h: h, m: m, s: sec, n: ns}
		s.ev.Rank = s.intern(tags)
		return b[20+n:], true
	}
	if h, m, sec, ok := clock(b, 1); ok {
		// 0.3: "[16:43:29 TP0] " and "[16:43:29] ", a time of day only
		ns, tags, n, ok := sglangHeaderTail(b[9:])
		if !ok {
			return nil, false
		}
		s.lineStamp = stamp{q: TimeClock, h: h, m: m, s: sec, n: ns}
		s.ev.Rank = s.intern(tags)
		return b[9+n:], true
	}
	for _, p := range [...]string{"[gpu=", "[gpu_id="} {
		if rest, ok := afterPrefix(b, p); ok {
			if i := index(rest, "] "); i > 0 && i < 6 {
				s.ev.Rank = s.intern(b[1 : len(p)+i])
				return rest[i+2:], true
			}
		}
	}
	return nil, false
}

// sglangHeaderTail reads what follows the time in SGLang's header:
// optional milliseconds, rank tags ("TP0", "DP1 TP2", "TP0 EP0"), the
// closing bracket and a space. It returns the nanoseconds, the tags and
// the bytes used.
func sglangHeaderTail(b []byte) (ns int, tags []byte, n int, ok bool) {
	i := 0
	if i < len(b) && (b[i] == ',' || b[i] == '.') {
		var digits int
		if ns, digits = fractionNS(b[i+1:]); digits == 0 {
			return 0, nil, 0, false
		}
		i += 1 + digits
	}
	start := i
	for i < len(b) && b[i] == ' ' {
		// a tag: two or three capitals and a number
		j := i + 1
		for j < len(b) && j-i-1 < 3 && b[j] >= 'A' && b[j] <= 'Z' {
			j++
		}
		caps := j - i - 1
		k := j
		for k < len(b) && isDigit(b[k]) {
			k++
		}
		if caps < 2 || k == j {
			return 0, nil, 0, false
		}
		i = k
	}
	if i >= len(b) || b[i] != ']' {
		return 0, nil, 0, false
	}
	tags = trimSpace(b[start:i])
	i++
	if i < len(b) && b[i] == ' ' {
		i++
	}
	return ns, tags, i, true
}

// sglangMessage reads the message after the prefix. headed says whether the
// line had SGLang's prefix; without it only known messages count.
func (s *Scanner) sglangMessage(msg []byte, headed bool) status {
	if len(msg) == 0 {
		return stIgnored
	}
	if st, ok := sglangRules.match(s, msg); ok {
		return st
	}
	if !headed {
		return stUnknown
	}
	lvl := LevelInfo
	if contains(msg, "Error") || contains(msg, "Exception") || contains(msg, "exception") {
		lvl = LevelError
	}
	st := s.classify(lvl, msg)
	if st == stUnknown {
		return stIgnored
	}
	return st
}

// sglangRules are the SGLang messages read for events and facts (see
// msgRules).
var sglangRules = newMsgRules(
	msgRule{"Prefill batch", func(s *Scanner, _, rest []byte) status { return s.sglangBatch("prefill", rest) }},
	msgRule{"Decode batch", func(s *Scanner, _, rest []byte) status { return s.sglangBatch("decode", rest) }},
	msgRule{"Decode out of memory happened.", func(s *Scanner, _, rest []byte) status { return s.sglangRetract(rest) }},
	msgRule{"KV cache pool is full. Retract requests.", func(s *Scanner, _, rest []byte) status { return s.sglangRetract(rest) }},
	msgRule{"KV Cache is allocated.", func(s *Scanner, _, rest []byte) status { return s.sglangKVAllocated(rest) }},
	msgRule{"server_args=ServerArgs(", func(s *Scanner, _, rest []byte) status { return s.sglangArgs(rest) }},
	msgRule{"max_total_num_tokens=", func(s *Scanner, msg, rest []byte) status { return s.sglangLimits(msg, rest) }},
	msgRule{"Load weight end.", func(s *Scanner, _, rest []byte) status {
		if v, ok := after(rest, "mem usage="); ok {
			return s.sizeFact(FactWeightsGiB, v)
		}
		return stIgnored
	}},
	msgRule{"Capture", func(s *Scanner, _, rest []byte) status {
		if !contains(rest, "graph end") {
			return stNext
		}
		s.addFact(FactCUDAGraph, "captured")
		if v, ok := after(rest, "elapsed="); ok {
			s.addNumber(FactCUDAGraphSeconds, v)
		} else if v, ok := after(rest, "Time elapsed: "); ok {
			s.addNumber(FactCUDAGraphSeconds, v)
		}
		if v, ok := after(rest, "mem usage="); ok {
			s.addGiB(FactCUDAGraphGiB, v)
		}
		s.ev.Kind = KindConfig
		return stEvent
	}},
	msgRule{"new fill batch.", func(s *Scanner, _, rest []byte) status { return s.sglangFillBatch(rest) }},
	constRule("The server is fired up and ready to roll!", FactListening, "ready"),
	msgRule{"INFO:", func(s *Scanner, _, rest []byte) status { return s.uvicornAccess(rest) }},
)

// sglangBatch reads
//
//	Prefill batch. #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0
//	Decode batch. #running-req: 1, #token: 38, token usage: 0.00, cuda graph: True, gen throughput (token/s): 2.29, #queue-req: 0
//
// and the later variants with a comma after "batch", "full token usage",
// "swa token usage", "#pending-token", "input throughput (token/s)".
func (s *Scanner) sglangBatch(phase string, rest []byte) status {
	st := &s.ev.Stats
	st.Phase = phase
	// "[DP0]"-style tags before the list
	rest = trimSpace(rest)
	for len(rest) > 0 && (rest[0] == '.' || rest[0] == ',' || rest[0] == ' ') {
		rest = rest[1:]
	}
	if len(rest) > 0 && rest[0] == '[' {
		if i := bytes.IndexByte(rest, ']'); i > 0 {
			rest = rest[i+1:]
		}
	}
	it := kvIter{b: rest}
	for key, val, ok := it.next(); ok; key, val, ok = it.next() {
		k := bstr(key)
		var f StatField
		switch k {
		case "#running-req":
			f = FieldRunning
		case "#queue-req":
			f = FieldWaiting
		case "token usage", "full token usage":
			f = FieldKVUsage
		case "#token", "#full token":
			f = FieldBatchTokens
		case "gen throughput (token/s)":
			f = FieldGenerationThroughput
		case "input throughput (token/s)":
			f = FieldPromptThroughput
		case "#new-seq":
			f = FieldNewSeqs
		case "#new-token":
			f = FieldNewTokens
		case "#cached-token":
			f = FieldCachedTokens
		case "cache hit rate":
			f = FieldPrefixCacheHitRate
		case "#pending-token":
			f = FieldPendingTokens
		case "cuda graph", "npu graph":
			b, okb := kvBool(val)
			if !okb {
				return s.bad("SGLang %s batch: %s: expected True or False, found %q", phase, key, val)
			}
			st.CUDAGraph = b
			st.Set |= FieldCUDAGraph
			continue
		case "accept len":
			f = FieldAcceptLength
		default:
			continue
		}
		if st.Set&f != 0 {
			continue
		}
		v, okv := kvNumber(val)
		if !okv {
			return s.bad("SGLang %s batch: %s: expected a number, found %q", phase, key, val)
		}
		st.set(f, v)
	}
	if st.Set == 0 {
		return s.bad("SGLang %s batch: expected \"#key: value\" pairs, found %q", phase, clip(rest))
	}
	s.ev.Kind = KindStats
	return stEvent
}

// sglangFillBatch reads the record of SGLang's first releases (router
// model_rpc.py, 2024): "new fill batch. #seq: 1. #cached_token: 2510.
// #new_token: 18. tree_cache_hit_rate: 62.18%. ... #remaining_req: 0.
// #running_req: 0" ("#remaining_req" is the queue).
func (s *Scanner) sglangFillBatch(rest []byte) status {
	st := &s.ev.Stats
	st.Phase = "prefill"
	for _, part := range bytes.Split(rest, []byte(". ")) {
		k, v, ok := bytes.Cut(trimSpace(part), []byte(": "))
		if !ok {
			continue
		}
		var f StatField
		switch bstr(k) {
		case "#seq":
			f = FieldNewSeqs
		case "#cached_token":
			f = FieldCachedTokens
		case "#new_token":
			f = FieldNewTokens
		case "tree_cache_hit_rate":
			f = FieldPrefixCacheHitRate
		case "#remaining_req":
			f = FieldWaiting
		case "#running_req":
			f = FieldRunning
		default:
			continue
		}
		val, okv := kvNumber(bytes.TrimSuffix(v, []byte(".")))
		if !okv {
			return s.bad("SGLang fill batch: %s: expected a number, found %q", k, v)
		}
		st.set(f, val)
	}
	if st.Set == 0 {
		return s.bad("SGLang fill batch: expected \"#key: value\" pairs, found %q", clip(rest))
	}
	s.ev.Kind = KindStats
	return stEvent
}

// sglangRetract reads "KV cache pool is full. Retract requests.
// #retracted_reqs: 1, #new_token_ratio: 0.9998 -> 1.0000" (older releases:
// "Decode out of memory happened. #retracted_reqs: ...").
func (s *Scanner) sglangRetract(rest []byte) status {
	p := &s.ev.Preemption
	p.Mode = ModeRetract
	v, ok := after(rest, "#retracted_reqs: ")
	if !ok {
		return s.bad("SGLang retraction: expected #retracted_reqs, found %q", clip(rest))
	}
	n, _, ok := parseIntPrefix(v)
	if !ok {
		return s.bad("SGLang retraction: #retracted_reqs: expected an integer, found %q", clip(v))
	}
	p.Count = n
	if a, r2, ok2 := floatAfter(rest, "#new_token_ratio: "); ok2 {
		p.NewTokenRatioBefore = a
		if b2, _, ok3 := floatAfter(r2, "-> "); ok3 {
			p.NewTokenRatioAfter = b2
		}
	}
	s.ev.Kind = KindPreemption
	return stEvent
}

// sglangKVAllocated reads "KV Cache is allocated. dtype: torch.bfloat16,
// #tokens: 87552, K size: 6.01 GB, V size: 6.01 GB".
func (s *Scanner) sglangKVAllocated(rest []byte) status {
	it := kvIter{b: rest}
	var k, v float64
	found := false
	for key, val, ok := it.next(); ok; key, val, ok = it.next() {
		switch bstr(key) {
		case "#tokens":
			n, _, okn := parseIntPrefix(val)
			if !okn {
				return s.bad("SGLang KV cache: #tokens: expected an integer, found %q", val)
			}
			s.addFact(FactKVCacheTokens, strconv.Itoa(n))
			found = true
		case "dtype":
			s.addFact(FactKVCacheDtype, strings.TrimPrefix(string(trimSpace(val)), "torch."))
		case "K size":
			k, _ = sizeGiB(val)
		case "V size":
			v, _ = sizeGiB(val)
		}
	}
	if k+v > 0 {
		s.addFact(FactKVCacheGiB, fmtFloat(round6(k+v)))
	}
	if !found {
		return s.bad("SGLang KV cache: expected #tokens, found %q", clip(rest))
	}
	s.ev.Kind = KindConfig
	return stEvent
}

// sglangLimits reads "max_total_num_tokens=87552, chunked_prefill_size=2048,
// max_prefill_tokens=16384, max_running_requests=2048, context_len=32768,
// available_gpu_mem=1.91 GB".
func (s *Scanner) sglangLimits(msg, _ []byte) status {
	for _, a := range parseKwargs(string(msg)) {
		switch a.key {
		case "max_total_num_tokens":
			s.addFact(FactKVCacheTokens, a.val)
		case "max_running_requests":
			s.addFact(FactMaxRunningRequests, a.val)
		case "context_len":
			s.addFact(FactMaxModelLen, a.val)
		case "chunked_prefill_size":
			s.addFact(FactMaxBatchedTokens, a.val)
		}
	}
	if len(s.ev.Facts) == 0 {
		return s.bad("SGLang limits: no values in %q", clip(msg))
	}
	s.ev.Kind = KindConfig
	return stEvent
}

// sglangArgs reads "server_args=ServerArgs(model_path='...', ...)". Only
// non-default arguments become facts; the whole dump stays in Event.Raw.
func (s *Scanner) sglangArgs(rest []byte) status {
	end := bytes.LastIndexByte(rest, ')')
	if end < 0 {
		return s.bad("SGLang server_args: no closing ')'")
	}
	body := rest[:end]
	var modelPath []byte
	if v, ok := after(body, "model_path="); ok {
		if i := bytes.IndexByte(v, ','); i >= 0 {
			modelPath = v[:i]
		} else {
			modelPath = v
		}
	}
	n := 0
	eachTop(body, func(part []byte) {
		key, val, ok := kwarg(part)
		if !ok {
			return
		}
		n++
		nd := !isDefault(sglangDefaults, trimSpace(part), key, val)
		switch {
		case bstr(key) == "model_path":
			nd = true
		case bytes.Equal(val, modelPath) && (bstr(key) == "tokenizer_path" || bstr(key) == "served_model_name"):
			// derived from the model path, not set by the user
			nd = false
		}
		if nd {
			s.nonDefaultArg(pyArg{string(key), string(val)})
		}
	})
	if n == 0 {
		return s.bad("SGLang server_args: no arguments found")
	}
	s.ev.Kind = KindConfig
	return stEvent
}
