package serverlog

import (
	"bytes"
	"math"
	"strconv"
	"unsafe"
)

// Small allocation-free helpers for reading numbers and fixed words out of
// byte slices. The hot path (a vLLM stats line every few seconds, repeated
// over gigabytes in the benchmark) must not allocate per field.

// pow10 holds the exact powers of ten representable in a float64.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// bstr views b as a string without copying. The string must not outlive b
// and b must not change while the string is in use.
func bstr(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// parseFloatPrefix reads a decimal number at the start of b (after optional
// spaces): an optional sign, digits with optional thousands commas, an
// optional fraction and exponent. It returns the value and the rest of b.
// Values with at most 15 significant digits and no exponent are converted
// exactly (Clinger's fast path); anything else goes through strconv.
func parseFloatPrefix(b []byte) (float64, []byte, bool) {
	return parseFloatScaled(b, 0)
}

// parseFloatScaled is parseFloatPrefix with the value divided by
// 10^shift, done in the decimal domain so that "84.9" with shift 2 gives
// exactly the float64 nearest to 0.849 (percent to fraction).
func parseFloatScaled(b []byte, shift int) (float64, []byte, bool) {
	i := 0
	for i < len(b) && b[i] == ' ' {
		i++
	}
	start := i
	neg := false
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		neg = b[i] == '-'
		i++
	}
	var mant uint64
	digits, frac := 0, 0
	sawDigit, commas, slow := false, false, false
	for i < len(b) {
		c := b[i]
		if isDigit(c) {
			sawDigit = true
			if mant != 0 || c != '0' {
				digits++
			}
			if digits <= 15 {
				mant = mant*10 + uint64(c-'0')
			} else {
				slow = true
			}
			i++
			continue
		}
		if c == ',' && sawDigit && allDigits(b, i+1, 3) && (i+4 >= len(b) || !isDigit(b[i+4])) {
			commas = true
			i++
			continue
		}
		break
	}
	if i < len(b) && b[i] == '.' {
		i++
		for i < len(b) && isDigit(b[i]) {
			sawDigit = true
			if mant != 0 || b[i] != '0' {
				digits++
			}
			if digits <= 15 {
				mant = mant*10 + uint64(b[i]-'0')
				frac++
			} else {
				slow = true
			}
			i++
		}
	}
	if !sawDigit {
		// inf/nan as Python prints them
		if hasPrefixFold(b[i:], "inf") {
			v := math.Inf(1)
			if neg {
				v = math.Inf(-1)
			}
			return v, b[i+3:], true
		}
		if hasPrefixFold(b[i:], "nan") {
			return math.NaN(), b[i+3:], true
		}
		return 0, b, false
	}
	if i+1 < len(b) && (b[i] == 'e' || b[i] == 'E') && (isDigit(b[i+1]) || ((b[i+1] == '-' || b[i+1] == '+') && i+2 < len(b) && isDigit(b[i+2]))) {
		i += 2
		for i < len(b) && isDigit(b[i]) {
			i++
		}
		slow = true
	}
	if !slow && frac+shift < len(pow10) {
		v := float64(mant) / pow10[frac+shift]
		if neg {
			v = -v
		}
		return v, b[i:], true
	}
	text := b[start:i]
	if commas {
		text = bytes.ReplaceAll(text, []byte(","), nil)
	}
	v, err := strconv.ParseFloat(bstr(text), 64)
	if err != nil {
		return 0, b, false
	}
	if shift > 0 && shift < len(pow10) {
		v /= pow10[shift]
	}
	return v, b[i:], true
}

func allDigits(b []byte, from, n int) bool {
	if from+n > len(b) {
		return false
	}
	for _, c := range b[from : from+n] {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

func hasPrefixFold(b []byte, p string) bool {
	if len(b) < len(p) {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != p[i] {
			return false
		}
	}
	return true
}

// parseIntPrefix reads an integer (optional sign, thousands commas allowed)
// at the start of b after optional spaces.
func parseIntPrefix(b []byte) (int, []byte, bool) {
	i := 0
	for i < len(b) && b[i] == ' ' {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '-' || b[i] == '+') {
		neg = b[i] == '-'
		i++
	}
	n, any := 0, false
	for i < len(b) {
		c := b[i]
		if isDigit(c) {
			if n > (math.MaxInt-9)/10 {
				return 0, b, false
			}
			n = n*10 + int(c-'0')
			any = true
			i++
			continue
		}
		if c == ',' && any && allDigits(b, i+1, 3) && (i+4 >= len(b) || !isDigit(b[i+4])) {
			i++
			continue
		}
		break
	}
	if !any {
		return 0, b, false
	}
	if neg {
		n = -n
	}
	return n, b[i:], true
}

// atoi parses all of b as an unsigned decimal integer.
func atoi(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if !isDigit(c) {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// num2 reads two decimal digits at b[i:i+2].
func num2(b []byte, i int) (int, bool) {
	if i+2 > len(b) || !isDigit(b[i]) || !isDigit(b[i+1]) {
		return 0, false
	}
	return int(b[i]-'0')*10 + int(b[i+1]-'0'), true
}

// afterPrefix returns b without prefix p and whether b started with p.
func afterPrefix(b []byte, p string) ([]byte, bool) {
	if len(b) >= len(p) && bstr(b[:len(p)]) == p {
		return b[len(p):], true
	}
	return b, false
}

// after returns the part of b after the first occurrence of sep.
func after(b []byte, sep string) ([]byte, bool) {
	i := index(b, sep)
	if i < 0 {
		return nil, false
	}
	return b[i+len(sep):], true
}

// floatAfter reads the number that follows the first occurrence of sep
// in b, and what follows the number.
func floatAfter(b []byte, sep string) (float64, []byte, bool) {
	v, ok := after(b, sep)
	if !ok {
		return 0, nil, false
	}
	return parseFloatPrefix(v)
}

// intAfter reads the integer that follows the first occurrence of sep in
// b, and what follows the integer.
func intAfter(b []byte, sep string) (int, []byte, bool) {
	v, ok := after(b, sep)
	if !ok {
		return 0, nil, false
	}
	return parseIntPrefix(v)
}

// sbytes views s as a byte slice without copying; it must not be written.
func sbytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// contains reports whether b contains s, without allocating.
func contains(b []byte, s string) bool { return bytes.Contains(b, sbytes(s)) }

// index is bytes.Index for a string separator, without allocating.
func index(b []byte, s string) int { return bytes.Index(b, sbytes(s)) }

// trimSpace trims ASCII spaces and tabs on both sides.
func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

// fmtFloat formats v compactly for a Fact value.
func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
