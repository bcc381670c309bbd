package serverlog

import "strings"

// Readers for the Python reprs engines print at start-up: vLLM's
// "args: Namespace(k=v, ...)", "non-default args: {'k': v, ...}", its
// "with config: k=v, ..." line, and SGLang's "server_args=ServerArgs(...)".
// Values can nest (lists, dicts, nested dataclasses) and hold quoted
// strings with commas, so splitting tracks brackets and quotes.

type pyArg struct{ key, val string }

// splitTop splits s at commas outside brackets and quotes.
func splitTop(s string) []string {
	var parts []string
	depth := 0
	var quote byte
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
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
			quote = c
		case '(', '[', '{', '<':
			depth++
		case ')', ']', '}', '>':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	if start < len(s) {
		parts = append(parts, s[start:])
	}
	return parts
}

// matchingClose returns the index of the bracket that closes the one at
// s[open], or -1.
func matchingClose(s string, open int) int {
	depth := 0
	var quote byte
	for i := open; i < len(s); i++ {
		c := s[i]
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
			quote = c
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
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

// parseDict reads "'k': v, 'k2': v2" (the inside of a dict repr).
func parseDict(s string) []pyArg {
	var out []pyArg
	for _, p := range splitTop(s) {
		p = strings.TrimSpace(p)
		if len(p) < 4 || (p[0] != '\'' && p[0] != '"') {
			continue
		}
		end := strings.IndexByte(p[1:], p[0])
		if end < 0 {
			continue
		}
		k := p[1 : 1+end]
		rest := strings.TrimSpace(p[2+end:])
		if !strings.HasPrefix(rest, ":") {
			continue
		}
		out = append(out, pyArg{k, strings.TrimSpace(rest[1:])})
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
