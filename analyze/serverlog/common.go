package serverlog

import (
	"bytes"
	"math/bits"
	"strconv"
)

// Helpers shared by the engine parsers. They fill s.ev and return the
// status the parser should return.

// addFact appends a fact to the current event without deciding its kind.
func (s *Scanner) addFact(key, value string) {
	s.ev.Facts = append(s.ev.Facts, Fact{Key: key, Value: value})
}

// fact makes the line a config event with one fact.
func (s *Scanner) fact(key, value string) status {
	if value == "" {
		return stIgnored
	}
	s.addFact(key, value)
	s.ev.Kind = KindConfig
	return stEvent
}

// intFact reads an integer (thousands commas allowed) at the start of b.
func (s *Scanner) intFact(key string, b []byte) status {
	n, _, ok := parseIntPrefix(b)
	if !ok {
		return s.bad("%s: expected an integer, found %q", key, clip(b))
	}
	s.addFact(key, strconv.Itoa(n))
	s.ev.Kind = KindConfig
	return stEvent
}

// sizeFact reads a memory size ("3.54GiB", "2.6419 GB", "576.00 MiB") at
// the start of b and records it in GiB.
func (s *Scanner) sizeFact(key string, b []byte) status {
	g, ok := sizeGiB(b)
	if !ok {
		return s.bad("%s: expected a size, found %q", key, clip(b))
	}
	s.addFact(key, fmtFloat(round6(g)))
	s.ev.Kind = KindConfig
	return stEvent
}

// configEvent makes the line a config event if it gave any fact;
// otherwise the line is ignored.
func (s *Scanner) configEvent() status {
	if len(s.ev.Facts) == 0 {
		return stIgnored
	}
	s.ev.Kind = KindConfig
	return stEvent
}

// addNumber adds the number at the start of b as the fact key, if b
// starts with one.
func (s *Scanner) addNumber(key string, b []byte) {
	if f, _, ok := parseFloatPrefix(b); ok {
		s.addFact(key, fmtFloat(f))
	}
}

// addGiB adds the memory size at the start of b, in GiB, as the fact key,
// if b starts with one.
func (s *Scanner) addGiB(key string, b []byte) {
	if g, ok := sizeGiB(b); ok {
		s.addFact(key, fmtFloat(g))
	}
}

// sizeGiB reads a size with its unit. Engines print binary sizes; vLLM and
// SGLang label GiB as "GB" (they divide by 2^30), so GB is read as GiB.
func sizeGiB(b []byte) (float64, bool) {
	v, rest, ok := parseFloatPrefix(b)
	if !ok {
		return 0, false
	}
	rest = trimSpace(rest)
	switch {
	case bytes.HasPrefix(rest, []byte("GiB")), bytes.HasPrefix(rest, []byte("GB")):
		return v, true
	case bytes.HasPrefix(rest, []byte("MiB")), bytes.HasPrefix(rest, []byte("MB")):
		return v / 1024, true
	case bytes.HasPrefix(rest, []byte("KiB")), bytes.HasPrefix(rest, []byte("KB")):
		return v / (1024 * 1024), true
	case bytes.HasPrefix(rest, []byte("TiB")), bytes.HasPrefix(rest, []byte("TB")):
		return v * 1024, true
	}
	return 0, false
}

func round6(v float64) float64 {
	f, err := strconv.ParseFloat(strconv.FormatFloat(v, 'f', 6, 64), 64)
	if err != nil {
		return v
	}
	return f
}

// problem makes the line an error or warning event.
func (s *Scanner) problem(kind Kind, class, msg string) status {
	s.ev.Kind = kind
	s.ev.Problem = Problem{Class: class, Message: msg}
	return stEvent
}

// request makes the line a request lifecycle event.
func (s *Scanner) request(action string, id []byte) status {
	s.ev.Kind = KindRequest
	s.ev.Request = Request{Action: action, ID: string(id), Status: -1, PromptTokens: -1, CompletionTokens: -1, MaxTokens: -1, TTFTMS: -1, E2EMS: -1, Running: -1, Waiting: -1}
	return stEvent
}

// httpEvent records an access-log line.
func (s *Scanner) httpEvent(method, path []byte, code int) status {
	s.request(RequestHTTP, nil)
	s.ev.Request.Method = string(method)
	s.ev.Request.Path = string(path)
	s.ev.Request.Status = code
	return stEvent
}

// problemMarker is one phrase that classifies error text. Fatal marks
// errors the engine does not survive (when the line is an error: a warning
// that mentions memory is not a crash); error marks phrases that are errors
// whatever the level printed with them (vLLM logs the dump of a failed
// execution at INFO).
type problemMarker struct {
	class, marker string
	fatal, error  bool
}

// problemMarkers classify error text. The first match wins, so root causes
// (out of memory, KV cache too small) come before their consequences (the
// engine died).
var problemMarkers = [...]problemMarker{
	{ProblemKVInsufficient, "larger than the maximum number of tokens that can be stored in KV cache", true, false},
	{ProblemKVInsufficient, "larger than the available KV cache memory", true, false},
	{ProblemKVInsufficient, "No available memory for the cache blocks", true, false},
	{ProblemKVInsufficient, "To serve at least one request with the model", true, false}, // "model's" and "models's"
	{ProblemCUDAOOM, "out of memory", true, false},
	{ProblemCUDAOOM, "OutOfMemoryError", true, false},
	{ProblemContextExceeded, "exceeds the available context size", false, false},
	{ProblemContextExceeded, "Context size has been exceeded", false, false},
	{ProblemFatalSignal, "Fatal Python error", true, true},
	{ProblemFatalSignal, "SIGSEGV", true, true},
	{ProblemFatalSignal, "Segmentation fault", true, true},
	{ProblemFatalSignal, "GGML_ASSERT", true, true},
	{ProblemFatalSignal, "fatal signal", true, true},
	{ProblemStartFailed, "EngineCore failed to start", true, true},
	{ProblemStartFailed, "Engine core initialization failed", true, true},
	{ProblemStartFailed, "Engine process failed to start", true, true},
	{ProblemEngineDead, "EngineDeadError", true, false},
	{ProblemEngineDead, "is already dead", true, false},
	{ProblemEngineDead, ") died", true, false},
	{ProblemEngineDead, "died unexpectedly", true, false},
	{ProblemEngineDead, "Engine loop has died", true, false},
	{ProblemEngineDead, "Engine loop is not running", true, false},
	{ProblemEngineDead, "EngineCore encountered", true, false},
	{ProblemEngineDead, "EngineCore hit an exception", true, true},
	{ProblemEngineDead, "Engine background task failed", true, true},
	{ProblemEngineDead, "Background loop has errored", true, false},
	// llama.cpp's server inside Ollama (2024): "unexpected error in llama
	// server update_slots - exiting main loop", after which it served
	// nothing (ollama/ollama#2048).
	{ProblemEngineDead, "- exiting main loop", true, true},
	{ProblemEngineDead, "Task finished unexpectedly", true, false},
	{ProblemEngineDead, "Scheduler hit an exception", true, true},
	{ProblemEngineDead, "Received sigquit from a child", true, true},
	{ProblemEngineDead, "input of failed execution", true, true},
	{ProblemTimeout, "Engine iteration timed out", true, true},
	{ProblemTimeout, "Watchdog timeout", true, true},
	{ProblemTimeout, "should_stop condition", false, false}, // llama-server gave up waiting for a client
	{ProblemTimeout, "TimeoutError", true, false},
	{ProblemTimeout, "imed out", false, false},
	{ProblemTimeout, "Timeout", false, false},
	{ProblemAbort, "Aborted request", false, false},
	{ProblemAbort, "cancel task", false, false}, // llama-server: "stop: cancel task, id_task = 2042"
	{ProblemPromptCache, "making room for prompt cache entry", false, false},
}

// markerPairs has a bit for each two-byte opening of a problem marker and
// markerFirst, per first byte, the markers that open with it: findMarker
// looks at each position of a line once instead of searching the line once
// per marker.
var (
	markerPairs [1 << 16 / 64]uint64
	markerFirst [256]uint64
)

func init() {
	if len(problemMarkers) > 64 {
		panic("serverlog: more than 64 problem markers")
	}
	for i, m := range problemMarkers {
		p := uint16(m.marker[0])<<8 | uint16(m.marker[1])
		markerPairs[p>>6] |= 1 << (p & 63)
		markerFirst[m.marker[0]] |= 1 << i
	}
}

// findMarker gives the index in problemMarkers of the first marker (in
// table order) that b contains, or -1.
func findMarker(b []byte) int {
	best := -1
	for i := 0; i+1 < len(b); i++ {
		p := uint16(b[i])<<8 | uint16(b[i+1])
		if markerPairs[p>>6]&(1<<(p&63)) == 0 {
			continue
		}
		for set := markerFirst[b[i]]; set != 0; set &= set - 1 {
			k := bits.TrailingZeros64(set)
			if (best < 0 || k < best) && len(b)-i >= len(problemMarkers[k].marker) && bstr(b[i:i+len(problemMarkers[k].marker)]) == problemMarkers[k].marker {
				best = k
			}
		}
		if best == 0 {
			break
		}
	}
	return best
}

// classify turns warning, error and headerless lines into problems.
// Traceback frames and code lines are not counted as errors of their own:
// the exception line at the end of the traceback is. Two kinds of frame
// line do say something: a "raise ..." code line (the innermost frame,
// the exception being raised, which a cut copy may show without the
// exception line) and the program's entry point (an exception that
// reached the top of the server process).
func (s *Scanner) classify(lvl Level, msg []byte) status {
	msg = trimSpaceRight(msg)
	if len(msg) == 0 {
		return stIgnored
	}
	frame := isTracebackFrame(msg)
	body := msg
	if rest, ok := stripRankPrefix(body); ok {
		if s.ev.Rank == "" {
			s.ev.Rank = s.intern(body[1:bytes.IndexByte(body, ']')])
		}
		body = rest
	}
	if frame {
		code := trimSpace(body)
		if bytes.HasPrefix(code, []byte("raise ")) {
			if i := findMarker(code); i >= 0 && problemMarkers[i].fatal {
				return s.problemAt(KindError, i, code)
			}
		}
		if !s.tbTop && (isEntryFrame(code) || (lvl >= LevelError && s.engineProc)) {
			// An exception at the program's entry point, or a traceback an
			// engine-core or worker process logs as an ERROR: the process
			// that runs the model failed.
			s.tbTop = true
			return s.fatal(ProblemCrash, string(code))
		}
	} else {
		if !bytes.HasPrefix(body, []byte("Traceback")) {
			s.tbTop = false
		}
		if c := wholeLineSignal(body); c != "" {
			return s.fatal(c, string(body))
		}
		if i := findMarker(body); i >= 0 {
			m := problemMarkers[i]
			kind := KindError
			if (lvl == LevelWarning || lvl == LevelInfo || lvl == LevelDebug) && !m.error {
				kind = KindWarning
				if m.class == ProblemAbort {
					kind = KindError
				}
			}
			if kind == KindWarning && m.class == ProblemTimeout {
				// warnings about timeout settings are not timeouts
				return stIgnored
			}
			return s.problemAt(kind, i, trimSpace(body))
		}
	}
	switch {
	case lvl >= LevelError && !frame:
		return s.problem(KindError, ProblemOther, string(trimSpace(body)))
	case lvl == LevelUnknown:
		if !frame && isExceptionLine(body) {
			return s.problem(KindError, ProblemOther, string(trimSpace(body)))
		}
		return stUnknown
	}
	return stIgnored
}

// problemAt makes the line a problem of marker i's class.
func (s *Scanner) problemAt(kind Kind, i int, msg []byte) status {
	m := problemMarkers[i]
	st := s.problem(kind, m.class, string(msg))
	s.ev.Problem.Fatal = m.fatal && kind == KindError
	return st
}

// fatal makes the line a fatal error of the given class.
func (s *Scanner) fatal(class, msg string) status {
	st := s.problem(KindError, class, msg)
	s.ev.Problem.Fatal = true
	return st
}

// isEntryFrame matches the frame of a traceback at a program's entry
// point: an exception nobody caught.
func isEntryFrame(code []byte) bool {
	return bytes.HasPrefix(code, []byte("File ")) &&
		(bytes.HasSuffix(code, []byte(", in <module>")) || contains(code, "asyncio/runners.py") || contains(code, "run_until_complete"))
}

// wholeLineSignal recognises the lines a shell or the C runtime prints when
// a process dies: "Aborted", "Killed", "Segmentation fault (core dumped)".
func wholeLineSignal(b []byte) string {
	switch bstr(b) {
	case "Aborted", "Aborted (core dumped)", "Killed", "Segmentation fault", "Segmentation fault (core dumped)":
		return ProblemFatalSignal
	}
	return ""
}

// isExceptionLine matches the last line of a Python traceback
// ("RuntimeError: ...", "torch.OutOfMemoryError: ...") and "LLVM ERROR: ...".
func isExceptionLine(b []byte) bool {
	colon := index(b, ": ")
	if colon <= 0 || colon > 96 {
		return false
	}
	name := b[:colon]
	if bstr(name) == "LLVM ERROR" {
		return true
	}
	if bytes.IndexByte(name, ' ') >= 0 {
		return false
	}
	return bytes.HasSuffix(name, []byte("Error")) || bytes.HasSuffix(name, []byte("Exception"))
}

// isTracebackFrame reports lines of a Python traceback other than the
// final exception line.
func isTracebackFrame(b []byte) bool {
	if rest, ok := stripRankPrefix(b); ok {
		b = rest
	}
	if len(b) == 0 {
		return true
	}
	switch b[0] {
	case ' ', '\t', '^', '~', '|', '+':
		return true
	}
	return bytes.HasPrefix(b, []byte("Traceback")) || bytes.HasPrefix(b, []byte("File \"")) ||
		bytes.HasPrefix(b, []byte("During handling")) || bytes.HasPrefix(b, []byte("The above exception"))
}

// stripRankPrefix removes torch's "[rank0]: " prefix.
func stripRankPrefix(b []byte) ([]byte, bool) {
	if len(b) > 7 && bstr(b[:5]) == "[rank" {
		if i := index(b[:min(len(b), 24)], "]: "); i > 0 {
			return b[i+3:], true
		}
	}
	return b, false
}

func trimSpaceRight(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}
