package serverlog

import "bytes"

// kvIter walks the "Key: value unit, Key: value unit" lists that vLLM and
// SGLang print for scheduler statistics. New wording variants only add or
// rename keys, so the parsers map keys they know and skip the rest.
type kvIter struct{ b []byte }

// next returns the next key and its value text (up to the next ", ").
// A segment without ": " splits at its first ':' ("Avg time/tok:149.4
// ms" in vLLM 0.3); a segment without a colon is skipped.
func (it *kvIter) next() (key, val []byte, ok bool) {
	for {
		b := it.b
		for len(b) > 0 && (b[0] == ' ' || b[0] == ',' || b[0] == '.') {
			b = b[1:]
		}
		if len(b) == 0 {
			it.b = nil
			return nil, nil, false
		}
		seg := b
		if j := index(b, ", "); j >= 0 {
			seg, it.b = b[:j], b[j+2:]
		} else {
			it.b = nil
		}
		i, w := index(seg, ": "), 2
		if i < 0 {
			i, w = bytes.IndexByte(seg, ':'), 1
		}
		if i <= 0 {
			if it.b == nil {
				return nil, nil, false
			}
			continue
		}
		return trimSpace(seg[:i]), seg[i+w:], true
	}
}

// kvNumber reads the number at the start of a value; a following '%'
// divides it by 100.
func kvNumber(val []byte) (float64, bool) {
	v, rest, ok := parseFloatPrefix(val)
	if !ok {
		return 0, false
	}
	if len(rest) > 0 && rest[0] == '%' {
		v, _, _ = parseFloatScaled(val, 2)
	}
	return v, true
}

// kvBool reads Python's True/False.
func kvBool(val []byte) (bool, bool) {
	val = trimSpace(val)
	switch {
	case len(val) >= 4 && bstr(val[:4]) == "True":
		return true, true
	case len(val) >= 5 && bstr(val[:5]) == "False":
		return false, true
	}
	return false, false
}

// eqNumbers reads "name = value" lists as llama.cpp prints them
// ("n_keep = 0, n_left = 255, n_discard = 127"): it returns the integer
// after "name =".
func eqInt(b []byte, name string) (int, bool) {
	for {
		i := index(b, name)
		if i < 0 {
			return 0, false
		}
		// the name must not be the tail of a longer name
		if i > 0 && (isWordByte(b[i-1])) {
			b = b[i+len(name):]
			continue
		}
		rest := b[i+len(name):]
		j := 0
		for j < len(rest) && rest[j] == ' ' {
			j++
		}
		if j < len(rest) && (rest[j] == '=' || rest[j] == ':') {
			v, _, ok := parseIntPrefix(rest[j+1:])
			return v, ok
		}
		b = rest
	}
}

// setEqInt sets *dst to the integer after the first of names that b has
// ("name = value", as eqInt); it leaves *dst as it is when b has none.
func setEqInt(dst *int, b []byte, names ...string) {
	for _, name := range names {
		if n, ok := eqInt(b, name); ok {
			*dst = n
			return
		}
	}
}

func isWordByte(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '.'
}
