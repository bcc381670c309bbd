package rundir

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestManifestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	level := 3
	m := &Manifest{
		HeadroomVersion: "v0.1.0",
		Kinds:           []string{KindSweep},
		StartTime:       time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
		Host:            Host{Hostname: "box", CPUs: 16},
		GPUs:            []GPU{{Index: 0, Name: "NVIDIA H200", MemoryBytes: 150754820096, Driver: "580.159.04"}},
		Engine:          &Engine{Name: "vllm", Version: "0.11.0", Flags: []string{"--max-model-len", "4096"}},
		Workload:        &Workload{Endpoint: "completions", Prompt: Dist{Kind: "fixed", Mean: 512}, Levels: []int{1, 2, 4}, Seed: 42},
		Stopped:         &Stopped{Reason: "interrupted", Level: &level, Time: time.Date(2026, 11, 30, 12, 5, 0, 0, time.UTC)},
	}
	r, err := Create(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	if r.Manifest.FormatVersion != FormatVersion || r.Manifest.Complete {
		t.Fatalf("Create: version %d complete %v", r.Manifest.FormatVersion, r.Manifest.Complete)
	}
	got, err := ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Engine.Flags[1] != "4096" || got.GPUs[0].Name != "NVIDIA H200" || *got.Stopped.Level != 3 ||
		!got.StartTime.Equal(m.StartTime) || got.Workload.Levels[2] != 4 || !got.HasKind(KindSweep) {
		t.Fatalf("read back %+v", got)
	}
	if err := r.Finish(nil); err != nil {
		t.Fatal(err)
	}
	got, _ = ReadManifest(dir)
	if !got.Complete || got.Stopped != nil || got.EndTime.IsZero() {
		t.Fatalf("after Finish(nil): complete %v stopped %v end %v", got.Complete, got.Stopped, got.EndTime)
	}
}

// A manifest written by a newer headroom of the same format version may
// carry fields this one does not know; rewriting must keep them, at any depth,
// while fields this version knows follow the struct.
func TestManifestKeepsUnknownFields(t *testing.T) {
	dir := t.TempDir()
	in := `{
  "format_version": 1,
  "kinds": ["sweep"],
  "start_time": "2026-11-30T12:00:00Z",
  "complete": false,
  "host": {"hostname": "box", "rack": "r7"},
  "engine": {"name": "vllm", "future_knob": {"a": [1, 2]}, "version": "0.9"},
  "probe": {"dtype": "bf16", "peak_flop_per_s": 800, "probe_knob": "x", "validated": true},
  "end_time": "2026-11-30T13:00:00Z",
  "cost_center": 1234567890123456789
}`
	os.WriteFile(filepath.Join(dir, ManifestFile), []byte(in), 0o644)
	r, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	r.Manifest.Engine.Version = "0.10"
	r.Manifest.Probe.PeakFLOPPerS = 900 // a field of the embedded ProbeRoofline
	r.Manifest.EndTime = time.Time{}    // cleared: must disappear, not come back from the old text
	if err := r.SaveManifest(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
	var out map[string]any
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out["cost_center"].(json.Number).String() != "1234567890123456789" {
		t.Errorf("top-level unknown field lost or rounded: %v", out["cost_center"])
	}
	if out["host"].(map[string]any)["rack"] != "r7" {
		t.Errorf("nested unknown field lost: %v", out["host"])
	}
	eng := out["engine"].(map[string]any)
	if eng["version"] != "0.10" || eng["future_knob"] == nil {
		t.Errorf("engine: %v", eng)
	}
	// The probe's embedded fields are known: written once, with the new
	// value, not again from the old text as if unknown.
	if n := strings.Count(string(data), `"peak_flop_per_s"`); n != 1 {
		t.Errorf("peak_flop_per_s written %d times:\n%s", n, data)
	}
	probe := out["probe"].(map[string]any)
	if probe["peak_flop_per_s"].(json.Number).String() != "900" || probe["dtype"] != "bf16" || probe["probe_knob"] != "x" || probe["validated"] != true {
		t.Errorf("probe: %v", probe)
	}
	if _, ok := out["end_time"]; ok {
		t.Errorf("cleared end_time came back: %v", out["end_time"])
	}
}

func TestManifestErrors(t *testing.T) {
	valid := `{"format_version": 1, "kinds": ["probe"], "start_time": "2026-11-30T12:00:00Z", "complete": true, "host": {}}`
	cases := []struct {
		name, content, want string
	}{
		{"truncated", valid[:40], "truncated"},
		{"empty", "", "empty"},
		{"syntax", "{\n\"format_version\": 1,,\n}", "line 2"},
		{"wrong type", `{"format_version": "one"}`, "line 1"},
		{"newer", `{"format_version": 99}`, "newer than this headroom understands"},
		{"not headroom", `{"gpu": "NVIDIA H200"}`, "format_version is missing"},
		{"trailing", valid + "{}", "trailing data"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, ManifestFile)
			os.WriteFile(path, []byte(c.content), 0o644)
			_, err := Open(dir)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.Contains(msg, path) || !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
				t.Fatalf("want one line naming %s with %q, got %q", path, c.want, msg)
			}
		})
	}
}

func TestCreateRefusesNonEmptyDir(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x"), nil, 0o644)
	if _, err := Create(dir, &Manifest{}); err == nil {
		t.Fatal("Create into a non-empty directory succeeded")
	}
}

func FuzzDecodeManifest(f *testing.F) {
	f.Add([]byte(`{"format_version": 1, "kinds": ["probe"], "start_time": "2026-11-30T12:00:00Z", "host": {"x": 1}}`))
	f.Add([]byte(`{"format_version": 1, "engine": {"name": "v", "flags": ["a"]}, "gpus": [{"index": 0}]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeManifest(data)
		if err != nil {
			return
		}
		out, err := EncodeManifest(m)
		if err != nil {
			t.Fatalf("decoded manifest does not encode: %v", err)
		}
		if _, err := DecodeManifest(out); err != nil {
			t.Fatalf("re-encoded manifest does not decode: %v\n%s", err, out)
		}
	})
}

func TestDistString(t *testing.T) {
	for _, tt := range []struct {
		d    Dist
		want string
	}{
		{Dist{}, ""},
		{Dist{Kind: "fixed", Mean: 512}, "fixed 512"},
		{Dist{Kind: "normal", Mean: 512, StdDev: 128.256}, "normal 512 ± 128.26"},
		{Dist{Kind: "uniform", Mean: 512, Min: 256, Max: 768}, "uniform 512 [256, 768]"},
		{Dist{Kind: "lognormal", Mean: 512.5, StdDev: 128, Min: 64, Max: 2048}, "lognormal 512.5 ± 128 [64, 2048]"},
		{Dist{Kind: "dataset", Mean: 212}, "dataset 212"},
		{Dist{Mean: 300}, "300"},
	} {
		if got := tt.d.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.d, got, tt.want)
		}
	}
}
