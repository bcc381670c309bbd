// Package servermetrics turns the Prometheus /metrics samples of an LLM
// serving engine into time series of the quantities headroom reasons
// about: running and waiting requests, KV cache usage (fraction 0..1),
// preemptions, token rates, and per-interval latency quantiles from
// histograms.
//
// Engines name the same quantity differently (vLLM V0 and V1, SGLang,
// llama.cpp, the project's test engine); the mapping is a data table,
// Engines, so that another engine is one more row.
//
// Input is long-format samples (Sample), as the run directory's
// server_metrics table stores them or as ParseText reads them from a saved
// text dump of /metrics.
package servermetrics

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one scraped value in long format: the shape of the run
// directory's server_metrics table (time_ns, name, labels, value).
type Sample struct {
	TimeNS int64   // scrape time, Unix nanoseconds
	Name   string  // sample name as exposed: "vllm:num_preemptions_total", "..._bucket"
	Labels string  // canonical labels, see CanonicalLabels; "" when none
	Value  float64 //
}

// CanonicalLabels renders labels as Prometheus does in the text format,
// sorted by name: k="v",k2="v2". Values are escaped (\\, \", \n).
func CanonicalLabels(labels map[string]string) string {
	if len(labels) == 0 {
		return ""
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(k)
		b.WriteString(`="`)
		b.WriteString(escapeLabel(labels[k]))
		b.WriteByte('"')
	}
	return b.String()
}

func escapeLabel(v string) string {
	if !strings.ContainsAny(v, "\\\"\n") {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ { // bytes, not runes: values need not be UTF-8
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
	return b.String()
}

// ParseLabels reads a canonical label string back into a map.
func ParseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	i := 0
	for i < len(s) {
		eq := strings.IndexByte(s[i:], '=')
		if eq <= 0 || i+eq+1 >= len(s) || s[i+eq+1] != '"' {
			return nil, fmt.Errorf("servermetrics: labels %q: expected name=\"value\" at offset %d", s, i)
		}
		name := s[i : i+eq]
		j := i + eq + 2
		var v strings.Builder
		closed := false
		for j < len(s) {
			c := s[j]
			if c == '\\' && j+1 < len(s) {
				switch s[j+1] {
				case 'n':
					v.WriteByte('\n')
				default:
					v.WriteByte(s[j+1])
				}
				j += 2
				continue
			}
			if c == '"' {
				closed = true
				j++
				break
			}
			v.WriteByte(c)
			j++
		}
		if !closed {
			return nil, fmt.Errorf("servermetrics: labels %q: unterminated value of %s", s, name)
		}
		out[name] = v.String()
		if j < len(s) {
			if s[j] != ',' {
				return nil, fmt.Errorf("servermetrics: labels %q: expected ',' at offset %d", s, j)
			}
			j++
		}
		i = j
	}
	return out, nil
}

// withoutLabel returns the canonical label string without one label.
func withoutLabel(labels, name string) (rest, value string) {
	if labels == "" {
		return "", ""
	}
	m, err := ParseLabels(labels)
	if err != nil {
		return labels, ""
	}
	value = m[name]
	delete(m, name)
	return CanonicalLabels(m), value
}

// ParseText reads one text-format (0.0.4) scrape of /metrics, such as a
// saved `curl .../metrics`, into samples at timeNS. Samples that carry
// their own timestamp keep it. Histograms and summaries are flattened to
// their _bucket/_sum/_count (and quantile) samples, as the text format
// shows them.
func ParseText(r io.Reader, timeNS int64) ([]Sample, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("servermetrics: reading /metrics text: %w", err)
	}
	names := make([]string, 0, len(mfs))
	for n := range mfs {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []Sample
	for _, n := range names {
		out = appendFamily(out, mfs[n], timeNS)
	}
	return out, nil
}

func appendFamily(out []Sample, mf *dto.MetricFamily, timeNS int64) []Sample {
	name := mf.GetName()
	for _, m := range mf.GetMetric() {
		t := timeNS
		if m.TimestampMs != nil {
			t = m.GetTimestampMs() * 1e6
		}
		labels := map[string]string{}
		for _, lp := range m.GetLabel() {
			labels[lp.GetName()] = lp.GetValue()
		}
		add := func(n string, v float64, extra ...string) {
			l := labels
			if len(extra) == 2 {
				l = make(map[string]string, len(labels)+1)
				for k, v := range labels {
					l[k] = v
				}
				l[extra[0]] = extra[1]
			}
			out = append(out, Sample{TimeNS: t, Name: n, Labels: CanonicalLabels(l), Value: v})
		}
		switch mf.GetType() {
		case dto.MetricType_COUNTER:
			add(name, m.GetCounter().GetValue())
		case dto.MetricType_GAUGE:
			add(name, m.GetGauge().GetValue())
		case dto.MetricType_HISTOGRAM:
			h := m.GetHistogram()
			sawInf := false
			for _, b := range h.GetBucket() {
				c := float64(b.GetCumulativeCount())
				if b.CumulativeCountFloat != nil {
					c = b.GetCumulativeCountFloat()
				}
				if math.IsInf(b.GetUpperBound(), 1) {
					sawInf = true
				}
				add(name+"_bucket", c, "le", formatLe(b.GetUpperBound()))
			}
			count := float64(h.GetSampleCount())
			if h.SampleCountFloat != nil {
				count = h.GetSampleCountFloat()
			}
			if !sawInf && (h.SampleCount != nil || h.SampleCountFloat != nil) {
				add(name+"_bucket", count, "le", "+Inf")
			}
			add(name+"_sum", h.GetSampleSum())
			add(name+"_count", count)
		case dto.MetricType_SUMMARY:
			s := m.GetSummary()
			for _, q := range s.GetQuantile() {
				add(name, q.GetValue(), "quantile", strconv.FormatFloat(q.GetQuantile(), 'g', -1, 64))
			}
			add(name+"_sum", s.GetSampleSum())
			add(name+"_count", float64(s.GetSampleCount()))
		default:
			add(name, m.GetUntyped().GetValue())
		}
	}
	return out
}

// formatLe renders a bucket bound as Prometheus clients do.
func formatLe(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0" // Python's prometheus_client prints le="1.0"
	}
	return s
}
