package analyze

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuiltinPricesAreDatedAndSourced(t *testing.T) {
	t.Parallel()
	p, err := BuiltinPrices()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.APIs) == 0 || len(p.GPUHours) == 0 || len(p.GPUPower) == 0 {
		t.Fatalf("empty sections: %+v", p)
	}
	for _, a := range p.APIs {
		if !strings.HasPrefix(a.SourceURL, "https://") || len(a.Date) != len("2006-01-02") {
			t.Errorf("%s %s: source %q date %q", a.Provider, a.Model, a.SourceURL, a.Date)
		}
	}
}

func TestParsePricesRejects(t *testing.T) {
	t.Parallel()
	for name, y := range map[string]string{
		"unknown field": "apis:\n  - model: m\n    provider: p\n    output_usd_per_mtok: 1\n    date: 2026-01-01\n    source_url: https://x\n    outptu: 2\n",
		"no source":     "apis:\n  - model: m\n    provider: p\n    output_usd_per_mtok: 1\n    date: 2026-01-01\n",
		"no price":      "apis:\n  - model: m\n    provider: p\n    date: 2026-01-01\n    source_url: https://x\n",
		"bad preset":    "gpu_hours:\n  - name: x\n    usd_per_gpu_hour: 0\n",
		"not yaml":      "apis: [",
	} {
		if _, err := ParsePrices([]byte(y)); err == nil {
			t.Errorf("%s: want an error", name)
		}
	}
}

func FuzzParsePrices(f *testing.F) {
	f.Add(builtinPrices)
	f.Add([]byte("apis: []\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParsePrices(data)
		if err != nil {
			return
		}
		for _, a := range p.APIs {
			if a.OutputUSDPerMTok <= 0 || a.SourceURL == "" || a.Date == "" {
				t.Fatalf("accepted an unusable row %+v", a)
			}
		}
	})
}

// The user's file replaces the sections it has and keeps the others.
func TestLoadPricesOverride(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "p.yaml")
	y := "apis:\n  - model: Test 8B\n    model_id: acme/llama-3.1-8b\n    provider: Acme\n    input_usd_per_mtok: 0.1\n    output_usd_per_mtok: 0.2\n    date: 2026-11-30\n    source_url: https://example.invalid/prices\n    verified: true\n"
	if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	p, src, err := LoadPrices(path)
	if err != nil {
		t.Fatal(err)
	}
	builtin, _ := BuiltinPrices()
	if src != path || len(p.APIs) != 1 || p.APIs[0].Provider != "Acme" || len(p.GPUHours) != len(builtin.GPUHours) {
		t.Errorf("override: %s %+v", src, p)
	}
	if _, err := p.GPUPreset("no-such"); err == nil || !strings.Contains(err.Error(), "lambda-h100-sxm") {
		t.Errorf("unknown preset error %v does not list the known ones", err)
	}
}

// Cost at the peak and at the SLO point, with measured power, against an
// API price given for the same model; all inputs constructed.
func TestCostPerMillionTokens(t *testing.T) {
	t.Parallel()
	f := kneeSweep(t)
	for i := range f.levels {
		f.gpuLevel(i, 90, 500)
	}
	set := testSettings()
	set.SLO, _ = ParseSLO("tpot_p99=30ms")
	set.Cost = CostSettings{GPUHourUSD: 2, KWhUSD: 0.2, Utilization: 0.5, Prices: &PriceTable{APIs: []APIPrice{
		{Model: "Llama 3.1 8B", ModelID: "meta-llama/Meta-Llama-3.1-8B-Instruct", Provider: "Acme", InputUSDPerMTok: 0.1, OutputUSDPerMTok: 0.2, Date: "2026-11-30", SourceURL: "https://example.invalid", Verified: true},
		{Model: "Llama 3.3 70B", ModelID: "meta-llama/Llama-3.3-70B-Instruct", Provider: "Acme", InputUSDPerMTok: 1, OutputUSDPerMTok: 2, Date: "2026-11-30", SourceURL: "https://example.invalid", Verified: true},
	}}}
	rep, err := Analyze([]*Run{f.write()}, set)
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Runs[0].Sweep.Cost
	if len(c.Points) != 2 || c.Points[0].Name != CostPeak || c.Points[1].Name != CostSLO || c.Points[1].Concurrency != 8 || c.GPUs != 1 {
		t.Fatalf("points %+v", c.Points)
	}
	for _, p := range c.Points {
		hourly := 2 + 500.0/1000*0.2
		out := wantTokPerS(p.Concurrency)
		total := out * (512 + 16) / 16
		if !near(p.USDPerHour, hourly, 1e-12) || p.PowerW != 500 || !strings.HasPrefix(p.PowerFrom, "measured") {
			t.Errorf("%s: $%v/h, %v W (%s)", p.Name, p.USDPerHour, p.PowerW, p.PowerFrom)
		}
		if want := hourly / (out * 3600 * 0.5) * 1e6; !near(p.USDPerMTokOutput, want, 1e-9) {
			t.Errorf("%s: $%v/Mtok output, want %v", p.Name, p.USDPerMTokOutput, want)
		}
		if want := hourly / (total * 3600 * 0.5) * 1e6; !near(p.USDPerMTokBlended, want, 1e-9) {
			t.Errorf("%s: $%v/Mtok blended, want %v", p.Name, p.USDPerMTokBlended, want)
		}
		cmp := p.Comparisons[0]
		apiMix := (512*0.1 + 16*0.2) / 528
		if !cmp.SameModel || p.Comparisons[1].SameModel || !near(cmp.APIUSDPerMTokBlended, apiMix, 1e-9) || !near(cmp.CheaperFactor, apiMix/p.USDPerMTokBlended, 1e-9) {
			t.Errorf("%s: comparison %+v", p.Name, cmp)
		}
		word := "cheaper"
		if cmp.CheaperFactor < 1 {
			word = "dearer"
		}
		if !strings.Contains(cmp.Sentence, word) {
			t.Errorf("sentence %q", cmp.Sentence)
		}
	}
	h := rep.Headline
	if h.CostPoint != CostSLO || h.NearestAPI == nil || h.NearestAPI.API.Model != "Llama 3.1 8B" {
		t.Errorf("headline cost %+v", h)
	}
}

func TestCostWithoutPriceOrPower(t *testing.T) {
	t.Parallel()
	f := kneeSweep(t)
	f.manifest.GPUs[0].PowerLimitW = 0
	set := testSettings()
	c := analyzeOne(t, f.write(), set).Cost
	if len(c.Points) != 0 || len(c.Missing) != 1 || !strings.Contains(c.Missing[0], "--gpu-hour-usd") {
		t.Errorf("no price: %+v", c)
	}
	// Preset with the board power from the price table (H200 row).
	p, _ := BuiltinPrices()
	set.Cost = CostSettings{GPUPreset: "lambda-h100-sxm", Prices: p}
	c = analyzeOne(t, f.write(), set).Cost
	// Two points: the peak, and the operating point of the default SLO.
	if c.Preset == nil || c.USDPerGPUHour != c.Preset.USDPerGPUHour || len(c.Points) != 2 {
		t.Fatalf("preset cost %+v", c)
	}
	if pt := c.Points[0]; pt.PowerW != 700 || !strings.Contains(pt.PowerFrom, "board power") {
		t.Errorf("power %v from %q", pt.PowerW, pt.PowerFrom)
	}
}

func TestSameModel(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		a, b string
		want bool
	}{
		{"meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Meta-Llama-3.1-8B-Instruct Llama 3.1 8B Instruct", true},
		{"meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b-instant", true},
		{"meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.3-70B-Instruct-Turbo", false},
		{"Qwen/Qwen2.5-7B-Instruct", "meta-llama/Llama-3.1-8B-Instruct", false},
		{"random.gguf", "meta-llama/Llama-3.1-8B-Instruct", false},
	} {
		if got := sameModel(tt.a, tt.b); got != tt.want {
			t.Errorf("sameModel(%q, %q) = %v", tt.a, tt.b, got)
		}
	}
}
