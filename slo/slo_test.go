package slo

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec    string
		want    []Bound
		wantErr string
	}{
		{"ttft_p99=2s,tpot_p99=100ms", []Bound{{"ttft", 99, 2}, {"tpot", 99, 0.1}}, ""},
		{" e2e_p50=1.5s , itl_p99.9=50ms ", []Bound{{"e2e", 50, 1.5}, {"itl", 99.9, 0.05}}, ""},
		{"TTFT_P90=250ms", []Bound{{"ttft", 90, 0.25}}, ""},
		{"ttft_p99=2s,ttft_p50=500ms", []Bound{{"ttft", 99, 2}, {"ttft", 50, 0.5}}, ""},
		{"", nil, "no bounds"},
		{"ttft=2s", nil, "METRIC_pPCT"},
		{"ttft_p99", nil, "expected METRIC_pPCT=DURATION"},
		{"latency_p99=2s", nil, "one of ttft"},
		{"ttft_p100=2s", nil, "between 0 and 100"},
		{"ttft_p99=2", nil, "positive duration"},
		{"ttft_p99=-1s", nil, "positive duration"},
		{"ttft_p99=1s,ttft_p99=2s", nil, "twice"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			s, err := Parse(tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Bounds, tt.want) {
				t.Errorf("got %+v, want %+v", s.Bounds, tt.want)
			}
		})
	}
	s, _ := Parse("tpot_p99=100ms")
	if s := s.Bounds[0].String(); s != "tpot_p99=100ms" {
		t.Errorf("String() = %q", s)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"ttft_p99=2s,tpot_p99=100ms", "e2e_p50=1.5s", "itl_p99.9=50ms", "ttft=2s", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := Parse(spec)
		if err != nil {
			return
		}
		for _, b := range s.Bounds {
			if !slices.Contains(Metrics, b.Metric) || !(b.Percentile > 0 && b.Percentile < 100) || !(b.MaxS > 0) {
				t.Fatalf("%q parsed to an invalid bound %+v", spec, b)
			}
			// A bound's own rendering parses back to the same bound.
			again, err := Parse(b.String())
			if err != nil || again.Bounds[0].Metric != b.Metric || again.Bounds[0].Percentile != b.Percentile {
				t.Fatalf("%+v does not round-trip through %q: %v", b, b.String(), err)
			}
		}
	})
}
