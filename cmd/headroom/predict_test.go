package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/analyze"
)

const llamacppData = "../../examples/runs/h200-llamacpp"

func TestPredictCommand(t *testing.T) {
	d := func(name string) string { return filepath.Join(llamacppData, name) }
	out := filepath.Join(t.TempDir(), "p.json")
	code, stdout, stderr := headroom(t, "predict", d("probe"), d("sweep-f16"), "--model-config", d("config-8b-f16.json"),
		"--variant-config", d("config-8b-q4_0.json"), "--measured", d("sweep-q4_0"), "--label", "q4_0",
		"--kv-tokens", "16384", "--gpu-hour-usd", "3.5", "--json", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	for _, want := range []string{"q4_0 predicted from", "+1.4%", "KV cache 16384 tokens: the KV wall from c=16", "(past the KV wall or slot cap)", "+58.2% (past the reference's wall)", "the largest error is 18.5%"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	var p analyze.Prediction
	b, err := os.ReadFile(out)
	if err != nil || json.Unmarshal(b, &p) != nil || len(p.Levels) != 5 || p.KVWallConcurrency != 16 {
		t.Errorf("JSON: %v, %+v", err, p)
	}
	for _, args := range [][]string{
		{"predict", d("probe"), d("sweep-f16")},
		{"predict", d("probe"), d("sweep-f16"), "--model-config", d("config-8b-f16.json"), "--slots", "-1"},
	} {
		if code, _, errs := headroom(t, args...); code != 2 || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, %q", args, code, errs)
		}
	}
}

func TestReportPredictFrom(t *testing.T) {
	d := func(name string) string { return filepath.Join(llamacppData, name) }
	out := t.TempDir()
	code, _, stderr := headroom(t, "report", d("probe"), d("sweep-f16"), d("sweep-q4_0"), "--model-config", d("config-8b-f16.json"),
		"--model-config-for", d("sweep-q4_0")+"="+d("config-8b-q4_0.json"), "--predict-from", d("sweep-f16"), "--format", "md", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "### Predicted against measured") || !strings.Contains(string(md), "| 2 | 3.21 | 1.05 | 4.26 | 4.20 | +1.4% |") {
		t.Errorf("report lacks the prediction of the q4_0 run from the f16 run")
	}
	if code, _, _ := headroom(t, "report", d("sweep-f16"), "--predict-from", "nope", "-o", t.TempDir()); code == 0 {
		t.Error("--predict-from a run not in the report succeeded")
	}
	if code, _, _ := headroom(t, "report", d("sweep-f16"), "--model-config-for", "nope", "-o", t.TempDir()); code != 2 {
		t.Error("--model-config-for without = was accepted")
	}
}
