package analyze

import (
	"reflect"
	"strings"
	"testing"
)

// ParseSLO reads the grammar of package slo into analyze's types.
func TestParseSLOConverts(t *testing.T) {
	t.Parallel()
	got, err := ParseSLO("ttft_p99=2s, e2e_p50=1.5s")
	if err != nil || got.Spec != "ttft_p99=2s, e2e_p50=1.5s" || !reflect.DeepEqual(got.Bounds, []SLOBound{{Metric: "ttft", Percentile: 99, MaxS: 2}, {Metric: "e2e", Percentile: 50, MaxS: 1.5}}) {
		t.Errorf("got %+v, %v", got, err)
	}
	if _, err := ParseSLO("ttft=2s"); err == nil || !strings.Contains(err.Error(), "METRIC_pPCT") {
		t.Errorf("err %v", err)
	}
	if s := got.Bounds[0].String(); s != "ttft_p99=2s" {
		t.Errorf("String() = %q", s)
	}
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
