package render

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// This file formats numbers for display. Data are in base units (seconds,
// FLOP/s, bytes/s); each quantity is shown in one scale chosen here, so a
// column of a table never mixes ms and s.

// durationUnit is a display scale for durations.
type durationUnit struct {
	name  string
	scale float64 // display value = seconds * scale
}

var (
	unitUS = durationUnit{"µs", 1e6}
	unitMS = durationUnit{"ms", 1e3}
	unitS  = durationUnit{"s", 1}
)

// durationScale picks one unit for a set of durations in seconds: the
// largest unit in which the largest value is at least 1.
func durationScale(secs ...float64) durationUnit {
	var top float64
	for _, s := range secs {
		if !math.IsNaN(s) && math.Abs(s) > top {
			top = math.Abs(s)
		}
	}
	switch {
	case top == 0:
		return unitMS // no values: the usual unit of request latencies
	case top >= 10:
		return unitS
	case top >= 1e-3:
		return unitMS
	default:
		return unitUS
	}
}

// in formats seconds in the unit, without the unit's name.
func (u durationUnit) in(secs float64) string {
	return sig(secs * u.scale)
}

// with formats seconds in the unit, with the unit's name.
func (u durationUnit) with(secs float64) string {
	return u.in(secs) + " " + u.name
}

// dur formats one duration in its own best unit.
func dur(secs float64) string { return durationScale(secs).with(secs) }

// sig formats v with three significant digits, but never in exponent form
// and never with more than one decimal above 10 (1.23, 12.3, 123, 1,234).
func sig(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	if v != 0 && math.Abs(v) < 1000 {
		// Round to three significant digits first, so 0.9998 shows as 1.00.
		v, _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', 3, 64), 64)
	}
	a := math.Abs(v)
	switch {
	case a == 0:
		return "0"
	case a >= 1000:
		return thousands(v, 0)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		// Three significant digits below 1.
		d := 2 - int(math.Floor(math.Log10(a)))
		return strconv.FormatFloat(v, 'f', d, 64)
	}
}

// thousands formats v with the given decimals and a comma every three
// digits of its integer part.
func thousands(v float64, decimals int) string {
	s := strconv.FormatFloat(math.Abs(v), 'f', decimals, 64)
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	if v < 0 {
		b.WriteByte('-')
	}
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if frac != "" {
		b.WriteByte('.')
		b.WriteString(frac)
	}
	return b.String()
}

// integer formats a count with thousands separators.
func integer[T ~int | ~int32 | ~int64](n T) string { return thousands(float64(n), 0) }

// tflops formats FLOP/s as TFLOP/s.
func tflops(flopPerS float64) string { return sig(flopPerS/1e12) + " TFLOP/s" }

// gbps formats bytes/s as GB/s (10^9 bytes).
func gbps(bytesPerS float64) string { return thousands(bytesPerS/1e9, 0) + " GB/s" }

// bytesIEC formats a size in bytes with a binary prefix.
func bytesIEC(n int64) string {
	const k = 1024
	switch {
	case n < k:
		return fmt.Sprintf("%d B", n)
	case n < k*k:
		return sig(float64(n)/k) + " KiB"
	case n < k*k*k:
		return sig(float64(n)/(k*k)) + " MiB"
	default:
		return sig(float64(n)/(k*k*k)) + " GiB"
	}
}

// percent formats a fraction as a percentage: one decimal below 10%.
func percent(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "–"
	}
	if p := 100 * f; math.Abs(p) < 9.95 && p != 0 {
		return strconv.FormatFloat(p, 'f', 1, 64) + "%"
	}
	return strconv.FormatFloat(100*f, 'f', 0, 64) + "%"
}

// tokPerS formats a token rate.
func tokPerS(v float64) string { return sig(v) + " tok/s" }

// usd formats dollars: cents below $100, whole dollars above.
func usd(v float64) string {
	if math.Abs(v) >= 100 {
		return "$" + thousands(v, 0)
	}
	if math.Abs(v) < 0.1 && v != 0 {
		return "$" + strconv.FormatFloat(v, 'f', 4, 64)
	}
	return "$" + strconv.FormatFloat(v, 'f', 2, 64)
}

// stamp formats a time for the report.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// sentence shows a phrase from the model as a sentence: a capital first
// letter and a final full stop.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	// Capitalise a leading word, but not a symbol such as p99 or c=32.
	r, n := utf8.DecodeRuneInString(s)
	if next, _ := utf8.DecodeRuneInString(s[n:]); unicode.IsLower(r) && unicode.IsLower(next) {
		s = string(unicode.ToUpper(r)) + s[n:]
	}
	if !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "!") && !strings.HasSuffix(s, "?") {
		s += "."
	}
	return s
}

// sentences applies sentence to each phrase.
func sentences(in []string) []string {
	var out []string
	for _, s := range in {
		if s = sentence(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}
