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
	// Three scrapes, however long a loaded machine takes to make them; a
	// scrape that timed out still counted on the server, so the values
	// rise but may skip.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := &Scraper{URL: srv.URL, Interval: 20 * time.Millisecond, Now: func() int64 { return time.Now().UnixNano() },
		Sink: func(rows []rundir.ServerMetricRow) {
			if got = append(got, rows...); len(got) >= 3 {
				cancel()
			}
		}}
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if len(got) < 3 || got[0].Value < 1 {
		t.Fatalf("rows %+v", got)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Value <= got[i-1].Value || got[i].TimeNS <= got[i-1].TimeNS {
			t.Errorf("rows %+v: values and times must rise", got)
		}
	}

	missing := httptest.NewServer(http.NotFoundHandler())
	defer missing.Close()
	s = &Scraper{URL: missing.URL + "/metrics", Now: func() int64 { return 0 }}
	if err := s.Run(context.Background()); !errors.Is(err, ErrNoMetrics) {
		t.Errorf("no /metrics: err %v", err)
	}
}
