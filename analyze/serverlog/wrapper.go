package serverlog

import (
	"bytes"
	"encoding/json"
	"time"
	"unicode/utf8"
)

// stamp is a time as printed on a line, before the year and zone that the
// line may lack are supplied from Options.
type stamp struct {
	q                          TimeQuality // TimeNone when no stamp was read
	t                          time.Time   // TimeComplete
	year, mon, day, h, m, s, n int         // TimeNoZone (year set) and TimeNoYear
	elapsed                    time.Duration
}

// better reports whether a is more complete than b; a tie goes to b.
func (a stamp) better(b stamp) bool {
	rank := func(q TimeQuality) int {
		switch q {
		case TimeComplete:
			return 4
		case TimeNoZone:
			return 3
		case TimeNoYear:
			return 2
		case TimeRelative, TimeClock:
			return 1
		}
		return 0
	}
	return rank(a.q) > rank(b.q)
}

// Wrapper kinds, a bit set of what unwrap removed.
const (
	wrapDockerJSON = 1 << iota // {"log":"...","stream":"stderr","time":"..."}
	wrapISO                    // kubectl logs --timestamps, docker logs -t: "2024-01-02T03:04:05.123Z msg"
	wrapCRI                    // containerd/CRI-O: "2024-...Z stderr F msg"
	wrapJournald               // journald short / short-iso: "... host ident[pid]: msg"
	wrapBracketISO             // CI prefixes: "[2025-12-13T19:54:35Z] msg"
	wrapCompose                // docker compose: "service  | msg"
	wrapANSI                   // colour codes removed
	wrapCR                     // progress-bar carriage returns removed
	wrapPyLogging              // a Python logging layout around the message: "2024-12-20 15:18:19 - vllm.engine.metrics - INFO - msg"
	wrapGutter                 // the gutter of a CI web page copy: "  | msg"
)

// unwrapper removes the wrappers that deployments put around engine log
// lines. It keeps scratch buffers so that unwrapping does not allocate.
type unwrapper struct {
	jsonBuf []byte
	ansiBuf []byte
	// level and logger are what a Python logging layout printed around the
	// message (LevelUnknown and nil when the line had none).
	level  Level
	logger []byte
}

// unwrap returns the engine's own message inside line, the best time stamp
// a wrapper carried, and which wrappers were removed. The returned message
// may point into the unwrapper's scratch space; it is valid until the next
// call.
func (u *unwrapper) unwrap(line []byte) (msg []byte, st stamp, kinds int) {
	msg = line
	u.level, u.logger = LevelUnknown, nil
	for layer := 0; layer < 4 && len(msg) > 0; layer++ {
		var inner []byte
		var ist stamp
		var k int
		switch c := msg[0]; {
		case c == '{':
			inner, ist, k = u.dockerJSON(msg)
		case isDigit(c):
			inner, ist, k = isoPrefix(msg)
			if k == 0 {
				inner, ist, k = u.pyLogging(msg)
			}
		case c == '[':
			inner, ist, k = bracketISO(msg)
		case c >= 'A' && c <= 'S':
			inner, ist, k = journaldShort(msg)
		case c == ' ':
			inner, k = gutterPrefix(msg)
		}
		if k == 0 {
			inner, k = composePrefix(msg)
		}
		if k == 0 {
			break
		}
		kinds |= k
		if ist.better(st) || st.q == TimeNone {
			if ist.q != TimeNone {
				st = ist
			}
		}
		msg = inner
	}
	if bytes.IndexByte(msg, '\r') >= 0 { // IndexByte is vectorised; LastIndexByte is not
		i := bytes.LastIndexByte(msg, '\r')
		// A progress bar redraws itself with carriage returns; the log
		// record, if any, is what was written after the last one.
		if i == len(msg)-1 {
			msg = msg[:i]
		} else {
			msg = msg[i+1:]
		}
		kinds |= wrapCR
	}
	if bytes.IndexByte(msg, 0x1b) >= 0 || bytes.Contains(msg, lostEscCSI) {
		msg = u.stripANSI(msg)
		kinds |= wrapANSI
	}
	return msg, st, kinds
}

// lostEscCSI is a colour code whose escape byte became U+FFFD, as it does
// in a log copied from a web page or through a tool that replaced the
// byte ("\uFFFD[34m2.53.771.328\uFFFD[0m \uFFFD[32mI ..." in
// ggml-org/llama.cpp#23210).
var lostEscCSI = []byte("\uFFFD[")

// dockerJSON unwraps Docker's json-file format (also what Kubernetes wrote
// before CRI): {"log":"INFO ...\n","stream":"stderr","time":"2024-...Z"}.
func (u *unwrapper) dockerJSON(b []byte) ([]byte, stamp, int) {
	rest, ok := afterPrefix(b, `{"log":"`)
	if ok {
		var n int
		u.jsonBuf, n, ok = appendJSONString(u.jsonBuf[:0], rest)
		if ok {
			log := u.jsonBuf
			var st stamp
			if tv, found := after(rest[n:], `"time":"`); found {
				if t, _, tok := isoTime(tv); tok {
					st = stamp{q: TimeComplete, t: t}
				}
			}
			return trimNewline(log), st, wrapDockerJSON
		}
	}
	if !contains(b, `"log":`) {
		return nil, stamp{}, 0
	}
	// Keys in another order or unusual escapes: use the real decoder.
	var rec struct {
		Log  *string `json:"log"`
		Time string  `json:"time"`
	}
	if json.Unmarshal(b, &rec) != nil || rec.Log == nil {
		return nil, stamp{}, 0
	}
	u.jsonBuf = append(u.jsonBuf[:0], *rec.Log...)
	var st stamp
	if t, _, tok := isoTime([]byte(rec.Time)); tok {
		st = stamp{q: TimeComplete, t: t}
	}
	return trimNewline(u.jsonBuf), st, wrapDockerJSON
}

func trimNewline(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// appendJSONString decodes the JSON string body at the start of b (after
// the opening quote) into dst. It returns the bytes consumed including the
// closing quote.
func appendJSONString(dst, b []byte) ([]byte, int, bool) {
	i := 0
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			return dst, i + 1, true
		case c == '\\':
			if i+1 >= len(b) {
				return dst, 0, false
			}
			e := b[i+1]
			i += 2
			switch e {
			case '"', '\\', '/':
				dst = append(dst, e)
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r, ok := hex4(b, i)
				if !ok {
					return dst, 0, false
				}
				i += 4
				if r >= 0xD800 && r < 0xDC00 {
					// surrogate pair
					if i+6 <= len(b) && b[i] == '\\' && b[i+1] == 'u' {
						if r2, ok2 := hex4(b, i+2); ok2 && r2 >= 0xDC00 && r2 < 0xE000 {
							r = 0x10000 + (r-0xD800)<<10 + (r2 - 0xDC00)
							i += 6
						} else {
							r = utf8.RuneError
						}
					} else {
						r = utf8.RuneError
					}
				}
				dst = utf8.AppendRune(dst, r)
			default:
				return dst, 0, false
			}
		default:
			j := i
			for j < len(b) && b[j] != '"' && b[j] != '\\' {
				j++
			}
			dst = append(dst, b[i:j]...)
			i = j
		}
	}
	return dst, 0, false
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c-'a') + 10
		case c >= 'A' && c <= 'F':
			r |= rune(c-'A') + 10
		default:
			return 0, false
		}
	}
	return r, true
}

// isoPrefix unwraps a line that starts with a zoned ISO time and a space:
// kubectl logs --timestamps and docker logs -t, CRI log files ("... stderr
// F msg") and journald short-iso ("... host ident[pid]: msg").
func isoPrefix(b []byte) ([]byte, stamp, int) {
	t, n, ok := isoTime(b)
	if !ok || n >= len(b) || b[n] != ' ' {
		return nil, stamp{}, 0
	}
	st := stamp{q: TimeComplete, t: t}
	rest := b[n+1:]
	if len(rest) >= 9 && (bstr(rest[:7]) == "stdout " || bstr(rest[:7]) == "stderr ") && (rest[7] == 'F' || rest[7] == 'P') && rest[8] == ' ' {
		return rest[9:], st, wrapCRI
	}
	if msg, ok := journaldTail(rest); ok {
		return msg, st, wrapJournald
	}
	return rest, st, wrapISO
}

// journaldTail strips "host ident[pid]: " from the start of b. The [pid]
// is required: without it a llama.cpp line such as
// "slot launch_slot_: id 0 ..." would look like "host ident: msg".
func journaldTail(b []byte) ([]byte, bool) {
	sp := bytes.IndexByte(b, ' ')
	if sp <= 0 || sp > 64 {
		return nil, false
	}
	id := b[sp+1:]
	end := bytes.Index(id, []byte("]: "))
	if end <= 0 || end > 96 {
		return nil, false
	}
	open := bytes.LastIndexByte(id[:end], '[')
	if open <= 0 || bytes.IndexByte(id[:open], ' ') >= 0 {
		return nil, false
	}
	if _, ok := atoi(id[open+1 : end]); !ok {
		return nil, false
	}
	return id[end+3:], true
}

// journaldShort unwraps journalctl's default output: "Dec 02 12:10:21 host
// ident[pid]: msg" (short) or with ".micros" (short-precise). The year is
// not printed.
func journaldShort(b []byte) ([]byte, stamp, int) {
	mon, day, h, m, s, ns, n, ok := syslogTime(b)
	if !ok || n >= len(b) || b[n] != ' ' {
		return nil, stamp{}, 0
	}
	msg, ok := journaldTail(b[n+1:])
	if !ok {
		return nil, stamp{}, 0
	}
	return msg, stamp{q: TimeNoYear, mon: mon, day: day, h: h, m: m, s: s, n: ns}, wrapJournald
}

// bracketISO unwraps CI log prefixes such as Buildkite's
// "[2025-12-13T19:54:35Z] msg". SGLang's own "[2025-12-13 19:54:35]" has a
// space instead of the T and no zone, and is left for the SGLang parser.
func bracketISO(b []byte) ([]byte, stamp, int) {
	t, n, ok := isoTime(b[1:])
	if !ok || 1+n+1 >= len(b) || b[1+n] != ']' || b[2+n] != ' ' {
		return nil, stamp{}, 0
	}
	return b[3+n:], stamp{q: TimeComplete, t: t}, wrapBracketISO
}

// pyLogging unwraps the layouts of Python's logging module that servers
// and the tools around them configure:
//
//	2024-12-20 15:18:19 - vllm.engine.metrics - INFO - message          (the "%(asctime)s - %(name)s - %(levelname)s" recipe)
//	2026-06-07 10:59:31,659 [INFO] sglang.srt.managers.scheduler: msg   ("%(asctime)s [%(levelname)s] %(name)s: %(message)s")
//	2023-12-27 11:25:36 | ERROR | stderr | message                      (FastChat's model workers)
//
// The time has no zone. The level and the logger's name are kept in the
// unwrapper for the engine parsers.
func (u *unwrapper) pyLogging(b []byte) ([]byte, stamp, int) {
	y, mon, day, h, m, sec, ok := dateClock(b)
	if !ok || b[10] != ' ' {
		return nil, stamp{}, 0
	}
	i, ns := 19, 0
	if i < len(b) && (b[i] == ',' || b[i] == '.') {
		j, digits := i+1, 0
		for j < len(b) && isDigit(b[j]) && digits < 9 {
			ns = ns*10 + int(b[j]-'0')
			j++
			digits++
		}
		if digits == 0 {
			return nil, stamp{}, 0
		}
		for ; digits < 9; digits++ {
			ns *= 10
		}
		i = j
	}
	st := stamp{q: TimeNoZone, year: y, mon: mon, day: day, h: h, m: m, s: sec, n: ns}
	rest := b[i:]
	switch {
	case bytes.HasPrefix(rest, []byte(" - ")):
		// " - logger - LEVEL - msg"
		r := rest[3:]
		j := index(r, " - ")
		if j <= 0 || j > 96 {
			return nil, stamp{}, 0
		}
		logger := r[:j]
		r = r[j+3:]
		k := index(r, " - ")
		if k <= 0 || k > 9 {
			return nil, stamp{}, 0
		}
		lvl := pyLevel(r[:k])
		if lvl == LevelUnknown {
			return nil, stamp{}, 0
		}
		u.level, u.logger = lvl, logger
		return r[k+3:], st, wrapPyLogging
	case bytes.HasPrefix(rest, []byte(" [")):
		// " [LEVEL] logger: msg"
		r := rest[2:]
		j := bytes.IndexByte(r, ']')
		if j <= 0 || j > 9 {
			return nil, stamp{}, 0
		}
		lvl := pyLevel(r[:j])
		if lvl == LevelUnknown || j+2 >= len(r) || r[j+1] != ' ' {
			return nil, stamp{}, 0
		}
		r = r[j+2:]
		k := index(r, ": ")
		if k <= 0 || k > 96 || bytes.IndexByte(r[:k], ' ') >= 0 {
			return nil, stamp{}, 0
		}
		u.level, u.logger = lvl, r[:k]
		return r[k+2:], st, wrapPyLogging
	case bytes.HasPrefix(rest, []byte(" | ")):
		// " | LEVEL | stream | msg"
		r := rest[3:]
		j := index(r, " | ")
		if j <= 0 || j > 9 {
			return nil, stamp{}, 0
		}
		lvl := pyLevel(r[:j])
		if lvl == LevelUnknown {
			return nil, stamp{}, 0
		}
		r = r[j+3:]
		k := index(r, " | ")
		if k <= 0 || k > 16 {
			return nil, stamp{}, 0
		}
		u.level = lvl
		return r[k+3:], st, wrapPyLogging
	}
	return nil, stamp{}, 0
}

// pyLevel reads a Python logging level name.
func pyLevel(b []byte) Level {
	switch bstr(b) {
	case "DEBUG":
		return LevelDebug
	case "INFO":
		return LevelInfo
	case "WARNING", "WARN":
		return LevelWarning
	case "ERROR":
		return LevelError
	case "CRITICAL", "FATAL":
		return LevelCritical
	}
	return LevelUnknown
}

// gutterPrefix strips the "  | " gutter that copying a log from a CI web
// page (Buildkite) puts before every line.
func gutterPrefix(b []byte) ([]byte, int) {
	i := 0
	for i < len(b) && i < 4 && b[i] == ' ' {
		i++
	}
	if i == 0 || i+1 >= len(b) || b[i] != '|' || b[i+1] != ' ' {
		return nil, 0
	}
	return b[i+2:], wrapGutter
}

// composePrefix strips docker compose's "service-1  | " prefix.
func composePrefix(b []byte) ([]byte, int) {
	i := 0
	for i < len(b) && i < 64 {
		c := b[i]
		if isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '-' || c == '.' {
			i++
			continue
		}
		break
	}
	if i == 0 || i >= len(b) || b[i] != ' ' {
		return nil, 0
	}
	for i < len(b) && b[i] == ' ' {
		i++
	}
	if i+1 < len(b) && b[i] == '|' && b[i+1] == ' ' {
		return b[i+2:], wrapCompose
	}
	if i+1 == len(b) && b[i] == '|' {
		return b[i+1:], wrapCompose
	}
	return nil, 0
}

// stripANSI removes terminal escape sequences (colours, cursor moves).
func (u *unwrapper) stripANSI(b []byte) []byte {
	out := u.ansiBuf[:0]
	for i := 0; i < len(b); i++ {
		c := b[i]
		if bytes.HasPrefix(b[i:], lostEscCSI) {
			// read as ESC [: skip the replacement character's other bytes
			i += len(lostEscCSI) - 2
			c = 0x1b
		}
		if c != 0x1b {
			out = append(out, c)
			continue
		}
		if i+1 >= len(b) {
			break
		}
		switch b[i+1] {
		case '[': // CSI: parameters, intermediates, one final byte
			j := i + 2
			for j < len(b) && b[j] >= 0x20 && b[j] <= 0x3f {
				j++
			}
			if j < len(b) && b[j] >= 0x40 && b[j] <= 0x7e {
				j++
			}
			i = j - 1
		case ']': // OSC: up to BEL or ST
			j := i + 2
			for j < len(b) && b[j] != 0x07 && !(b[j] == 0x1b && j+1 < len(b) && b[j+1] == '\\') {
				j++
			}
			if j < len(b) && b[j] == 0x1b {
				j++
			}
			i = j
		default:
			i++
		}
	}
	u.ansiBuf = out
	return out
}
