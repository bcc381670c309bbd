package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/headroom-llm/headroom/promtext"
	"github.com/headroom-llm/headroom/rundir"
)

// DefaultScrapeInterval is how often /metrics is scraped.
const DefaultScrapeInterval = time.Second

// maxMetricsBytes bounds one /metrics response (vLLM's is ~100 KB).
const maxMetricsBytes = 32 << 20

// ErrNoMetrics is returned (wrapped) when the server has no /metrics.
var ErrNoMetrics = errors.New("server has no Prometheus /metrics endpoint")

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
	return s.scrapeAt(ctx, 0)
}

// scrapeAt is Scrape with every row at time t (0: when the answer came).
func (s *Scraper) scrapeAt(ctx context.Context, t int64) ([]rundir.ServerMetricRow, error) {
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
	if t == 0 {
		t = s.Now()
	}
	if resp.StatusCode == http.StatusNotFound {
		return nil, fmt.Errorf("%s: %w", s.URL, ErrNoMetrics)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: HTTP %d", s.URL, resp.StatusCode)
	}
	samples, err := promtext.Parse(io.LimitReader(resp.Body, maxMetricsBytes), t)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.URL, err)
	}
	rows := make([]rundir.ServerMetricRow, len(samples))
	for i, sm := range samples {
		rows[i] = rundir.ServerMetricRow(sm)
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
		s.count(ctx, err)
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

// count records one scrape's outcome for Stats.
func (s *Scraper) count(ctx context.Context, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scrapes++
	if err != nil && ctx.Err() == nil {
		s.failures++
		s.lastErr = err
	}
}

// ScrapeSet scrapes several servers (the replicas of one sweep) in the same
// ticks: every row of a tick carries the tick's time, whichever server it is
// from and however long that server took to answer, so the analyzer can add
// the replicas' gauges scrape by scrape.
type ScrapeSet struct {
	// Scrapers are the servers, in replica order; their URL, Client and
	// Header are used, their Interval, Now and Sink are not.
	Scrapers []*Scraper
	Interval time.Duration
	Now      func() int64
	// Sink receives each server's rows of a tick, with Replica set to the
	// server's index in Scrapers.
	Sink func(replica int, rows []rundir.ServerMetricRow)
	// NoMetrics is told, once, of each server that has no /metrics (it is
	// not scraped again).
	NoMetrics func(replica int, err error)
}

// Run scrapes every Interval until ctx ends or no server is left.
func (s *ScrapeSet) Run(ctx context.Context) {
	interval := s.Interval
	if interval <= 0 {
		interval = DefaultScrapeInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	gone := make([]bool, len(s.Scrapers))
	for {
		t := s.Now()
		var wg sync.WaitGroup
		var mu sync.Mutex
		left := 0
		for i, sc := range s.Scrapers {
			if gone[i] {
				continue
			}
			left++
			wg.Add(1)
			go func() {
				defer wg.Done()
				sctx, cancel := context.WithTimeout(ctx, interval*5)
				rows, err := sc.scrapeAt(sctx, t)
				cancel()
				sc.count(ctx, err)
				mu.Lock()
				defer mu.Unlock()
				if errors.Is(err, ErrNoMetrics) {
					gone[i] = true
					if s.NoMetrics != nil {
						s.NoMetrics(i, err)
					}
					return
				}
				if err == nil && s.Sink != nil {
					r := int32(i)
					for j := range rows {
						rows[j].Replica = &r
					}
					s.Sink(i, rows)
				}
			}()
		}
		wg.Wait()
		if left == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
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
