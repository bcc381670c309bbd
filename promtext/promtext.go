// Package promtext turns a scrape of a Prometheus /metrics endpoint (the
// text exposition format) into rows of the run directory's server_metrics
// table. The sweep's scraper writes them with it, and the analyzer reads
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
//   - labels are rundir.CanonicalLabels, with le and quantile values
//     written by rundir.FormatLabelFloat (le="1.0");
//   - rows are sorted by name, then labels.
package promtext

import (
	"io"
	"math"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/headroom-llm/headroom/rundir"
)

// Parse reads one scrape in the text format into rows at timeNS. A parse
// error names the line.
func Parse(r io.Reader, timeNS int64) ([]rundir.ServerMetricRow, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	return Flatten(fams, timeNS), nil
}

// Flatten turns metric families into rows at timeNS (see the package
// comment for the rules).
func Flatten(fams map[string]*dto.MetricFamily, timeNS int64) []rundir.ServerMetricRow {
	var rows []rundir.ServerMetricRow
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			labels := make(map[string]string, len(m.GetLabel())+1)
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			plain := rundir.CanonicalLabels(labels)
			add := func(name, labels string, v float64) {
				rows = append(rows, rundir.ServerMetricRow{TimeNS: timeNS, Name: name, Labels: labels, Value: v})
			}
			with := func(label string, v float64) string {
				labels[label] = rundir.FormatLabelFloat(v)
				s := rundir.CanonicalLabels(labels)
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
					add(name, with(rundir.QuantileLabel, q.GetQuantile()), q.GetValue())
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
					add(name+"_bucket", with(rundir.BucketLabel, b.GetUpperBound()), c)
				}
				if !inf && counted {
					add(name+"_bucket", with(rundir.BucketLabel, math.Inf(1)), count)
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
