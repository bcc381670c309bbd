package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

func TestScraper(t *testing.T) {
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n++
		fmt.Fprintf(w, "# TYPE g gauge\ng %d\n", n)
	}))
	defer srv.Close()
	var got []rundir.ServerMetricRow
	s := &Scraper{URL: srv.URL, Interval: 20 * time.Millisecond, Now: func() int64 { return time.Now().UnixNano() },
		Sink: func(rows []rundir.ServerMetricRow) { got = append(got, rows...) }}
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if len(got) < 3 || got[0].Value != 1 || got[1].Value != 2 || got[1].TimeNS <= got[0].TimeNS {
		t.Errorf("rows %+v", got)
	}

	missing := httptest.NewServer(http.NotFoundHandler())
	defer missing.Close()
	s = &Scraper{URL: missing.URL + "/metrics", Now: func() int64 { return 0 }}
	if err := s.Run(context.Background()); !errors.Is(err, ErrNoMetrics) {
		t.Errorf("no /metrics: err %v", err)
	}
}
