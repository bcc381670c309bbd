package serverlog

// kvIter walks the "Key: value unit, Key: value unit" lists that vLLM and
// SGLang print for scheduler statistics. New wording variants only add or
// rename keys, so the parsers map keys they know and skip the rest.
type kvIter struct{ b []byte }

// next returns the next key and its value text (up to the next ", ").
func (it *kvIter) next() (key, val []byte, ok bool) {
	b := it.b
	for len(b) > 0 && (b[0] == ' ' || b[0] == ',' || b[0] == '.') {
		b = b[1:]
	}
	i := index(b, ": ")
	if i < 0 {
		it.b = nil
		return nil, nil, false
	}
	key = trimSpace(b[:i])
	rest := b[i+2:]
	if j := index(rest, ", "); j >= 0 {
		val, it.b = rest[:j], rest[j+2:]
	} else {
		val, it.b = rest, nil
	}
	return key, val, true
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

func isWordByte(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '.'
}
