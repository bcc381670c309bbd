package serverlog

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// llama.cpp's llama-server has printed four formats:
//
//  A. late 2023 – early 2024, plain text:
//     "slot 0 is processing [task id: 205]", "print_timings: prompt eval time = ...",
//     "slot 0: context shift - n_keep = ...", "update_slots : failed to find free space in the KV cache, ..."
//  B. 2024, JSON lines by default ({"tid":"...","timestamp":1717067386,"level":"INFO",
//     "function":"print_timings","msg":"prompt eval time = ...","id_slot":0,...}), or with
//     --log-format text: `INFO [   launch_slot_with_task] slot is processing task | tid="..." id_slot=1 id_task=7`
//  C. since late 2024: "<tag> <function>: <message>", slots as "slot launch_slot_: id  0 | task 0 | processing task",
//     timings as a block of lines after "slot print_timing: id  0 | task 0 |"
//  D. C with --log-timestamps/--log-prefix: "0.12.183.899 I slot launch_slot_: ..." (minutes.seconds.ms.us since
//     start and a level letter), and in router mode "[42027] " before it.

// parseLlama reads one llama.cpp line.
func (s *Scanner) parseLlama(b []byte) status {
	// router mode: "[pid] "
	if len(b) > 3 && b[0] == '[' {
		if i := bytes.IndexByte(b[:min(len(b), 12)], ']'); i > 1 && i+1 < len(b) && b[i+1] == ' ' {
			if _, ok := atoi(b[1:i]); ok {
				b = b[i+2:]
			}
		}
	}
	lvl := LevelUnknown
	if len(b) > 0 && isDigit(b[0]) {
		if d, n, ok := llamaElapsed(b); ok && n+2 < len(b) && b[n] == ' ' && b[n+2] == ' ' {
			s.lineStamp = stamp{q: TimeRelative, elapsed: d}
			lvl = llamaLevel(b[n+1])
			b = b[n+3:]
		}
	}
	if lvl == LevelUnknown && len(b) > 3 && b[1] == ' ' && b[2] >= 'a' && b[2] <= 'z' {
		// --log-prefix without --log-timestamps: "I srv  load_model: ..."
		lvl = llamaLevel(b[0])
		if lvl != LevelUnknown {
			b = b[2:]
		}
	}
	s.ev.Level = lvl
	if len(b) == 0 {
		return stIgnored
	}
	switch b[0] {
	case '{':
		return s.llamaJSON(b)
	case 's':
		if rest, ok := afterPrefix(b, "slot "); ok {
			if len(rest) > 0 && isDigit(rest[0]) {
				return s.llamaPlain(lvl, b) // format A: "slot 0 is processing ..."
			}
			return s.llamaSlotLine(lvl, rest)
		}
		if rest, ok := afterPrefix(b, "srv "); ok {
			return s.llamaSrvLine(lvl, rest)
		}
	case 'I', 'W', 'E', 'V', 'D':
		if l, fn, msg, fields, ok := llamaTextRecord(b); ok {
			s.ev.Level = l
			return s.llamaRecord(l, fn, msg, fields)
		}
	}
	return s.llamaPlain(lvl, b)
}

// llamaSlotLine reads format C/D slot lines: "<function>: id  0 | task 5 | message".
func (s *Scanner) llamaSlotLine(lvl Level, rest []byte) status {
	colon := index(rest, ": ")
	if colon < 0 || colon > 20 {
		return s.llamaPlain(lvl, rest)
	}
	fn := trimSpace(rest[:colon])
	body := rest[colon+2:]
	id, task := -1, -1
	if r, ok := afterPrefix(body, "id "); ok {
		if n, r2, ok2 := parseIntPrefix(r); ok2 {
			id = n
			body = r2
		}
		if n, r2, ok2 := intAfter(body, "| task "); ok2 {
			task = n
			body = r2
		}
		if r, ok2 := afterPrefix(trimSpace(body), "|"); ok2 {
			body = r
		}
	}
	msg := trimSpace(body)
	switch {
	case bstr(fn) == "print_timing" && len(msg) == 0:
		// the timing block follows on lines of its own
		s.timingOpen, s.timingSlot, s.timingTask = true, id, task
		return stIgnored
	case bytes.HasPrefix(msg, []byte("processing task")):
		return s.slotEvent(SlotLaunch, id, task)
	case bytes.HasPrefix(msg, []byte("new prompt")):
		st := s.slotEvent(SlotNewPrompt, id, task)
		setEqInt(&s.ev.Slot.PromptTokens, msg, "n_prompt_tokens", "task.n_tokens")
		setEqInt(&s.ev.Slot.NCtxSlot, msg, "n_ctx_slot")
		return st
	case bytes.HasPrefix(msg, []byte("stop processing")):
		st := s.slotEvent(SlotRelease, id, task)
		setEqInt(&s.ev.Slot.NPast, msg, "n_past", "n_tokens")
		if n, ok := eqInt(msg, "truncated"); ok {
			s.ev.Slot.Truncated = n != 0
		}
		return st
	case bytes.HasPrefix(msg, []byte("slot context shift")):
		return s.contextShift(id, task, msg)
	case bytes.HasPrefix(msg, []byte("new slot")):
		if n, ok := eqInt(msg, "n_ctx_slot"); ok {
			return s.fact(FactSlotContext, strconv.Itoa(n))
		}
		if n, ok := eqInt(msg, "n_ctx"); ok {
			return s.fact(FactSlotContext, strconv.Itoa(n))
		}
	case timingPhase(msg) != "":
		return s.timing(id, task, msg)
	}
	if contains(msg, "failed to find free space in the KV cache") || contains(msg, "failed to find a memory slot") {
		return s.kvFull(id, task, msg)
	}
	if id >= 0 && task >= 0 && lvl != LevelError && lvl != LevelWarning {
		// Any other line of a slot's task (prompt progress, decoding,
		// timings headers): the slot is busy with it.
		return s.slotEvent(SlotActive, id, task)
	}
	return s.classifyLlama(lvl, msg)
}

// llamaSrvLine reads format C/D server lines: "<function>: message".
func (s *Scanner) llamaSrvLine(lvl Level, rest []byte) status {
	colon := index(rest, ": ")
	if colon < 0 || colon > 24 {
		return s.llamaPlain(lvl, rest)
	}
	fn := bstr(trimSpace(rest[:colon]))
	msg := trimSpace(rest[colon+2:])
	switch {
	case bytes.HasPrefix(msg, []byte("loading model '")):
		v := msg[len("loading model '"):]
		if i := bytes.LastIndexByte(v, '\''); i >= 0 {
			v = v[:i]
		}
		return s.fact(FactModel, string(v))
	case bytes.HasPrefix(msg, []byte("initializing")):
		if n, ok := eqInt(msg, "n_slots"); ok {
			s.addFact(FactSlots, strconv.Itoa(n))
			if c, ok2 := eqInt(msg, "n_ctx_slot"); ok2 {
				s.addFact(FactSlotContext, strconv.Itoa(c))
			}
			s.ev.Kind = KindConfig
			return stEvent
		}
	case bytes.HasPrefix(msg, []byte("model loaded")):
		return s.fact(FactListening, "model loaded")
	case bytes.Contains(msg, []byte("listening on ")):
		v, _ := after(msg, "listening on ")
		return s.fact(FactListening, string(firstField(v)))
	case bytes.HasPrefix(msg, []byte("done request: ")):
		return s.llamaAccess(msg[len("done request: "):])
	case bytes.HasPrefix(msg, []byte("purging slot ")):
		return s.kvEvict(msg)
	case fn == "send_error":
		e := msg
		if v, ok := after(msg, "error: "); ok {
			e = v
		}
		st := s.classifyLlama(LevelError, e)
		if st != stEvent {
			return s.problem(KindError, ProblemOther, string(e))
		}
		return st
	}
	if contains(msg, "failed to find free space in the KV cache") || contains(msg, "failed to find a memory slot") {
		return s.kvFull(-1, -1, msg)
	}
	return s.classifyLlama(lvl, msg)
}

// llamaPlain reads lines that are neither slot nor srv lines: start-up
// output of libllama, format A, the timing block, and errors.
func (s *Scanner) llamaPlain(lvl Level, b []byte) status {
	msg := trimSpace(b)
	if s.timingOpen {
		if timingPhase(msg) != "" {
			st := s.timing(s.timingSlot, s.timingTask, msg)
			if s.ev.Timing.Phase == TimingTotal {
				s.timingOpen = false
			}
			return st
		}
		s.timingOpen = false
	}
	if rest, ok := afterPrefix(msg, "print_timings:"); ok {
		return s.timing(-1, -1, trimSpace(rest))
	}
	if rest, ok := afterPrefix(msg, "build: "); ok {
		return s.llamaBuild(rest)
	}
	if rest, ok := afterPrefix(msg, "version: "); ok {
		return s.llamaBuild(rest)
	}
	if rest, ok := afterPrefix(msg, "slot "); ok {
		// format A: "slot 0 is processing [task id: 205]", "slot 0 released (1634 tokens in cache)",
		// "slot 0: context shift - n_keep = 2224, n_left = 3894, n_discard = 1947"
		if id, r, ok2 := parseIntPrefix(rest); ok2 {
			switch {
			case bytes.HasPrefix(r, []byte(" is processing")):
				task := -1
				if v, ok3 := after(r, "task id: "); ok3 {
					task, _, _ = parseIntPrefix(v)
				}
				return s.slotEvent(SlotLaunch, id, task)
			case bytes.HasPrefix(r, []byte(" released")):
				st := s.slotEvent(SlotRelease, id, -1)
				if n, _, ok3 := intAfter(r, "("); ok3 {
					s.ev.Slot.NPast = n
				}
				return st
			case bytes.HasPrefix(r, []byte(": context shift")):
				return s.contextShift(id, -1, r)
			}
		}
		return stIgnored
	}
	if bytes.HasPrefix(msg, []byte("-> Slot ")) {
		if v, ok := after(msg, "max context: "); ok {
			return s.intFact(FactSlotContext, v)
		}
	}
	if rest, ok := afterPrefix(msg, "main: "); ok {
		switch {
		case bytes.HasPrefix(rest, []byte("model loaded")):
			return s.fact(FactListening, "model loaded")
		case bytes.Contains(rest, []byte("server is listening on ")):
			v, _ := after(rest, "listening on ")
			return s.fact(FactListening, string(firstField(v)))
		case bytes.HasPrefix(rest, []byte("HTTP server is listening")):
			// "main: HTTP server is listening, hostname: 0.0.0.0, port: 8080, http threads: 127"
			h, _ := after(rest, "hostname: ")
			p, _ := after(rest, "port: ")
			return s.fact(FactListening, strings.TrimSuffix(string(firstField(h)), ",")+":"+strings.TrimSuffix(string(firstField(p)), ","))
		}
		return stIgnored
	}
	if rest, ok := afterPrefix(msg, "llama server listening at "); ok {
		return s.fact(FactListening, string(firstField(rest)))
	}
	if rest, ok := afterPrefix(msg, "request: "); ok {
		// early format C access line: "request: POST /chat/completions 127.0.0.1 200"
		return s.llamaAccess(rest)
	}
	if colon := index(msg, ": "); colon > 0 && colon < 40 {
		fn := bstr(trimSpace(msg[:colon]))
		val := trimSpace(msg[colon+2:])
		switch fn {
		case "llama_new_context_with_model", "llama_context", "llama_init_from_model":
			if bytes.HasPrefix(val, []byte("n_ctx_per_seq")) {
				if n, ok2 := eqInt(val, "n_ctx_per_seq"); ok2 {
					return s.fact(FactSlotContext, strconv.Itoa(n))
				}
			}
			if _, ok := afterPrefix(val, "n_ctx "); ok {
				if n, ok2 := eqInt(val, "n_ctx"); ok2 {
					return s.fact(FactContextSize, strconv.Itoa(n))
				}
			}
			if v, ok := afterPrefix(val, "KV self size"); ok {
				return s.llamaKVSize(v)
			}
		case "llama_model_loader":
			if v, ok := afterPrefix(val, "loaded meta data"); ok {
				if path, ok2 := after(v, " from "); ok2 {
					if i := index(path, " (version"); i > 0 {
						path = path[:i]
					}
					return s.fact(FactModel, string(trimSpace(path)))
				}
			}
			return stIgnored
		case "llama_kv_cache":
			if v, ok := afterPrefix(val, "size"); ok {
				return s.llamaKVSize(v)
			}
		case "print_info", "llm_load_print_meta":
			if v, ok := afterPrefix(val, "file type"); ok {
				if q, ok2 := after(v, "= "); ok2 {
					return s.fact(FactQuantization, string(trimSpace(q)))
				}
			}
			if v, ok := afterPrefix(val, "model ftype"); ok {
				if q, ok2 := after(v, "= "); ok2 {
					return s.fact(FactQuantization, string(trimSpace(q)))
				}
			}
			return stIgnored
		case "update_slots":
			if contains(val, "failed to find free space in the KV cache") || contains(val, "failed to decode the batch") {
				return s.kvFull(-1, -1, val)
			}
		case "decode", "llama_decode":
			if contains(val, "failed to find") {
				return s.kvFull(-1, -1, val)
			}
		}
	}
	if contains(msg, "failed to find free space in the KV cache") || contains(msg, "failed to find a memory slot") {
		return s.kvFull(-1, -1, msg)
	}
	return s.classifyLlama(lvl, msg)
}

// llamaKVSize reads " = 576.00 MiB ( 4096 cells, ...)" and
// "  =  160.00 MiB, K (f16): 80.00 MiB, V (f16): 80.00 MiB".
func (s *Scanner) llamaKVSize(v []byte) status {
	eq := bytes.IndexByte(v, '=')
	if eq < 0 {
		return stIgnored
	}
	v = v[eq+1:]
	g, ok := sizeGiB(v)
	if !ok {
		return s.bad("llama.cpp KV cache size: expected a size, found %q", clip(v))
	}
	s.addFact(FactKVCacheGiB, fmtFloat(round6(g)))
	if c, ok2 := after(v, "("); ok2 {
		if n, r, ok3 := parseIntPrefix(c); ok3 && bytes.HasPrefix(trimSpace(r), []byte("cells")) {
			s.addFact(FactKVCacheTokens, strconv.Itoa(n))
		}
	}
	if k, ok2 := after(v, "K ("); ok2 {
		if i := bytes.IndexByte(k, ')'); i > 0 {
			s.addFact(FactKVCacheDtype, string(k[:i]))
		}
	}
	s.ev.Kind = KindConfig
	return stEvent
}

// llamaBuild reads "build: 4589 (eb7cf15a) with cc ... for x86_64-linux-gnu"
// and "version: 3579 (fc4ca27b)".
func (s *Scanner) llamaBuild(rest []byte) status {
	n, r, ok := parseIntPrefix(rest)
	if !ok {
		return stIgnored
	}
	v := "b" + strconv.Itoa(n)
	r = trimSpace(r)
	if len(r) > 2 && r[0] == '(' {
		if i := bytes.IndexByte(r, ')'); i > 1 {
			v += " (" + string(r[1:i]) + ")"
		}
	}
	return s.fact(FactVersion, v)
}

// llamaAccess reads "POST /v1/chat/completions 127.0.0.1 200".
func (s *Scanner) llamaAccess(b []byte) status {
	f := bytes.Fields(b)
	if len(f) < 3 {
		return stIgnored
	}
	code, ok := atoi(f[len(f)-1])
	if !ok {
		return stIgnored
	}
	return s.httpEvent(f[0], f[1], code)
}

// timingPhase names the timing line at the start of msg.
func timingPhase(msg []byte) string {
	switch {
	case bytes.HasPrefix(msg, []byte("prompt eval time")):
		return TimingPrompt
	case bytes.HasPrefix(msg, []byte("generation eval time")), bytes.HasPrefix(msg, []byte("eval time")):
		return TimingEval
	case bytes.HasPrefix(msg, []byte("total time")):
		return TimingTotal
	}
	return ""
}

// timing reads "prompt eval time =  5093.47 ms /  1360 tokens (  3.75 ms
// per token,   267.01 tokens per second)"; "eval time" lines count "runs"
// in older releases; "total time" may lack the token count.
func (s *Scanner) timing(slot, task int, msg []byte) status {
	phase := timingPhase(msg)
	if phase == "" {
		return stIgnored
	}
	eq := bytes.IndexByte(msg, '=')
	if eq < 0 {
		return s.bad("llama.cpp timing: expected \"= N ms\", found %q", clip(msg))
	}
	ms, r, ok := parseFloatPrefix(msg[eq+1:])
	if !ok {
		return s.bad("llama.cpp timing: expected milliseconds, found %q", clip(msg[eq+1:]))
	}
	t := &s.ev.Timing
	*t = Timing{Slot: slot, Task: task, Phase: phase, MS: ms, Tokens: -1}
	if n, _, ok2 := intAfter(r, "/"); ok2 {
		t.Tokens = n
	}
	if v, ok2 := after(r, "("); ok2 {
		if x, _, ok3 := parseFloatPrefix(v); ok3 {
			t.MSPerToken = x
		}
		if x, _, ok3 := floatAfter(v, ","); ok3 {
			t.TokensPerS = x
		}
	}
	s.ev.Kind = KindTiming
	return stEvent
}

func (s *Scanner) slotEvent(action string, id, task int) status {
	s.ev.Kind = KindSlot
	s.ev.Slot = Slot{Action: action, ID: id, Task: task, PromptTokens: -1, NCtxSlot: -1, NPast: -1}
	return stEvent
}

// contextShift reads "... n_keep = 0, n_left = 255, n_discard = 127".
func (s *Scanner) contextShift(slot, task int, msg []byte) status {
	keep, ok1 := eqInt(msg, "n_keep")
	left, ok2 := eqInt(msg, "n_left")
	disc, ok3 := eqInt(msg, "n_discard")
	if !ok1 || !ok2 || !ok3 {
		return s.bad("llama.cpp context shift: expected n_keep, n_left and n_discard, found %q", clip(msg))
	}
	s.ev.Kind = KindContextShift
	s.ev.ContextShift = ContextShift{Slot: slot, Task: task, NKeep: keep, NLeft: left, NDiscard: disc}
	return stEvent
}

func (s *Scanner) kvFull(slot, task int, msg []byte) status {
	if s.evictedAt > 0 && s.line-s.evictedAt <= 2 && contains(msg, "retrying") {
		// the server's retry after it dropped an idle slot's prompt
		s.evictedAt = 0
		return stIgnored
	}
	s.ev.Kind = KindKVFull
	s.ev.Problem = Problem{Class: ProblemKVFull, Message: string(msg)}
	s.ev.Slot = Slot{ID: slot, Task: task, PromptTokens: -1, NCtxSlot: -1, NPast: -1}
	return stEvent
}

// kvEvict reads "purging slot 3 with 544 tokens": with --kv-unified,
// llama-server makes room for a batch that found no free cells by
// dropping an idle slot's cached prompt before it shrinks the batch
// (try_clear_idle_slots in tools/server/server-context.cpp).
func (s *Scanner) kvEvict(msg []byte) status {
	id, rest, ok := intAfter(msg, "purging slot ")
	n, _, ok2 := intAfter(rest, "with ")
	if !ok || !ok2 {
		return s.bad("llama.cpp purge: expected \"purging slot N with N tokens\", found %q", clip(msg))
	}
	s.ev.Kind = KindKVEvict
	s.ev.Slot = Slot{ID: id, Task: -1, PromptTokens: -1, NCtxSlot: -1, NPast: n}
	s.evictedAt = s.line
	return stEvent
}

// classifyLlama classifies llama.cpp error text; "E" lines and known error
// phrases become errors.
func (s *Scanner) classifyLlama(lvl Level, msg []byte) status {
	if lvl == LevelUnknown && (contains(msg, "error") || contains(msg, "failed") || contains(msg, "out of memory")) {
		lvl = LevelError
	}
	st := s.classify(lvl, msg)
	if st == stUnknown {
		return stIgnored
	}
	return st
}

// llamaField is one value of a format B record.
type llamaFields map[string]string

func (f llamaFields) int(name string) (int, bool) {
	v, ok := f[name]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(strings.Trim(v, `"`))
	return n, err == nil
}

// levelWord is the level a line's leading word names, as llama.cpp's text
// records and the Node engines write it: INFO, WARN, ERR or ERROR, VERB or
// DEBUG; LevelUnknown for any other word.
func levelWord(w []byte) Level {
	switch bstr(w) {
	case "INFO":
		return LevelInfo
	case "WARN":
		return LevelWarning
	case "ERR", "ERROR":
		return LevelError
	case "VERB", "DEBUG":
		return LevelDebug
	}
	return LevelUnknown
}

// llamaTextRecord reads format B text records:
// `INFO [   launch_slot_with_task] slot is processing task | tid="1" timestamp=1751529199 id_slot=1 id_task=7`.
func llamaTextRecord(b []byte) (Level, string, []byte, llamaFields, bool) {
	sp := index(b, " [")
	if sp < 0 || sp > 8 {
		return LevelUnknown, "", nil, nil, false
	}
	lvl := levelWord(b[:sp])
	if lvl == LevelUnknown {
		return LevelUnknown, "", nil, nil, false
	}
	rest := b[sp+2:]
	end := index(rest, "] ")
	if end < 0 {
		return LevelUnknown, "", nil, nil, false
	}
	fn := strings.TrimSpace(string(rest[:end]))
	body := rest[end+2:]
	fields := llamaFields{}
	msg := body
	if bar := index(body, " | "); bar >= 0 {
		msg = body[:bar]
		for _, kv := range splitFieldsQuoted(body[bar+3:]) {
			if eq := strings.IndexByte(kv, '='); eq > 0 {
				fields[kv[:eq]] = kv[eq+1:]
			}
		}
	}
	return lvl, fn, trimSpace(msg), fields, true
}

// splitFieldsQuoted splits "a=1 b=\"x y\" c=2" at spaces outside quotes.
func splitFieldsQuoted(b []byte) []string {
	return appendFieldsQuoted(nil, string(b))
}

// appendFieldsQuoted appends the fields of line, as splitFieldsQuoted
// splits them, to out. The fields are parts of line: converting the line
// once costs one allocation, not one per field.
func appendFieldsQuoted(out []string, line string) []string {
	start, inQ := 0, false
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case '\\':
			if inQ {
				i++
			}
		case '"':
			inQ = !inQ
		case ' ':
			if !inQ {
				if i > start {
					out = append(out, line[start:i])
				}
				start = i + 1
			}
		}
	}
	if start < len(line) {
		out = append(out, line[start:])
	}
	return out
}

// llamaJSON reads format B JSON records.
func (s *Scanner) llamaJSON(b []byte) status {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return s.bad("llama.cpp JSON log record: %v", err)
	}
	fields := llamaFields{}
	for k, v := range raw {
		var str string
		if len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &str) == nil {
			fields[k] = str
		} else {
			fields[k] = string(v)
		}
	}
	msg := fields["msg"]
	if msg == "" {
		msg = fields["message"]
	}
	fn := fields["function"]
	if fn == "" && msg == "" {
		return stUnknown
	}
	lvl := LevelInfo
	switch fields["level"] {
	case "WARN", "WARNING":
		lvl = LevelWarning
	case "ERR", "ERROR":
		lvl = LevelError
	case "VERB", "DEBUG":
		lvl = LevelDebug
	}
	s.ev.Level = lvl
	return s.llamaRecord(lvl, fn, []byte(msg), fields)
}

// llamaRecord handles format B records, JSON or text.
func (s *Scanner) llamaRecord(lvl Level, fn string, msg []byte, f llamaFields) status {
	if ts, ok := f.int("timestamp"); ok && ts > 1e9 {
		s.lineStamp = stamp{q: TimeComplete, t: time.Unix(int64(ts), 0).UTC()}
	}
	slot, okSlot := f.int("id_slot")
	if !okSlot {
		slot, okSlot = f.int("slot_id")
	}
	if !okSlot {
		slot = -1
	}
	task, okTask := f.int("id_task")
	if !okTask {
		task, okTask = f.int("task_id")
	}
	if !okTask {
		task = -1
	}
	m := bstr(msg)
	switch {
	case m == "build info":
		if n, ok := f.int("build"); ok {
			v := "b" + strconv.Itoa(n)
			if c := strings.Trim(f["commit"], `"`); c != "" {
				v += " (" + c + ")"
			}
			return s.fact(FactVersion, v)
		}
	case m == "slot is processing task":
		return s.slotEvent(SlotLaunch, slot, task)
	case m == "slot data":
		// Ollama's and 2024 llama-server's periodic slot census.
		if n, ok := f.int("n_processing_slots"); ok {
			st := s.slotEvent(SlotData, -1, task)
			s.ev.Slot.Busy = n
			return st
		}
	case m == "slot released":
		st := s.slotEvent(SlotRelease, slot, task)
		if n, ok := f.int("n_past"); ok {
			s.ev.Slot.NPast = n
		}
		s.ev.Slot.Truncated = strings.Trim(f["truncated"], `"`) == "true"
		return st
	case m == "slot context shift":
		keep, ok1 := f.int("n_keep")
		left, ok2 := f.int("n_left")
		disc, ok3 := f.int("n_discard")
		if !ok1 || !ok2 || !ok3 {
			return s.bad("llama.cpp context shift: missing n_keep, n_left or n_discard")
		}
		s.ev.Kind = KindContextShift
		s.ev.ContextShift = ContextShift{Slot: slot, Task: task, NKeep: keep, NLeft: left, NDiscard: disc}
		return stEvent
	case m == "initializing slots":
		if n, ok := f.int("n_slots"); ok {
			return s.fact(FactSlots, strconv.Itoa(n))
		}
	case m == "new slot":
		if n, ok := f.int("n_ctx_slot"); ok {
			return s.fact(FactSlotContext, strconv.Itoa(n))
		}
	case m == "model loaded":
		return s.fact(FactListening, "model loaded")
	case m == "HTTP server listening":
		return s.fact(FactListening, strings.Trim(f["hostname"], `"`)+":"+strings.Trim(f["port"], `"`))
	case m == "request" && fn == "log_server_request":
		code, ok := f.int("status")
		if !ok {
			return stIgnored
		}
		return s.httpEvent([]byte(strings.Trim(f["method"], `"`)), []byte(strings.Trim(f["path"], `"`)), code)
	case timingPhase(bytes.TrimSpace(msg)) != "":
		return s.timing(slot, task, bytes.TrimSpace(msg))
	}
	if contains(msg, "failed to find free space in the KV cache") {
		return s.kvFull(slot, task, msg)
	}
	return s.classifyLlama(lvl, msg)
}

func firstField(b []byte) []byte {
	b = trimSpace(b)
	if i := bytes.IndexByte(b, ' '); i >= 0 {
		return b[:i]
	}
	return b
}

// llamaLevel is the level of llama.cpp's one-letter log prefix (I, W, E,
// D); LevelUnknown for any other byte.
func llamaLevel(c byte) Level {
	switch c {
	case 'I':
		return LevelInfo
	case 'W':
		return LevelWarning
	case 'E':
		return LevelError
	case 'D':
		return LevelDebug
	}
	return LevelUnknown
}
