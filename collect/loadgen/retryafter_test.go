package loadgen

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		v    string
		want time.Duration
		ok   bool
	}{
		{"2", 2 * time.Second, true},
		{" 0 ", 0, true},
		{"3600", maxRetryAfter, true},
		{"9223372036854775807", maxRetryAfter, true},
		{now.Add(5 * time.Second).Format(http.TimeFormat), 5 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
		{"-1", 0, false},
		{"soon", 0, false},
		{"", 0, false},
	} {
		h := http.Header{}
		if tt.v != "" {
			h.Set("Retry-After", tt.v)
		}
		if got, ok := retryAfter(h, now); got != tt.want || ok != tt.ok {
			t.Errorf("Retry-After %q: %v %v, want %v %v", tt.v, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzRetryAfter: whatever a server sends as Retry-After, the wait is
// between 0 and maxRetryAfter.
func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"2", "Wed, 21 Oct 2015 07:28:00 GMT", "-3", "99999999999999999999", "1.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{"Retry-After": []string{v}}
		if d, ok := retryAfter(h, time.Now()); ok && (d < 0 || d > maxRetryAfter) {
			t.Fatalf("Retry-After %q: wait %v", v, d)
		}
	})
}
