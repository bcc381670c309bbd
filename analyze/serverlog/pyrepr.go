package serverlog

import (
	"bytes"
	"strings"
)

// Readers for the Python reprs engines print at start-up: vLLM's
// "args: Namespace(k=v, ...)", "non-default args: {'k': v, ...}", its
// "with config: k=v, ..." line, and SGLang's "server_args=ServerArgs(...)".
// Values can nest (lists, dicts, nested dataclasses) and hold quoted
// strings with commas, so splitting tracks brackets and quotes.

type pyArg struct{ key, val string }

// splitTop splits s at commas outside brackets and quotes.
func splitTop(s string) []string {
	var parts []string
	eachTop([]byte(s), func(part []byte) { parts = append(parts, string(part)) })
	return parts
}

// eachTop calls fn with each comma-separated part of b outside brackets
// and quotes, without allocating; splitTop is its allocating form.
func eachTop(b []byte, fn func(part []byte)) {
	depth := 0
	var quote byte
	start := 0
	for i := 0; i < len(b); i++ {
		if quote == 0 {
			for i < len(b) && !reprSpecial[b[i]] {
				i++
			}
			if i == len(b) {
				break
			}
		}
		c := b[i]
		if quote != 0 {
			switch c {
			case '\\':
				i++
			case quote:
				quote = 0
			}
			continue
		}
		switch c {
		case '\'', '"':
			// jump to the closing quote when the string has no escapes
			if j := bytes.IndexByte(b[i+1:], c); j >= 0 && bytes.IndexByte(b[i+1:i+1+j], '\\') < 0 {
				i += j + 1
				continue
			}
			quote = c
		case '(', '[', '{', '<':
			depth++
		case ')', ']', '}', '>':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 {
				fn(b[start:i])
				start = i + 1
			}
		}
	}
	if start < len(b) {
		fn(b[start:])
	}
}

// reprSpecial marks the bytes eachTop must look at outside quotes.
var reprSpecial = func() (t [256]bool) {
	for _, c := range []byte("\\'\"()[]{}<>,") {
		t[c] = true
	}
	return t
}()

// kwarg splits "key=value" (spaces around allowed); ok is false when the
// part is not of that form.
func kwarg(part []byte) (key, val []byte, ok bool) {
	part = trimSpace(part)
	eq := bytes.IndexByte(part, '=')
	if eq <= 0 {
		return nil, nil, false
	}
	key = trimSpace(part[:eq])
	if !isIdent(bstr(key)) {
		return nil, nil, false
	}
	return key, trimSpace(part[eq+1:]), true
}

// dictItem splits "'key': value".
func dictItem(part []byte) (key, val []byte, ok bool) {
	part = trimSpace(part)
	if len(part) < 4 || (part[0] != '\'' && part[0] != '"') {
		return nil, nil, false
	}
	end := bytes.IndexByte(part[1:], part[0])
	if end < 0 {
		return nil, nil, false
	}
	key = part[1 : 1+end]
	rest := trimSpace(part[2+end:])
	if len(rest) == 0 || rest[0] != ':' {
		return nil, nil, false
	}
	return key, trimSpace(rest[1:]), true
}

// parseKwargs reads "k=v, k2=v2" (the inside of Namespace(...) or a
// dataclass repr).
func parseKwargs(s string) []pyArg {
	var out []pyArg
	for _, p := range splitTop(s) {
		p = strings.TrimSpace(p)
		eq := strings.IndexByte(p, '=')
		if eq <= 0 {
			continue
		}
		k := strings.TrimSpace(p[:eq])
		if !isIdent(k) {
			continue
		}
		out = append(out, pyArg{k, strings.TrimSpace(p[eq+1:])})
	}
	return out
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && isDigit(c))) {
			return false
		}
	}
	return true
}

// unquote strips the quotes of a Python string literal; other values are
// returned as printed.
func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '\'' || v[0] == '"') && v[len(v)-1] == v[0] {
		return v[1 : len(v)-1]
	}
	return v
}

// neutral reports whether a printed value is one that almost always means
// "not set": used for arguments whose default is not in the table.
func neutral(v string) bool {
	switch v {
	case "None", "False", "''", `""`, "[]", "{}", "()", "0", "0.0", "'auto'", "set()":
		return true
	}
	return false
}
