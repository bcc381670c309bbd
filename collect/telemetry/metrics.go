package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/headroom-llm/headroom/rundir"
)

// DefaultScrapeInterval is how often /metrics is scraped.
const DefaultScrapeInterval = time.Second

// maxMetricsBytes bounds one /metrics response (vLLM's is ~100 KB).
const maxMetricsBytes = 32 << 20

// ErrNoMetrics is returned (wrapped) when the server has no /metrics.
var ErrNoMetrics = errors.New("server has no Prometheus /metrics endpoint")

// ParseText parses the Prometheus text exposition format and flattens it
// into rows at timeNS: counters, gauges and untyped samples under their own
// name; summaries as name{quantile=...}, name_sum, name_count; histograms
// as name_bucket{le=...}, name_sum, name_count, as the text format writes
// them. Rows are sorted by name, then labels.
func ParseText(r io.Reader, timeNS int64) ([]rundir.ServerMetricRow, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	return Flatten(fams, timeNS), nil
}

// Flatten turns metric families into long-format rows (see ParseText).
func Flatten(fams map[string]*dto.MetricFamily, timeNS int64) []rundir.ServerMetricRow {
	var rows []rundir.ServerMetricRow
	add := func(name string, labels []*dto.LabelPair, extraName, extraValue string, v float64) {
		rows = append(rows, rundir.ServerMetricRow{TimeNS: timeNS, Name: name, Labels: CanonicalLabels(labels, extraName, extraValue), Value: v})
	}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			lp := m.GetLabel()
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				add(name, lp, "", "", m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				add(name, lp, "", "", m.GetGauge().GetValue())
			case dto.MetricType_SUMMARY:
				s := m.GetSummary()
				for _, q := range s.GetQuantile() {
					add(name, lp, model.QuantileLabel, formatFloat(q.GetQuantile()), q.GetValue())
				}
				add(name+"_sum", lp, "", "", s.GetSampleSum())
				add(name+"_count", lp, "", "", float64(s.GetSampleCount()))
			case dto.MetricType_HISTOGRAM, dto.MetricType_GAUGE_HISTOGRAM:
				h := m.GetHistogram()
				inf := false
				for _, b := range h.GetBucket() {
					inf = inf || math.IsInf(b.GetUpperBound(), 1)
					add(name+"_bucket", lp, model.BucketLabel, formatFloat(b.GetUpperBound()), float64(b.GetCumulativeCount()))
				}
				if !inf { // the parser may drop an explicit +Inf bucket into the count
					add(name+"_bucket", lp, model.BucketLabel, "+Inf", float64(h.GetSampleCount()))
				}
				add(name+"_sum", lp, "", "", h.GetSampleSum())
				add(name+"_count", lp, "", "", float64(h.GetSampleCount()))
			default: // untyped
				add(name, lp, "", "", m.GetUntyped().GetValue())
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

// CanonicalLabels renders labels as k="v" pairs sorted by key and joined by
// commas, values escaped as in the text format (\\, \", \n). extraName, if
// not empty, is added (le, quantile).
func CanonicalLabels(labels []*dto.LabelPair, extraName, extraValue string) string {
	type kv struct{ k, v string }
	pairs := make([]kv, 0, len(labels)+1)
	for _, l := range labels {
		pairs = append(pairs, kv{l.GetName(), l.GetValue()})
	}
	if extraName != "" {
		pairs = append(pairs, kv{extraName, extraValue})
	}
	sort.Slice(pairs, func(i, j int) bool { return pairs[i].k < pairs[j].k })
	var b strings.Builder
	for i, p := range pairs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(p.k)
		b.WriteString(`="`)
		b.WriteString(labelEscaper.Replace(p.v))
		b.WriteByte('"')
	}
	return b.String()
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// formatFloat writes a bucket bound or quantile as Prometheus does.
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// Scraper fetches a /metrics URL periodically and hands the rows to a sink.
type Scraper struct {
	URL      string
	Client   *http.Client
	Interval time.Duration
	// Now gives the sample time in Unix ns (the sweep's clock).
	Now func() int64
	// Sink receives each scrape's rows.
	Sink func([]rundir.ServerMetricRow)
	// Header is sent with every scrape (e.g. Authorization).
	Header http.Header

	mu       sync.Mutex
	scrapes  int
	failures int
	lastErr  error
}

// Scrape fetches and parses /metrics once. A 404 returns ErrNoMetrics.
func (s *Scraper) Scrape(ctx context.Context) ([]rundir.ServerMetricRow, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL, nil)
	if err != nil {
		return nil, err
	}
	// The text format: vLLM, SGLang, TGI and llama.cpp all serve it.
	for k, v := range s.Header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4;q=1,*/*;q=0.1")
	client := s.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	t := s.Now()
	if resp.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("%s: %w", s.URL, ErrNoMetrics)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d", s.URL, resp.StatusCode)
	}
	rows, err := ParseText(io.LimitReader(resp.Body, maxMetricsBytes), t)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.URL, err)
	}
	return rows, nil
}

// Run scrapes every Interval until ctx ends. It stops early, returning
// ErrNoMetrics, if the server has no /metrics; other errors are counted
// (Stats) and scraping goes on.
func (s *Scraper) Run(ctx context.Context) error {
	interval := s.Interval
	if interval <= 0 {
		interval = DefaultScrapeInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		sctx, cancel := context.WithTimeout(ctx, interval*5)
		rows, err := s.Scrape(sctx)
		cancel()
		s.mu.Lock()
		s.scrapes++
		if err != nil && ctx.Err() == nil {
			s.failures++
			s.lastErr = err
		}
		s.mu.Unlock()
		if errors.Is(err, ErrNoMetrics) {
			return err
		}
		if err == nil && s.Sink != nil {
			s.Sink(rows)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// Stats reports how many scrapes ran, how many failed, and the last error.
func (s *Scraper) Stats() (scrapes, failures int, last error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scrapes, s.failures, s.lastErr
}
