package promtext

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The labels column of server_metrics holds a sample's Prometheus labels
// as the text format writes them inside the braces, in one canonical
// form: k="v" pairs sorted by name, joined by commas, values escaped
// (\\, \", \n); "" when there are none. The collector writes it with
// CanonicalLabels (through Parse) and the analyzer reads it with
// ParseLabels.
//
// The values of le (histogram bucket bounds) and quantile (summary
// quantiles) are numbers, written as Prometheus 3 normalizes them on
// ingestion, whatever the exposition said: le="1.0", le="0.25", le="+Inf",
// quantile="0.5" (FormatLabelFloat). Runs written by earlier headroom
// versions spell whole bounds without ".0" (le="1"); strconv.ParseFloat
// reads both spellings, so read a bound as a number, never compare it as a
// string.

// Label names whose values are numbers (model.BucketLabel, model.QuantileLabel).
const (
	BucketLabel   = "le"
	QuantileLabel = "quantile"
)

// CanonicalLabels encodes labels for the labels column.
func CanonicalLabels(labels map[string]string) string {
	if len(labels) == 0 {
		return ""
	}
	names := make([]string, 0, len(labels))
	for k := range labels {
		names = append(names, k)
	}
	slices.Sort(names)
	var b strings.Builder
	for i, k := range names {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteString(`="`)
		writeEscaped(&b, labels[k])
		b.WriteByte('"')
	}
	return b.String()
}

// writeEscaped writes a label value escaped as in the text format. It
// works on bytes, not runes: a value need not be valid UTF-8.
func writeEscaped(b *strings.Builder, v string) {
	if !strings.ContainsAny(v, "\\\"\n") {
		b.WriteString(v)
		return
	}
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\\':
			b.WriteString(`\\`)
		case '"':
			b.WriteString(`\"`)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteByte(c)
		}
	}
}

// ParseLabels decodes the labels column. An escape other than \\, \" and
// \n stands for the character after the backslash, as in the text format.
func ParseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	i := 0
	for i < len(s) {
		eq := strings.IndexByte(s[i:], '=')
		if eq <= 0 || i+eq+1 >= len(s) || s[i+eq+1] != '"' {
			return nil, fmt.Errorf("labels %q: expected name=\"value\" at offset %d", s, i)
		}
		name := s[i : i+eq]
		j := i + eq + 2
		var v strings.Builder
		closed := false
		for j < len(s) {
			c := s[j]
			if c == '\\' && j+1 < len(s) {
				if s[j+1] == 'n' {
					v.WriteByte('\n')
				} else {
					v.WriteByte(s[j+1])
				}
				j += 2
				continue
			}
			j++
			if c == '"' {
				closed = true
				break
			}
			v.WriteByte(c)
		}
		if !closed {
			return nil, fmt.Errorf("labels %q: unterminated value of %s", s, name)
		}
		out[name] = v.String()
		if j < len(s) {
			if s[j] != ',' {
				return nil, fmt.Errorf("labels %q: expected ',' at offset %d", s, j)
			}
			j++
		}
		i = j
	}
	return out, nil
}

// FormatLabelFloat writes a bucket bound or a quantile as Prometheus 3
// normalizes le and quantile values: Go's shortest representation, with
// ".0" added to a whole number ("1.0", "250.0", "1e+21"), and "+Inf",
// "-Inf", "NaN".
func FormatLabelFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}
