package clocksync

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func nowNS() int64 { return time.Now().UnixNano() }

// A server whose clock runs a known amount ahead or behind: the measured
// offset must be that amount, within the uncertainty it states.
func TestServerDateFindsAKnownSkew(t *testing.T) {
	for _, skew := range []time.Duration{3700 * time.Millisecond, -1250 * time.Millisecond, 0} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Date", time.Now().Add(skew).UTC().Format(http.TimeFormat))
			w.Write([]byte(`{"data":[]}`))
		}))
		off := ServerDate(context.Background(), srv.Client(), srv.URL+"/v1/models", nil, nowNS)
		srv.Close()
		if !off.Known {
			t.Fatalf("skew %v: not measured: %s", skew, off.Error)
		}
		want := -skew.Seconds() // local − reference
		// The bracket holds the true edge; allow 1 ms for the formatting
		// of the header after the clock was read.
		if got := off.OffsetS; math.Abs(got-want) > off.UncertaintyS+0.001 {
			t.Errorf("skew %v: offset %.4f s ± %.4f, want %.4f", skew, got, off.UncertaintyS, want)
		}
		if off.UncertaintyS > 0.05 {
			t.Errorf("skew %v: uncertainty %.4f s on loopback, want a bracket of about a round trip", skew, off.UncertaintyS)
		}
		t.Logf("skew %v: offset %.4f s ± %.4f s from %d requests", skew, off.OffsetS, off.UncertaintyS, off.Samples)
	}
}

func TestServerDateWithoutDateHeader(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Date"] = nil // net/http then sends none
	}))
	defer srv.Close()
	off := ServerDate(context.Background(), srv.Client(), srv.URL, nil, nowNS)
	if off.Known || off.Error == "" {
		t.Fatalf("got %+v, want unknown with a reason", off)
	}
}
