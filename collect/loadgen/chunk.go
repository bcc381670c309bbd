package loadgen

import (
	"errors"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// chunk holds the few fields of one streamed JSON chunk that a sweep needs.
// Decoding every chunk with reflection-based encoding/json costs more CPU
// than everything else the client does per chunk (docs/performance.md), so
// parseChunk walks the JSON once, skips what it does not need, and
// allocates nothing.
type chunk struct {
	// textBytes is the UTF-8 length of the generated text in the chunk:
	// choices[].text (completions) or choices[].delta.content plus
	// delta.reasoning_content / delta.reasoning (chat).
	textBytes int
	// text is the raw (still JSON-escaped) text of the first text field
	// seen, for observers; it aliases the input.
	text []byte
	// finishReason is the raw finish_reason string of the last choice that
	// had one; nil when absent or null.
	finishReason []byte
	// hasUsage is set when the chunk carries a usage object.
	hasUsage                       bool
	promptTokens, completionTokens int64 // -1 when the usage object lacks them
	// cachedTokens is usage.prompt_tokens_details.cached_tokens: prompt
	// tokens the server took from its prefix cache; -1 when absent.
	cachedTokens int64
	// isError is set for {"error": ...} or {"object": "error", ...}.
	isError bool
	errMsg  []byte // raw message, if any
}

var errSyntax = errors.New("invalid JSON")

// parseChunk extracts the chunk fields from one JSON object. It accepts
// every valid JSON object, ignores fields whose value has an unexpected
// type, and never panics. The parser is reused across chunks of a stream
// (it is the only state, so parsing allocates nothing).
func (p *jparser) parseChunk(b []byte, c *chunk) error {
	*c = chunk{promptTokens: -1, completionTokens: -1, cachedTokens: -1}
	p.b, p.i, p.depth = b, 0, 0
	var objectIsError bool
	var topMessage []byte
	err := p.object(func(key []byte, p *jparser) error {
		switch {
		case keyIs(key, "choices") && p.next() == '[':
			return p.array(func(p *jparser) error { return p.choice(c) })
		case keyIs(key, "usage") && p.next() == '{':
			c.hasUsage = true
			c.promptTokens, c.completionTokens, c.cachedTokens = -1, -1, -1 // a later usage object replaces an earlier one
			return p.object(func(key []byte, p *jparser) error {
				switch {
				case keyIs(key, "prompt_tokens"):
					return p.int(&c.promptTokens)
				case keyIs(key, "completion_tokens"):
					return p.int(&c.completionTokens)
				case keyIs(key, "prompt_tokens_details") && p.next() == '{':
					return p.object(func(key []byte, p *jparser) error {
						if keyIs(key, "cached_tokens") {
							return p.int(&c.cachedTokens)
						}
						return p.skip()
					})
				}
				return p.skip()
			})
		case keyIs(key, "usage"):
			c.hasUsage = false
			return p.skip()
		case keyIs(key, "error"):
			return p.errorValue(c)
		case keyIs(key, "object"):
			s, err := p.stringValue()
			objectIsError = s != nil && keyIs(s, "error")
			return err
		case keyIs(key, "message"):
			s, err := p.stringValue()
			topMessage = s
			return err
		}
		return p.skip()
	})
	if err != nil {
		return err
	}
	if p.ws(); p.i != len(p.b) {
		return errSyntax
	}
	if objectIsError {
		c.isError = true
		if c.errMsg == nil {
			c.errMsg = topMessage
		}
	}
	return nil
}

// choice reads one element of "choices".
func (p *jparser) choice(c *chunk) error {
	if p.next() != '{' {
		return p.skip()
	}
	return p.object(func(key []byte, p *jparser) error {
		switch {
		case keyIs(key, "text"):
			return p.text(c)
		case keyIs(key, "delta") && p.next() == '{':
			return p.object(func(key []byte, p *jparser) error {
				if keyIs(key, "content") || keyIs(key, "reasoning_content") || keyIs(key, "reasoning") {
					return p.text(c)
				}
				return p.skip()
			})
		case keyIs(key, "finish_reason"):
			s, err := p.stringValue()
			if s != nil {
				c.finishReason = s
			}
			return err
		}
		return p.skip()
	})
}

// text adds a string value to the chunk's text; other values are skipped.
func (p *jparser) text(c *chunk) error {
	if p.next() != '"' {
		return p.skip()
	}
	raw, esc, err := p.str()
	if err != nil {
		return err
	}
	n := len(raw)
	if esc {
		if n, err = unescapedLen(raw); err != nil {
			return err
		}
	}
	if n > 0 && c.text == nil {
		c.text = raw
	}
	c.textBytes += n
	return nil
}

// errorValue reads the value of "error": null (no error), a message
// string, or an object with a "message".
func (p *jparser) errorValue(c *chunk) error {
	switch p.next() {
	case 'n':
		if p.null() {
			c.isError = false
			return nil
		}
	case '"':
		c.isError = true
		s, _, err := p.str()
		c.errMsg = s
		return err
	case '{':
		c.isError = true
		c.errMsg = nil
		return p.object(func(key []byte, p *jparser) error {
			if keyIs(key, "message") {
				s, err := p.stringValue()
				c.errMsg = s
				return err
			}
			return p.skip()
		})
	}
	c.isError = true
	return p.skip()
}

// jparser is a minimal JSON walker over a byte slice.
type jparser struct {
	b       []byte
	i       int
	depth   int
	scratch [32]byte // unescaped object keys
}

const maxJSONDepth = 64

func (p *jparser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// next skips white space and returns the next byte (0 at the end).
func (p *jparser) next() byte {
	p.ws()
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

// null consumes a null literal if one is next.
func (p *jparser) null() bool {
	p.ws()
	if len(p.b)-p.i >= 4 && string(p.b[p.i:p.i+4]) == "null" {
		p.i += 4
		return true
	}
	return false
}

// object walks an object, calling fn with each key (unescaped; valid only
// during the call) positioned before its value; fn must consume the value.
func (p *jparser) object(fn func(key []byte, p *jparser) error) error {
	empty, err := p.enter('{', '}')
	if err != nil || empty {
		return err
	}
	for {
		p.ws()
		raw, esc, err := p.str()
		if err != nil {
			return err
		}
		key := raw
		if esc {
			if key, err = unescape(p.scratch[:0], raw); err != nil {
				return err
			}
		}
		p.ws()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return errSyntax
		}
		p.i++
		if err := fn(key, p); err != nil {
			return err
		}
		if done, err := p.after('}'); err != nil || done {
			return err
		}
	}
}

// array walks an array, calling fn positioned before each element.
func (p *jparser) array(fn func(p *jparser) error) error {
	empty, err := p.enter('[', ']')
	if err != nil || empty {
		return err
	}
	for {
		if err := fn(p); err != nil {
			return err
		}
		if done, err := p.after(']'); err != nil || done {
			return err
		}
	}
}

// enter consumes the opening bracket of an object or array (one level
// deeper, bounded by maxJSONDepth), and the closing one too when it is
// empty.
func (p *jparser) enter(open, close byte) (empty bool, err error) {
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != open {
		return false, errSyntax
	}
	if p.depth++; p.depth > maxJSONDepth {
		return false, errSyntax
	}
	p.i++
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == close {
		p.i++
		p.depth--
		return true, nil
	}
	return false, nil
}

// after consumes what follows a member or element: a comma (more to come)
// or the closing bracket (done, one level up).
func (p *jparser) after(close byte) (done bool, err error) {
	p.ws()
	if p.i >= len(p.b) {
		return false, errSyntax
	}
	switch p.b[p.i] {
	case ',':
		p.i++
		return false, nil
	case close:
		p.i++
		p.depth--
		return true, nil
	}
	return false, errSyntax
}

// str reads a string and returns its raw contents (between the quotes) and
// whether it contains escapes.
func (p *jparser) str() (raw []byte, escaped bool, err error) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, false, errSyntax
	}
	start := p.i + 1
	for i := start; i < len(p.b); i++ {
		switch c := p.b[i]; {
		case c == '"':
			p.i = i + 1
			return p.b[start:i], escaped, nil
		case c == '\\':
			escaped = true
			i++
		case c < 0x20:
			return nil, false, errSyntax
		}
	}
	return nil, false, errSyntax
}

// stringValue returns the raw contents of a string value; any other value
// is skipped and returns nil.
func (p *jparser) stringValue() ([]byte, error) {
	if p.next() != '"' {
		return nil, p.skip()
	}
	raw, _, err := p.str()
	return raw, err
}

// int reads a number value into *v (fractions truncated); any other value
// is skipped and sets -1.
func (p *jparser) int(v *int64) error {
	if c := p.next(); c != '-' && (c < '0' || c > '9') {
		*v = -1
		return p.skip()
	}
	start := p.i
	if err := p.number(); err != nil {
		return err
	}
	s := p.b[start:p.i]
	if n, err := strconv.ParseInt(string(s), 10, 64); err == nil {
		*v = n
		return nil
	}
	f, err := strconv.ParseFloat(string(s), 64)
	if err != nil && f == 0 {
		return errSyntax
	}
	*v = int64(f)
	return nil
}

// number consumes a JSON number.
func (p *jparser) number() error {
	start := p.i
	if p.i < len(p.b) && p.b[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.i < len(p.b) && p.b[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return errSyntax
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return errSyntax
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return errSyntax
		}
	}
	if p.i == start {
		return errSyntax
	}
	return nil
}

// skip consumes any value.
func (p *jparser) skip() error {
	p.ws()
	if p.i >= len(p.b) {
		return errSyntax
	}
	switch c := p.b[p.i]; {
	case c == '"':
		_, _, err := p.str()
		return err
	case c == '{':
		return p.object(func(_ []byte, p *jparser) error { return p.skip() })
	case c == '[':
		return p.array(func(p *jparser) error { return p.skip() })
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if len(p.b)-p.i >= len(lit) && string(p.b[p.i:p.i+len(lit)]) == lit {
			p.i += len(lit)
			return nil
		}
	}
	return errSyntax
}

func keyIs(key []byte, s string) bool { return string(key) == s }

// unescapedLen is the UTF-8 length of a JSON string's raw contents once
// unescaped, computed without building it.
func unescapedLen(raw []byte) (int, error) {
	n := 0
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			n++
			continue
		}
		r, w, err := unescapeAt(raw, i)
		if err != nil {
			return 0, err
		}
		n += utf8.RuneLen(r)
		i += w - 1
	}
	return n, nil
}

// unescape appends the unescaped contents of raw to dst.
func unescape(dst, raw []byte) ([]byte, error) {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			dst = append(dst, raw[i])
			continue
		}
		r, w, err := unescapeAt(raw, i)
		if err != nil {
			return nil, err
		}
		dst = utf8.AppendRune(dst, r)
		i += w - 1
	}
	return dst, nil
}

// unescapeAt decodes the escape sequence at raw[i] (a backslash) and returns
// the rune and the sequence's width. Unpaired surrogates become U+FFFD, as
// encoding/json decodes them.
func unescapeAt(raw []byte, i int) (rune, int, error) {
	if i+1 >= len(raw) {
		return 0, 0, errSyntax
	}
	switch raw[i+1] {
	case '"', '\\', '/':
		return rune(raw[i+1]), 2, nil
	case 'b':
		return '\b', 2, nil
	case 'f':
		return '\f', 2, nil
	case 'n':
		return '\n', 2, nil
	case 'r':
		return '\r', 2, nil
	case 't':
		return '\t', 2, nil
	case 'u':
		r, ok := hex4(raw, i+2)
		if !ok {
			return 0, 0, errSyntax
		}
		if utf16.IsSurrogate(r) {
			if i+11 < len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
				if r2, ok := hex4(raw, i+8); ok {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						return d, 12, nil
					}
				}
			}
			return utf8.RuneError, 6, nil
		}
		return r, 6, nil
	}
	return 0, 0, errSyntax
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
