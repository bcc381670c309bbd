package analyze

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseSLO(t *testing.T) {
	t.Parallel()
	tests := []struct {
		spec    string
		want    []SLOBound
		wantErr string
	}{
		{"ttft_p99=2s,tpot_p99=100ms", []SLOBound{{"ttft", 99, 2}, {"tpot", 99, 0.1}}, ""},
		{" e2e_p50=1.5s , itl_p99.9=50ms ", []SLOBound{{"e2e", 50, 1.5}, {"itl", 99.9, 0.05}}, ""},
		{"TTFT_P90=250ms", []SLOBound{{"ttft", 90, 0.25}}, ""},
		{"ttft_p99=2s,ttft_p50=500ms", []SLOBound{{"ttft", 99, 2}, {"ttft", 50, 0.5}}, ""},
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
			slo, err := ParseSLO(tt.spec)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(slo.Bounds, tt.want) {
				t.Errorf("got %+v, want %+v", slo.Bounds, tt.want)
			}
		})
	}
	slo, _ := ParseSLO("tpot_p99=100ms")
	if s := slo.Bounds[0].String(); s != "tpot_p99=100ms" {
		t.Errorf("String() = %q", s)
	}
}

func FuzzParseSLO(f *testing.F) {
	for _, s := range []string{"ttft_p99=2s,tpot_p99=100ms", "e2e_p50=1.5s", "itl_p99.9=50ms", "ttft=2s", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		slo, err := ParseSLO(spec)
		if err != nil {
			return
		}
		for _, b := range slo.Bounds {
			if !validSLOMetric(b.Metric) || !(b.Percentile > 0 && b.Percentile < 100) || !(b.MaxS > 0) {
				t.Fatalf("%q parsed to an invalid bound %+v", spec, b)
			}
			// A bound's own rendering parses back to the same bound.
			again, err := ParseSLO(b.String())
			if err != nil || again.Bounds[0].Metric != b.Metric || again.Bounds[0].Percentile != b.Percentile {
				t.Fatalf("%+v does not round-trip through %q: %v", b, b.String(), err)
			}
		}
	})
}

func TestParsePercentiles(t *testing.T) {
	t.Parallel()
	got, err := ParsePercentiles("95, p99.9,,75")
	if err != nil || !reflect.DeepEqual(got, []float64{95, 99.9, 75}) {
		t.Errorf("got %v, %v", got, err)
	}
	for _, bad := range []string{"0", "100", "x", "-5"} {
		if _, err := ParsePercentiles(bad); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
	set := Default()
	set.Percentiles = []float64{95, 99, 99.9}
	if got := set.reportedPercentiles(); !reflect.DeepEqual(got, []float64{50, 90, 95, 99, 99.9}) {
		t.Errorf("reported percentiles %v", got)
	}
}

// FuzzParsePercentiles: --percentiles gives numbers strictly between 0 and
// 100 or an error, never a panic.
func FuzzParsePercentiles(f *testing.F) {
	for _, s := range []string{"50,90,99", "p99.9", " 95 , ,p50", "0", "100", "NaN", "1e2", "-5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := ParsePercentiles(s)
		if err != nil {
			return
		}
		for _, p := range ps {
			if !(p > 0 && p < 100) {
				t.Fatalf("%q gave percentile %v", s, p)
			}
		}
	})
}
