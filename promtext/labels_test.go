package promtext

import (
	"math"
	"strconv"
	"testing"
)

func TestCanonicalLabelsRoundTrip(t *testing.T) {
	in := map[string]string{"model_name": `a"b\c`, "engine": "0", "le": "0.5", "x": "line\nbreak"}
	s := CanonicalLabels(in)
	want := `engine="0",le="0.5",model_name="a\"b\\c",x="line\nbreak"`
	if s != want {
		t.Fatalf("CanonicalLabels = %s, want %s", s, want)
	}
	back, err := ParseLabels(s)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(in) {
		t.Fatalf("round trip lost labels: %v", back)
	}
	for k, v := range in {
		if back[k] != v {
			t.Errorf("label %s = %q, want %q", k, back[k], v)
		}
	}
	if CanonicalLabels(nil) != "" {
		t.Error("no labels must encode as the empty string")
	}
	for _, bad := range []string{`a`, `a=b`, `a="b`, `a="b"x`, `="b"`} {
		if _, err := ParseLabels(bad); err == nil {
			t.Errorf("ParseLabels(%q) accepted a malformed label string", bad)
		}
	}
}

// FormatLabelFloat spells bounds as Prometheus 3 normalizes them on
// ingestion (its migration guide: le="1" is ingested as le="1.0"), and
// every spelling reads back as the same number, old runs' le="1" included.
func TestFormatLabelFloat(t *testing.T) {
	for _, tt := range []struct {
		in   float64
		want string
	}{
		{1, "1.0"}, {0, "0.0"}, {-1, "-1.0"}, {0.25, "0.25"}, {250, "250.0"}, {0.001, "0.001"},
		{1e21, "1e+21"}, {1.5e-7, "1.5e-07"}, {math.Inf(1), "+Inf"}, {math.Inf(-1), "-Inf"}, {math.NaN(), "NaN"},
	} {
		got := FormatLabelFloat(tt.in)
		if got != tt.want {
			t.Errorf("FormatLabelFloat(%v) = %q, want %q", tt.in, got, tt.want)
		}
		back, err := strconv.ParseFloat(got, 64)
		if err != nil || !(back == tt.in || math.IsNaN(back) && math.IsNaN(tt.in)) {
			t.Errorf("%q reads back as %v, %v", got, back, err)
		}
	}
	if v, err := strconv.ParseFloat("1", 64); err != nil || v != 1 {
		t.Errorf("an old run's le=\"1\" reads as %v, %v", v, err)
	}
}

func FuzzParseLabels(f *testing.F) {
	f.Add(`engine="0",le="0.5",model_name="a\"b\\c"`)
	f.Add(``)
	f.Add(`a="b`)
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseLabels(s)
		if err != nil {
			return
		}
		back, err := ParseLabels(CanonicalLabels(m))
		if err != nil || len(back) != len(m) {
			t.Fatalf("canonical form of %q does not read back: %v", s, err)
		}
		for k, v := range m {
			if back[k] != v {
				t.Fatalf("label %q changed: %q -> %q", k, v, back[k])
			}
		}
	})
}
