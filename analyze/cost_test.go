package analyze

import (
	"os"
	"path/filepath"
	"slices"
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
	f.gpuEveryLevel(90, 500)
	set := testSettings()
	set.SLO, _ = ParseSLO("tpot_p99=30ms")
	set.Cost = CostSettings{GPUHourUSD: 2, KWhUSD: 0.2, Utilization: 0.5, Prices: &PriceTable{APIs: []APIPrice{
		{Model: "Llama 3.1 8B", ModelID: "meta-llama/Meta-Llama-3.1-8B-Instruct", Provider: "Acme", InputUSDPerMTok: 0.1, OutputUSDPerMTok: 0.2, PriceSource: PriceSource{Date: "2026-11-30", SourceURL: "https://example.invalid", Verified: true}},
		{Model: "Llama 3.3 70B", ModelID: "meta-llama/Llama-3.3-70B-Instruct", Provider: "Acme", InputUSDPerMTok: 1, OutputUSDPerMTok: 2, PriceSource: PriceSource{Date: "2026-11-30", SourceURL: "https://example.invalid", Verified: true}},
	}}}
	rep, err := Analyze([]*Run{f.write()}, set)
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Runs[0].Sweep.Cost
	if len(c.Points) != 2 || c.Points[0].Name != CostPeak || c.Points[1].Name != CostSLO || c.Points[1].Concurrency != 8 || c.GPUs != 1 {
		t.Fatalf("points %+v", c.Points)
	}
	// The notes are data: the utilization as a number, worded by render.
	if !slices.Equal(c.Notes, []CostNote{{Kind: CostNoteUtilization, Utilization: 0.5}}) {
		t.Errorf("notes %+v", c.Notes)
	}
	for _, p := range c.Points {
		hourly := 2 + 500.0/1000*0.2
		out := wantTokPerS(p.Concurrency)
		total := out * (512 + 16) / 16
		if !near(p.USDPerHour, hourly, 1e-12) || !near(p.PowerW, 500, 1e-12) || p.PowerFrom != PowerMeasured || p.EnergyFrom != EnergyFromPower ||
			!near(p.JPerOutputToken, 500/out, 1e-9) || !near(p.KWhPerMTokOutput, 500/out/3.6, 1e-9) {
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
		if p.Nearest == nil || p.Nearest.API.Model != "Llama 3.1 8B" || p.Nearest.Match != MatchSameModel {
			t.Errorf("%s: quoted against %+v, want the same model's price", p.Name, p.Nearest)
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
	if len(c.Points) != 0 || !slices.Equal(c.Missing, []string{CostNeedsGPUPrice}) {
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
	if pt := c.Points[0]; pt.PowerW != 700 || pt.PowerFrom != PowerBoard || pt.PowerPerGPUW != 700 || pt.PowerMatch == "" || pt.PowerSource == "" {
		t.Errorf("power %v from %+v", pt.PowerW, pt)
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

// Every cost point quotes its own nearest API price: the same model's
// when the table has it (the cheapest of several), else the model nearest
// in active parameters, labelled so; never simply the table's first row.
// (Every run but the headline one used to quote the first row, a 70B
// price for an 8B run.)
func TestNearestAPIPrice(t *testing.T) {
	t.Parallel()
	row := func(model, id string, out, active float64) APIPrice {
		return APIPrice{Model: model, ModelID: id, Provider: "Acme", InputUSDPerMTok: out, OutputUSDPerMTok: out, PriceSource: PriceSource{Date: "2026-11-30", SourceURL: "https://example.invalid", Verified: true}, ActiveParamsB: active}
	}
	big := row("Llama 3.3 70B", "meta-llama/Llama-3.3-70B-Instruct", 1, 70.6)
	small := row("Llama 3.1 8B", "meta-llama/Meta-Llama-3.1-8B-Instruct", 0.2, 8.03)
	cheap := row("Llama 3.1 8B Instant", "llama-3.1-8b-instant", 0.1, 8.03)
	qwen := row("Qwen 2.5 7B", "qwen/qwen-2.5-7b-instruct", 0.3, 7.6)
	for _, tt := range []struct {
		name, model string
		apis        []APIPrice
		want, match string
	}{
		{"same model, cheapest of two", "meta-llama/Llama-3.1-8B-Instruct", []APIPrice{big, small, cheap}, "Llama 3.1 8B Instant", MatchSameModel},
		{"no row for the model: nearest by size", "mistralai/Mistral-7B-Instruct-v0.3", []APIPrice{big, small, qwen}, "Qwen 2.5 7B", MatchNearestParams},
		{"a 70B run", "some-org/custom-72b-chat", []APIPrice{small, big}, "Llama 3.3 70B", MatchNearestParams},
		{"no size known", "my-model", []APIPrice{big, small}, "", ""},
	} {
		f := kneeSweep(t)
		f.manifest.Engine.Model = tt.model
		set := testSettings()
		set.Cost = CostSettings{GPUHourUSD: 2, Prices: &PriceTable{APIs: tt.apis}}
		c := analyzeOne(t, f.write(), set).Cost
		if len(c.Points) == 0 {
			t.Fatalf("%s: no cost points: %+v", tt.name, c)
		}
		for _, p := range c.Points {
			switch {
			case tt.want == "" && p.Nearest != nil:
				t.Errorf("%s: quoted %s, want none", tt.name, p.Nearest.API.Model)
			case tt.want != "" && (p.Nearest == nil || p.Nearest.API.Model != tt.want || p.Nearest.Match != tt.match):
				t.Errorf("%s: quoted %+v, want %s (%s)", tt.name, p.Nearest, tt.want, tt.match)
			}
		}
	}
}

// A run headroom recorded against a server on the same machine, which has
// no GPU, is priced per host hour: not as one GPU. (It used to be priced
// as 1 GPU at the GPU-hour price.)
func TestCPUOnlyRunPricedPerHost(t *testing.T) {
	t.Parallel()
	f := kneeSweep(t)
	f.manifest.GPUs = nil
	f.manifest.Engine.BaseURL = "http://127.0.0.1:8000"
	set := testSettings()
	set.Cost = CostSettings{GPUHourUSD: 2}
	c := analyzeOne(t, f.write(), set).Cost
	if c.Basis != CostPerHost || len(c.Points) != 0 || !slices.Equal(c.Missing, []string{CostNeedsHostPrice}) {
		t.Errorf("a CPU-only run with a GPU price: %+v", c)
	}
	set.Cost = CostSettings{HostHourUSD: 0.5}
	c = analyzeOne(t, f.write(), set).Cost
	if c.Basis != CostPerHost || c.GPUs != 0 || len(c.Points) == 0 {
		t.Fatalf("a CPU-only run with a host price: %+v", c)
	}
	for _, p := range c.Points {
		if p.USDPerHour != 0.5 || p.PowerW != 0 {
			t.Errorf("%s: $%v/h, %v W; want the host's $0.50/h and no power", p.Name, p.USDPerHour, p.PowerW)
		}
	}
	if !slices.Contains(c.Notes, CostNote{Kind: CostNoteHostPower}) {
		t.Errorf("no RAPL: the host's power must be said not counted: %+v", c.Notes)
	}
	// With the host's RAPL counters the CPU's energy is measured and priced.
	for i := range f.levels {
		f.raplLevel(i, 150)
	}
	set.Cost = CostSettings{HostHourUSD: 0.5, KWhUSD: 0.2}
	c = analyzeOne(t, f.write(), set).Cost
	for _, p := range c.Points {
		out := wantTokPerS(p.Concurrency)
		if !near(p.PowerW, 150, 1e-6) || p.PowerFrom != PowerMeasured || p.EnergyFrom != EnergyFromRAPL || !near(p.USDPerHour, 0.5+0.15*0.2, 1e-6) ||
			!near(p.JPerOutputToken, 150/out, 1e-6) {
			t.Errorf("%s with RAPL: %+v", p.Name, p)
		}
	}
	if slices.Contains(c.Notes, CostNote{Kind: CostNoteHostPower}) {
		t.Errorf("RAPL measured: no 'not counted' note: %+v", c.Notes)
	}
	f.cpuEnergy = nil
	// The same run against a server elsewhere: its GPUs are unknown, not
	// absent, so it is priced per GPU (with a note).
	f.manifest.Engine.BaseURL = "http://gpu-box.example:8000"
	set.Cost = CostSettings{GPUHourUSD: 2}
	if c := analyzeOne(t, f.write(), set).Cost; c.Basis != CostPerGPU || c.GPUs != 1 ||
		!slices.Contains(c.Notes, CostNote{Kind: CostNoteNoKWh}) {
		t.Errorf("a remote server: %+v", c)
	}
}
