package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/examples"
	"github.com/headroom-llm/headroom/rundir"
)

// writeTinySweep writes a constructed one-level sweep: 4 requests of 16
// tokens, 50 ms TTFT and 20 ms per token.
func writeTinySweep(t *testing.T, dir string) {
	t.Helper()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	m := &rundir.Manifest{Kinds: []string{rundir.KindSweep}, StartTime: start,
		GPUs:   []rundir.GPU{{Name: "NVIDIA H200"}},
		Engine: &rundir.Engine{Name: "vllm", Model: "meta-llama/Llama-3.1-8B-Instruct"}}
	r, err := rundir.Create(dir, m)
	if err != nil {
		t.Fatal(err)
	}
	t0 := start.UnixNano()
	var reqs []rundir.RequestRow
	at := t0
	for i := range 4 {
		first := at + 50e6
		end := first + 15*20e6
		n, p := int64(16), int64(512)
		reqs = append(reqs, rundir.RequestRow{RequestID: string(rune('a' + i)), Concurrency: 1, Seq: int64(i), SendNS: at, IntendedSendNS: at,
			FirstTokenNS: &first, EndNS: end, ClientChunks: 16, ServerCompletionTokens: &n, ServerPromptTokens: &p, Status: rundir.StatusOK})
		at = end
	}
	if err := rundir.WriteTable(dir, rundir.TableRequests, reqs); err != nil {
		t.Fatal(err)
	}
	lv := []rundir.LevelRow{{Concurrency: 1, StartNS: t0, WarmupEndNS: t0, EndNS: at, Requests: 4, Complete: true}}
	if err := rundir.WriteTable(dir, rundir.TableLevels, lv); err != nil {
		t.Fatal(err)
	}
	if err := r.Finish(nil); err != nil {
		t.Fatal(err)
	}
}

func TestReportFlags(t *testing.T) {
	tmp := t.TempDir()
	probe, sweep, out := filepath.Join(tmp, "probe"), filepath.Join(tmp, "sweep"), filepath.Join(tmp, "out")
	if _, _, err := examples.Extract("h200-probe", probe); err != nil {
		t.Fatal(err)
	}
	writeTinySweep(t, sweep)
	code, _, errs := headroom(t, "report", probe, sweep, "-o", out,
		"--slo", "ttft_p99=1s,tpot_p99=30ms", "--percentiles", "95",
		"--model-config", "../../testdata/modelconfigs/llama-3.1-8b-instruct.json",
		"--gpu-preset", "lambda-h100-sxm", "--gpus", "1", "--kwh-usd", "0.15", "--utilization", "0.8")
	if code != 0 {
		t.Fatalf("report: exit %d: %s", code, errs)
	}
	data, err := os.ReadFile(filepath.Join(out, "analysis.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep analyze.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	sw := rep.Runs[1].Sweep
	if sw == nil || sw.Goodput == nil || sw.Decode == nil || sw.Decode.Model == nil || sw.Cost == nil || sw.Cost.Preset == nil {
		t.Fatalf("analysis.json lacks what the flags asked for: %s", data[:min(len(data), 400)])
	}
	if got := sw.Levels[0].TTFT.Percentiles; len(got) != 4 || got[1].Percentile != 90 || got[2].Percentile != 95 {
		t.Errorf("percentiles %+v", got)
	}
	if rep.Settings.Cost.Utilization != 0.8 || rep.Settings.SLO.Spec != "ttft_p99=1s,tpot_p99=30ms" {
		t.Errorf("settings not recorded: %+v", rep.Settings.Cost)
	}
	if rep.Headline == nil || rep.Headline.PeakConcurrency != 1 {
		t.Errorf("headline %+v", rep.Headline)
	}
}

func TestReportFlagErrors(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if _, _, err := examples.Extract("h200-probe", dir); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"--slo", "ttft=2s"},
		{"--percentiles", "101"},
		{"--gpu-preset", "no-such-gpu"},
		{"--gpu-hour-usd", "2", "--gpu-preset", "lambda-h100-sxm"},
		{"--utilization", "0"},
		{"--gpus", "-1"},
	} {
		code, _, errs := headroom(t, append([]string{"report", dir}, args...)...)
		if code != 2 || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line", args, code, errs)
		}
	}
	code, _, errs := headroom(t, "report", dir, "--model-config", filepath.Join(dir, "nope.json"))
	if code == 0 || !strings.Contains(errs, "nope.json") {
		t.Errorf("missing --model-config: exit %d, %q", code, errs)
	}
}
