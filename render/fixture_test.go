package render

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// sweepFixture describes a synthetic sweep with a known shape, written as
// a real run directory (manifest, Parquet tables, server.log) so the report
// tests go through analyze like `headroom report` does. The shape is the
// seed's textbook case: TPOT flat up to c=16, then rising as the KV cache
// fills and the server preempts; TTFT's tail pulls away at the same time.
type sweepFixture struct {
	Model    string
	Flags    []string
	Label    string
	LogExtra string // appended to a preemption line, e.g. a hostile string
	// OpenLoop marks the sweep as open loop: each level gets an arrival
	// rate, and its concurrency becomes the cap.
	OpenLoop bool
}

var fixtureStart = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// Levels of the fixture and, per level, its p50 TPOT and TTFT in seconds
// and the KV-cache usage the server reports.
var fixtureLevels = []struct {
	conc          int
	tpotS, ttftS  float64
	kvUsage       float64
	waiting       int
	preemptEvents int
}{
	{1, 0.0100, 0.040, 0.02, 0, 0},
	{2, 0.0101, 0.041, 0.04, 0, 0},
	{4, 0.0103, 0.043, 0.08, 0, 0},
	{8, 0.0106, 0.046, 0.16, 0, 0},
	{16, 0.0118, 0.052, 0.35, 0, 0},
	{32, 0.0170, 0.090, 0.97, 6, 3},
	{64, 0.0310, 0.400, 1.00, 30, 12},
}

const (
	fixtureRequestsPerLevel = 24 // at least; 2 rounds at high concurrency
	fixtureWarmup           = 2
	fixturePromptTokens     = 512
	fixtureOutputTokens     = 128
)

// writeSweepFixture writes the sweep run into dir.
func writeSweepFixture(t *testing.T, dir string, fx sweepFixture) {
	t.Helper()
	if fx.Model == "" {
		fx.Model = "meta-llama/Llama-3.1-8B-Instruct"
	}
	if fx.Flags == nil {
		fx.Flags = []string{"--max-model-len", "4096", "--gpu-memory-utilization", "0.90", "--enable-prefix-caching"}
	}
	if fx.Label == "" {
		fx.Label = "synthetic vLLM sweep (test fixture)"
	}
	var levels []rundir.LevelRow
	var requests []rundir.RequestRow
	var metrics []rundir.ServerMetricRow
	var gpu []rundir.GPUTelemetryRow
	var logLines []rundir.ServerLogLineRow
	var log strings.Builder
	lineNo := int64(0)
	addLog := func(ns int64, text string) {
		lineNo++
		log.WriteString(text + "\n")
		logLines = append(logLines, rundir.ServerLogLineRow{Line: lineNo, RecvNS: ns})
	}
	stamp := func(ns int64) string { return time.Unix(0, ns).UTC().Format("01-02 15:04:05") }
	addLog(fixtureStart.UnixNano(), "INFO "+stamp(fixtureStart.UnixNano())+" [api_server.py:1090] vLLM API server version 0.10.1.1")

	now := fixtureStart.UnixNano()
	preempted := 0
	for li, lv := range fixtureLevels {
		start := now
		// Closed loop: a warm-up round, then rounds of `conc` requests;
		// each request takes TTFT + 127 TPOT.
		measured := max(fixtureRequestsPerLevel, 2*lv.conc)
		var warmEnd int64
		t0 := start
		seq := 0
		round := func(n int, warm bool) {
			var roundEnd int64
			for k := 0; k < n; k++ {
				// Deterministic spread: request k of the round is slower by
				// a fixed fraction, and every seventh waits in the queue.
				spread := 1 + 0.04*float64(k%5)
				ttft := lv.ttftS * spread
				if seq%7 == 6 {
					ttft *= 1 + float64(lv.waiting)/4
				}
				tpot := lv.tpotS * (1 + 0.02*float64(k%3))
				send := t0 + int64(k)*1e5
				first := send + int64(ttft*1e9)
				end := first + int64(tpot*1e9*float64(fixtureOutputTokens-1))
				comp, prompt := int64(fixtureOutputTokens), int64(fixturePromptTokens)
				requests = append(requests, rundir.RequestRow{
					RequestID: fmt.Sprintf("l%d-r%d", li, seq), LevelIndex: int32(li), Concurrency: int64(lv.conc), Seq: int64(seq),
					Warmup: warm, Endpoint: "completions", IntendedSendNS: send, SendNS: send, FirstTokenNS: &first, EndNS: end,
					PromptTokensTarget: fixturePromptTokens, OutputTokensTarget: fixtureOutputTokens, ClientChunks: fixtureOutputTokens,
					ServerPromptTokens: &prompt, ServerCompletionTokens: &comp, FinishReason: "length", Status: rundir.StatusOK, HTTPStatus: 200,
				})
				roundEnd = max(roundEnd, end)
				seq++
			}
			t0 = roundEnd + 1e6
		}
		round(fixtureWarmup, true)
		warmEnd = t0
		for done := 0; done < measured; done += lv.conc {
			round(min(lv.conc, measured-done), false)
		}
		end := t0
		lr := rundir.LevelRow{
			LevelIndex: int32(li), Concurrency: int64(lv.conc), StartNS: start, WarmupEndNS: warmEnd, EndNS: end,
			Requests: int64(measured), Complete: true,
		}
		if fx.OpenLoop {
			lr.RateRPS = float64(measured) / (float64(end-warmEnd) / 1e9)
		}
		levels = append(levels, lr)
		// Metrics and telemetry every second through the level.
		for ns := start; ns < end; ns += 1e9 {
			metrics = append(metrics,
				rundir.ServerMetricRow{TimeNS: ns, Name: "vllm:kv_cache_usage_perc", Labels: `model_name="m"`, Value: lv.kvUsage},
				rundir.ServerMetricRow{TimeNS: ns, Name: "vllm:num_requests_running", Labels: `model_name="m"`, Value: float64(lv.conc - lv.waiting/2)},
				rundir.ServerMetricRow{TimeNS: ns, Name: "vllm:num_requests_waiting", Labels: `model_name="m"`, Value: float64(lv.waiting)},
				rundir.ServerMetricRow{TimeNS: ns, Name: "vllm:num_preemptions_total", Labels: `model_name="m"`, Value: float64(preempted)},
			)
			util := math.Min(99, 35+2*float64(lv.conc))
			gpu = append(gpu, rundir.GPUTelemetryRow{
				TimeNS: ns, Device: 0, SMClockMHz: 1980, MemClockMHz: 3201, PowerW: 180 + 6*util, TemperatureC: 45 + util/5,
				GPUUtilPct: util, MemUtilPct: util * 0.8, MemUsedBytes: 120 << 30, Processes: 1,
			})
			addLog(ns, fmt.Sprintf("INFO %s [loggers.py:118] Engine 000: Avg prompt throughput: %.1f tokens/s, Avg generation throughput: %.1f tokens/s, Running: %d reqs, Waiting: %d reqs, GPU KV cache usage: %.1f%%, Prefix cache hit rate: 0.0%%",
				stamp(ns), 512*float64(lv.conc)/2, float64(lv.conc)/lv.tpotS, lv.conc-lv.waiting/2, lv.waiting, 100*lv.kvUsage))
		}
		for p := 0; p < lv.preemptEvents; p++ {
			preempted++
			ns := warmEnd + int64(p+1)*(end-warmEnd)/int64(lv.preemptEvents+1)
			addLog(ns, fmt.Sprintf("WARNING %s [scheduler.py:1481] Sequence group cmpl-%d-0 is preempted by PreemptionMode.RECOMPUTE mode because there is not enough KV cache space. This can affect the end-to-end performance. Increase gpu_memory_utilization or tensor_parallel_size to provide more KV cache memory. total_num_cumulative_preemption=%d%s",
				stamp(ns), preempted, preempted, fx.LogExtra))
		}
		now = end + 2e9
	}

	m := &rundir.Manifest{
		FormatVersion: 1, HeadroomVersion: "test", Kinds: []string{rundir.KindSweep}, Label: fx.Label,
		StartTime: fixtureStart, EndTime: time.Unix(0, now).UTC(), Complete: true,
		Host: rundir.Host{Hostname: "gpu-box", OS: "linux", Arch: "amd64", CPUModel: "AMD EPYC 9654", CPUs: 16},
		GPUs: []rundir.GPU{{Index: 0, Name: "NVIDIA H200", Driver: "580.159.04", CUDAVersion: "13.0", MemoryBytes: 150754820096, PowerLimitW: 700}},
		Engine: &rundir.Engine{Name: "vllm", Version: "0.10.1.1", BaseURL: "http://127.0.0.1:8000", Model: fx.Model,
			Quantization: "none", DType: "bfloat16", MaxContextTokens: 4096, Flags: fx.Flags},
		Workload: &rundir.Workload{Endpoint: "completions", Prompt: rundir.Dist{Kind: "fixed", Mean: fixturePromptTokens},
			Output: rundir.Dist{Kind: "fixed", Mean: fixtureOutputTokens}, Seed: 1, Mode: "closed",
			Levels: []int{1, 2, 4, 8, 16, 32, 64}, RequestsPerLevel: fixtureRequestsPerLevel, WarmupPerLevel: fixtureWarmup, FixedOutput: true},
	}
	if fx.OpenLoop {
		m.Workload.Mode = "open"
		for _, l := range levels {
			m.Workload.RatesRPS = append(m.Workload.RatesRPS, l.RateRPS)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := rundir.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(rundir.WriteTable(dir, rundir.TableLevels, levels))
	must(rundir.WriteTable(dir, rundir.TableRequests, requests))
	must(rundir.WriteTable(dir, rundir.TableServerMetrics, metrics))
	must(rundir.WriteTable(dir, rundir.TableGPUTelemetry, gpu))
	must(rundir.WriteTable(dir, rundir.TableServerLogLines, logLines))
	must(os.WriteFile(filepath.Join(dir, rundir.ServerLogFile), []byte(log.String()), 0o644))
}
