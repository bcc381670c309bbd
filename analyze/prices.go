package analyze

import (
	"bytes"
	_ "embed"
	"fmt"
	"os"

	"go.yaml.in/yaml/v3"
)

// APIPrice is one hosted-API price row.
type APIPrice struct {
	Model            string  `json:"model" yaml:"model"`
	ModelID          string  `json:"model_id,omitempty" yaml:"model_id"`
	Provider         string  `json:"provider" yaml:"provider"`
	InputUSDPerMTok  float64 `json:"input_usd_per_mtok" yaml:"input_usd_per_mtok"`
	OutputUSDPerMTok float64 `json:"output_usd_per_mtok" yaml:"output_usd_per_mtok"`
	PriceSource      `yaml:",inline"`
	// ActiveParamsB is the model's active parameters per token, in
	// billions (all of them for a dense model); 0 when not stated. It
	// finds the nearest API model for a run whose own model has no price.
	ActiveParamsB float64 `json:"active_params_b,omitempty" yaml:"active_params_b"`
}

// GPUHourPrice is a named hourly GPU price, for --gpu-preset.
type GPUHourPrice struct {
	Name          string  `json:"name" yaml:"name"`
	GPU           string  `json:"gpu" yaml:"gpu"`
	Provider      string  `json:"provider" yaml:"provider"`
	USDPerGPUHour float64 `json:"usd_per_gpu_hour" yaml:"usd_per_gpu_hour"`
	PriceSource   `yaml:",inline"`
}

// PriceSource is where a price row comes from and when it was read: its
// fields stand in the row, as in prices.yaml.
type PriceSource struct {
	Date      string `json:"date" yaml:"date"`
	SourceURL string `json:"source_url" yaml:"source_url"`
	Verified  bool   `json:"verified" yaml:"verified"`
	Note      string `json:"note,omitempty" yaml:"note"`
}

// GPUPower is a board power to assume when none was measured.
type GPUPower struct {
	Match    string  `json:"match" yaml:"match"`
	Watts    float64 `json:"watts" yaml:"watts"`
	Source   string  `json:"source" yaml:"source"`
	Verified *bool   `json:"verified,omitempty" yaml:"verified"`
}

// PriceTable is the content of prices.yaml.
type PriceTable struct {
	APIs     []APIPrice     `json:"apis" yaml:"apis"`
	GPUHours []GPUHourPrice `json:"gpu_hours" yaml:"gpu_hours"`
	GPUPower []GPUPower     `json:"gpu_power" yaml:"gpu_power"`
}

//go:embed prices.yaml
var builtinPrices []byte

// BuiltinPricesYAML is the price table shipped with headroom, as the YAML
// file it is kept in (with its comments), to start a --prices file from.
func BuiltinPricesYAML() []byte { return append([]byte(nil), builtinPrices...) }

// BuiltinPrices returns the price table shipped with headroom.
func BuiltinPrices() (*PriceTable, error) {
	t, err := ParsePrices(builtinPrices)
	if err != nil {
		return nil, fmt.Errorf("built-in prices.yaml: %w", err)
	}
	return t, nil
}

// ParsePrices reads a price table. Unknown fields are errors, so a typo in
// a user's file is reported rather than silently ignored.
func ParsePrices(data []byte) (*PriceTable, error) {
	var t PriceTable
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&t); err != nil {
		return nil, err
	}
	for i, p := range t.APIs {
		switch {
		case p.Model == "" || p.Provider == "":
			return nil, fmt.Errorf("apis[%d]: model and provider are required", i)
		case p.InputUSDPerMTok < 0 || p.OutputUSDPerMTok <= 0:
			return nil, fmt.Errorf("apis[%d] (%s): input_usd_per_mtok must be ≥ 0 and output_usd_per_mtok > 0", i, p.Model)
		case p.Date == "" || p.SourceURL == "":
			return nil, fmt.Errorf("apis[%d] (%s): date and source_url are required: a price without them cannot be checked", i, p.Model)
		}
	}
	for i, g := range t.GPUHours {
		if g.Name == "" || g.USDPerGPUHour <= 0 || g.Date == "" || g.SourceURL == "" {
			return nil, fmt.Errorf("gpu_hours[%d]: name, usd_per_gpu_hour > 0, date and source_url are required", i)
		}
	}
	for i, g := range t.GPUPower {
		if g.Match == "" || g.Watts <= 0 || g.Source == "" {
			return nil, fmt.Errorf("gpu_power[%d]: match, watts > 0 and source are required", i)
		}
	}
	return &t, nil
}

// LoadPrices returns the built-in table with the sections of the file at
// path (if any) in place of the built-in ones.
func LoadPrices(path string) (*PriceTable, string, error) {
	t, err := BuiltinPrices()
	if err != nil || path == "" {
		return t, "built in", err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("--prices: %w", err)
	}
	u, err := ParsePrices(data)
	if err != nil {
		return nil, "", fmt.Errorf("--prices %s: %w", path, err)
	}
	if u.APIs != nil {
		t.APIs = u.APIs
	}
	if u.GPUHours != nil {
		t.GPUHours = u.GPUHours
	}
	if u.GPUPower != nil {
		t.GPUPower = u.GPUPower
	}
	return t, path, nil
}

// GPUPreset finds a named hourly price.
func (t *PriceTable) GPUPreset(name string) (GPUHourPrice, error) {
	var names []string
	for _, g := range t.GPUHours {
		if g.Name == name {
			return g, nil
		}
		names = append(names, g.Name)
	}
	return GPUHourPrice{}, fmt.Errorf("--gpu-preset %q: unknown; known presets: %v (or give --gpu-hour-usd)", name, names)
}
