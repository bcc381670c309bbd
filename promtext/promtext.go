// Package promtext turns a scrape of a Prometheus /metrics endpoint (the
// text exposition format) into samples in the shape of the run
// directory's server_metrics rows, and holds the encoding of their labels.
// The sweep's scraper records with it and the analyzer reads the labels and
// saved dumps with it, so both sides see one encoding.
//
// The rules, in one place:
//   - every row of a scrape carries the scrape's time on the collector's
//     clock; a timestamp in the exposition is ignored, so that metrics,
//     requests and the log share one clock (engines print none anyway);
//   - counters, gauges and untyped samples keep their name; summaries
//     become name{quantile=...}, name_sum, name_count; histograms (gauge
//     histograms too) become name_bucket{le=...}, name_sum, name_count, as
//     the text format writes them, with a +Inf bucket holding the count
//     when the exposition has a count but no +Inf bucket; a _sum or
//     _count the exposition lacks is not invented;
//   - float histogram counts (a count such as 2.5) are kept as floats;
//   - labels are CanonicalLabels, with le and quantile values
//     written by FormatLabelFloat (le="1.0");
//   - rows are sorted by name, then labels.
package promtext

import (
	"io"
	"math"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one scraped value in long format, the shape of a row of the
// run directory's server_metrics table (rundir.ServerMetricRow has the
// same fields, so each converts to the other: rundir.ServerMetricRow(s)).
// It is defined here so that the metrics parsers need not link the run
// directory's Parquet code.
type Sample struct {
	TimeNS int64   // scrape time, Unix nanoseconds
	Name   string  // as exposed: "vllm:num_preemptions_total", "..._bucket"
	Labels string  // CanonicalLabels; "" when none
	Value  float64 //
	// Replica is the server scraped when a sweep scraped several
	// (rundir.ServerMetricRow.Replica); nil for one server.
	Replica *int32
}

// Parse reads one scrape in the text format into samples at timeNS. A parse
// error names the line.
func Parse(r io.Reader, timeNS int64) ([]Sample, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	return Flatten(fams, timeNS), nil
}

// Flatten turns metric families into samples at timeNS (see the package
// comment for the rules).
func Flatten(fams map[string]*dto.MetricFamily, timeNS int64) []Sample {
	var rows []Sample
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			labels := make(map[string]string, len(m.GetLabel())+1)
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			plain := CanonicalLabels(labels)
			add := func(name, labels string, v float64) {
				rows = append(rows, Sample{TimeNS: timeNS, Name: name, Labels: labels, Value: v})
			}
			with := func(label string, v float64) string {
				labels[label] = FormatLabelFloat(v)
				s := CanonicalLabels(labels)
				delete(labels, label)
				return s
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				add(name, plain, m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				add(name, plain, m.GetGauge().GetValue())
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					add(name, with(QuantileLabel, q.GetQuantile()), q.GetValue())
				}
				if s.SampleSum != nil {
					add(name+"_sum", plain, s.GetSampleSum())
				}
				if s.SampleCount != nil {
					add(name+"_count", plain, float64(s.GetSampleCount()))
				}
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				h := m.GetHistogram()
				count, counted := float64(h.GetSampleCount()), h.SampleCount != nil || h.SampleCountFloat != nil
				if h.SampleCountFloat != nil {
					count = h.GetSampleCountFloat()
				}
				inf := false
				for _, b := range h.GetBucket() {
					c := float64(b.GetCumulativeCount())
					if b.CumulativeCountFloat != nil {
						c = b.GetCumulativeCountFloat()
					}
					inf = inf || math.IsInf(b.GetUpperBound(), 1)
					add(name+"_bucket", with(BucketLabel, b.GetUpperBound()), c)
				}
				if !inf && counted {
					add(name+"_bucket", with(BucketLabel, math.Inf(1)), count)
				}
				if h.SampleSum != nil {
					add(name+"_sum", plain, h.GetSampleSum())
				}
				if counted {
					add(name+"_count", plain, count)
				}
			default: // untyped
				add(name, plain, m.GetUntyped().GetValue())
			}
		}
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Name != rows[j].Name {
			return rows[i].Name < rows[j].Name
		}
		return rows[i].Labels < rows[j].Labels
	})
	return rows
}
