package analyze

import (
	"strings"
	"testing"
)

// The request timings, metric values, GPU telemetry and client samples of
// these runs are constructed (fake_test.go); every server log line is a
// real line from testdata/serverlogs, placed inside a level through
// constructed receive times in server_log_lines.

// level index of each concurrency in kneeSweep
var kneeLevel = map[int]int{1: 0, 2: 1, 4: 2, 8: 3, 16: 4, 32: 5}

// cleanStats logs one real vLLM V1 stats line (no preemption, KV cache
// nearly empty) in each level.
func cleanStats(t *testing.T, f *fakeSweep) {
	stats := fixtureLines(t, "vllm-0.13.x-v1-loggers248-stats.log")
	for i := range f.levels {
		f.log(f.at(i, 0.5), stats[i%len(stats)])
	}
}

func finding(d Diagnosis, check string) Finding {
	for _, f := range d.Findings {
		if f.Check == check {
			return f
		}
	}
	return Finding{}
}

func TestDiagnoseKVCacheWall(t *testing.T) {
	t.Parallel()
	f := kneeSweep(t)
	cleanStats(t, f)
	preempt := fixtureLines(t, "vllm-0.4.x-docs-preemption-cnt.log")[0]
	c16 := kneeLevel[16]
	f.log(f.at(c16, 0.6), preempt)
	wantLine := int64(len(f.logLines))
	// Constructed metrics: KV usage near full and the preemption counter
	// rising during c=16.
	cum := 0.0
	for i := range f.levels {
		kv := 0.3
		if i >= c16 {
			kv = 0.99
		}
		f.metric(f.at(i, 0.2), "vllm:kv_cache_usage_perc", `engine="0"`, kv)
		f.metric(f.at(i, 0.2), "vllm:num_preemptions_total", `engine="0"`, cum)
		if i >= c16 {
			cum += 2
		}
		f.metric(f.at(i, 0.9), "vllm:num_preemptions_total", `engine="0"`, cum)
	}
	f.gpuLevel(c16, 97, 650)
	sw := analyzeOne(t, f.write(), testSettings())
	d := sw.Diagnosis
	if d.Wall != WallKVCache {
		t.Fatalf("wall %q (%s), want kv_cache", d.Wall, d.Summary)
	}
	kv := finding(d, WallKVCache)
	if kv.Concurrency != 16 || !strings.Contains(strings.Join(kv.Fixes, "\n"), "--gpu-memory-utilization") {
		t.Errorf("kv finding at c=%d with fixes %q, want vLLM's", kv.Concurrency, kv.Fixes)
	}
	var sawLine, sawMetric bool
	for _, e := range kv.Evidence {
		if e.Source == EvidenceLog && e.Line == wantLine && e.Text == preempt && e.Concurrency == 16 {
			sawLine = true
		}
		if e.Source == EvidenceMetric && e.Name == "vllm:kv_cache_usage_perc" && e.Value == 0.99 && e.TimeNS != 0 {
			sawMetric = true
		}
	}
	if !sawLine || !sawMetric {
		t.Errorf("evidence lacks the quoted preemption line %d or the KV metric: %+v", wantLine, kv.Evidence)
	}
	l16 := sw.Levels[c16]
	if !l16.Server.PreemptionsKnown || l16.Server.PreemptionsSource != "vllm:num_preemptions_total" || l16.Server.Preemptions != 2 {
		t.Errorf("c=16 preemptions %d from %q, want 2 from the counter", l16.Server.Preemptions, l16.Server.PreemptionsSource)
	}
	if c := finding(d, WallCompute); c.Status != StatusClear {
		t.Errorf("compute finding %q with a preempting log", c.Status)
	}
	if sw.Timeline == nil || len(sw.Timeline.Levels) != 6 {
		t.Fatal("no timeline")
	}
	names := map[string]bool{}
	for _, s := range sw.Timeline.Series {
		names[s.Name] = true
	}
	for _, n := range []string{SeriesKVUsage, SeriesPreemptions, SeriesGPUUtil, SeriesRunning, SeriesWaiting} {
		if !names[n] {
			t.Errorf("timeline lacks %s (has %v)", n, names)
		}
	}
}

// The project's test engine names its KV wall for what it is.
func TestDiagnoseKVWallTestEngine(t *testing.T) {
	t.Parallel()
	f := kneeSweep(t)
	f.manifest.Engine.Name = "node-llama-cpp"
	lines := fixtureLines(t, "node-llama-cpp-3.21.1-preemptions.log") // captured from the test engine
	for _, l := range lines {
		f.log(f.at(kneeLevel[8], 0.5), l) // its preempt lines land at c=8, before the knee
	}
	d := analyzeOne(t, f.write(), testSettings()).Diagnosis
	if d.Wall != WallKVCache || !strings.Contains(d.Summary, "admission budget") {
		t.Errorf("wall %q: %s", d.Wall, d.Summary)
	}
	if kv := finding(d, WallKVCache); kv.Concurrency != 8 {
		t.Errorf("kv finding at c=%d, want 8", kv.Concurrency)
	}
}

func TestDiagnoseComputeKnee(t *testing.T) {
	t.Parallel()
	f := kneeSweep(t)
	cleanStats(t, f)
	for i := range f.levels {
		util := 55.0
		if i >= kneeLevel[16] {
			util = 98
		}
		f.gpuLevel(i, util, 600)
	}
	for i := range f.levels {
		f.clientLevel(i, 0.2)
	}
	d := analyzeOne(t, f.write(), testSettings()).Diagnosis
	if d.Wall != WallCompute {
		t.Fatalf("wall %q (%s), want compute", d.Wall, d.Summary)
	}
	c := finding(d, WallCompute)
	var util bool
	for _, e := range c.Evidence {
		util = util || (e.Source == EvidenceTelemetry && e.Value == 98 && e.Concurrency == 16)
	}
	if !util || c.Concurrency != 16 {
		t.Errorf("compute evidence %+v", c.Evidence)
	}
	if cl := finding(d, WallClientBound); cl.Status != StatusClear {
		t.Errorf("client finding %q", cl.Status)
	}
}

func TestDiagnoseQueueing(t *testing.T) {
	t.Parallel()
	f := newFakeSweep(t)
	// TPOT flat; every 10th request waits (1 + c/4) × as long for its first
	// token, so p99/p50 TTFT grows with concurrency: 1.25, 1.5, 2, 3, 5.
	// Each level has at least 100 requests, so its p99 is a tail estimate.
	for _, c := range []int{1, 2, 4, 8, 16} {
		c := c
		perLane := (100 + c - 1) / c
		f.level(c, perLane, func(lane, j int) float64 {
			if (lane*perLane+j)%10 == 9 {
				return 0.05 * (1 + float64(c)/4)
			}
			return 0.05
		}, 0.02)
	}
	idle := fixtureLines(t, "vllm-0.13.x-v1-loggers248-stats.log")[0]
	waiting := fixtureLines(t, "vllm-0.14.x-xpu-v1-loggers257-waiting.log")[0]
	f.log(f.at(0, 0.5), idle)
	f.log(f.at(1, 0.5), idle)
	f.log(f.at(2, 0.5), waiting)
	wantLine := int64(len(f.logLines))
	f.log(f.at(3, 0.5), waiting)
	sw := analyzeOne(t, f.write(), testSettings())
	d := sw.Diagnosis
	if d.Wall != WallQueueing {
		t.Fatalf("wall %q (%s), want queueing", d.Wall, d.Summary)
	}
	q := finding(d, WallQueueing)
	if q.Concurrency != 4 || !strings.Contains(q.Summary, "confirms") {
		t.Errorf("queueing at c=%d: %s", q.Concurrency, q.Summary)
	}
	var sawRatio, sawLog bool
	for _, e := range q.Evidence {
		sawRatio = sawRatio || (e.Source == EvidenceLatency && e.Concurrency == 4 && near(e.Value, 2, 1e-9))
		sawLog = sawLog || (e.Source == EvidenceLog && e.Line == wantLine && e.Text == waiting && e.Value == 14)
	}
	if !sawRatio || !sawLog {
		t.Errorf("evidence %+v", q.Evidence)
	}
	if sw.Knees.TPOTKneeConcurrency != 0 {
		t.Errorf("TPOT knee %d in a flat-TPOT sweep", sw.Knees.TPOTKneeConcurrency)
	}
}

func TestDiagnoseClientBound(t *testing.T) {
	t.Parallel()
	f := kneeSweep(t)
	cleanStats(t, f)
	for i := range f.levels {
		busy := 0.3
		if i >= kneeLevel[8] {
			busy = 0.97
		}
		f.clientLevel(i, busy)
		f.gpuLevel(i, 98, 600)
	}
	sw := analyzeOne(t, f.write(), testSettings())
	d := sw.Diagnosis
	if d.Wall != WallClientBound {
		t.Fatalf("wall %q (%s), want client_bound", d.Wall, d.Summary)
	}
	c := finding(d, WallClientBound)
	if c.Concurrency != 8 || len(c.Evidence) == 0 || c.Evidence[0].Source != EvidenceClient || !near(c.Evidence[0].Value, 0.97, 1e-9) {
		t.Errorf("client finding at c=%d, evidence %+v", c.Concurrency, c.Evidence)
	}
	if l := sw.Levels[kneeLevel[8]].Client; !l.Known || l.CPUs != 2 || !near(l.CPUBusyFraction, 0.97, 1e-9) {
		t.Errorf("client self-check %+v", l)
	}
}

func TestDiagnoseCleanNoWall(t *testing.T) {
	t.Parallel()
	f := newFakeSweep(t)
	for _, c := range []int{1, 2, 4, 8} {
		f.level(c, 5, constTTFT(0.05), 0.02)
	}
	cleanStats(t, f)
	for i := range f.levels {
		f.gpuLevel(i, 40, 300)
		f.clientLevel(i, 0.1)
	}
	d := analyzeOne(t, f.write(), testSettings()).Diagnosis
	if d.Wall != WallNone || !strings.Contains(d.Summary, "Raise the levels") || len(d.Missing) != 1 {
		t.Errorf("wall %q (%s), missing %v", d.Wall, d.Summary, d.Missing)
	}
}

// Without a log or metrics the walls cannot be told apart; the verdict
// says which evidence is missing.
func TestDiagnoseInconclusive(t *testing.T) {
	t.Parallel()
	d := analyzeOne(t, kneeSweep(t).write(), testSettings()).Diagnosis
	if d.Wall != WallInconclusive {
		t.Fatalf("wall %q", d.Wall)
	}
	for _, want := range []string{missingLog, missingMetrics, missingGPU} {
		if !strings.Contains(d.Summary, want) {
			t.Errorf("summary %q does not name %q", d.Summary, want)
		}
	}
	if len(d.Missing) != 4 {
		t.Errorf("missing %v", d.Missing)
	}
}

// llama.cpp has no preemption; a KV cache with no free cells is its wall.
func TestDiagnoseKVWallLlamaCpp(t *testing.T) {
	t.Parallel()
	f := kneeSweep(t)
	f.manifest.Engine.Name = "llamacpp"
	lines := fixtureLines(t, "llamacpp-2024-01-gen-a-kvfull-compose.log")
	for i, l := range lines {
		f.log(f.at(kneeLevel[16], 0.1+0.8*float64(i)/float64(len(lines))), l)
	}
	d := analyzeOne(t, f.write(), testSettings()).Diagnosis
	if d.Wall != WallKVCache || !strings.Contains(d.Summary, "ran out of KV cache cells") {
		t.Fatalf("wall %q: %s", d.Wall, d.Summary)
	}
	kv := finding(d, WallKVCache)
	if kv.Load != "c=16" || len(kv.Evidence) == 0 || kv.Evidence[0].Line != 4 || kv.Evidence[0].Text != lines[3] {
		t.Errorf("finding at %s, evidence %+v", kv.Load, kv.Evidence)
	}
}

// A log's silence about preemptions proves none only for engines that log
// every one: vLLM V1 never logs them, so its stats lines leave the count
// unknown, while the test engine's log without a preempt line means zero.
func TestPreemptionsKnownOnlyWhenTheEngineLogsThem(t *testing.T) {
	t.Parallel()
	cases := []struct {
		engine, fixture string
		wantKnown       bool
	}{
		{"vllm", "vllm-0.13.x-v1-loggers248-stats.log", false},
		{"sglang", "sglang-0.4.3-decode-2025-02.log", true},
	}
	for _, c := range cases {
		f := newFakeSweep(t)
		f.manifest.Engine.Name = c.engine
		f.level(1, 3, constTTFT(0.05), 0.02)
		f.level(2, 3, constTTFT(0.05), 0.02)
		var lines []string
		for _, line := range fixtureLines(t, c.fixture) {
			if !strings.Contains(line, "preempt") && !strings.Contains(line, "retract") {
				lines = append(lines, line)
			}
		}
		// In log order: the first half inside level 0, the rest inside level 1.
		for i, line := range lines {
			lvl := 2 * i / len(lines)
			f.log(f.at(lvl, 0.3+0.4*float64(i)/float64(len(lines))), line)
		}
		sw := analyzeOne(t, f.write(), testSettings())
		for _, l := range sw.Levels {
			if l.Server.LogLines == 0 {
				t.Fatalf("%s: level %d got no log lines", c.fixture, l.LevelIndex)
			}
			if l.Server.PreemptionsKnown != c.wantKnown {
				t.Errorf("%s: level %d preemptions known = %v (source %q), want %v",
					c.fixture, l.LevelIndex, l.Server.PreemptionsKnown, l.Server.PreemptionsSource, c.wantKnown)
			}
		}
	}
}

// A p99 from fewer than 100 requests is the sample maximum: one slow
// request must not read as a queue.
func TestDiagnoseQueueingNeedsReliableP99(t *testing.T) {
	t.Parallel()
	f := newFakeSweep(t)
	for _, c := range []int{1, 2, 4, 8} {
		c := c
		f.level(c, 4, func(lane, j int) float64 {
			if lane == 0 && j == 3 {
				return 0.05 * float64(1+c) // one slow request per level, slower each level
			}
			return 0.05
		}, 0.02)
	}
	q := finding(analyzeOne(t, f.write(), testSettings()).Diagnosis, WallQueueing)
	if q.Status != StatusUnknown || len(q.Missing) != 1 || !strings.Contains(q.Missing[0], "100 measured requests") {
		t.Errorf("queueing %q (%s), missing %v; want unknown for want of requests", q.Status, q.Summary, q.Missing)
	}
}

// In a closed loop a send lag idles one stream between requests: 13.5 ms
// before requests that take ~9 s each is no bottleneck, while the same lag
// in an open loop, or before 100 ms requests, is.
func TestSendLagLimit(t *testing.T) {
	set := testSettings()
	closed := LevelStats{Concurrency: 64, Requests: 73, WindowS: 10}
	if got := sendLagLimit(closed, set); !near(got, 10*64.0/73/100, 1e-12) {
		t.Errorf("closed loop limit %g, want 1%% of %g s", got, 10*64.0/73)
	}
	fast := LevelStats{Concurrency: 4, Requests: 400, WindowS: 10}
	if got := sendLagLimit(fast, set); got != set.Diagnosis.ClientSendLagS {
		t.Errorf("closed loop with 0.1 s requests: limit %g, want the floor %g", got, set.Diagnosis.ClientSendLagS)
	}
	open := LevelStats{Concurrency: 64, RateRPS: 4, Requests: 73, WindowS: 10}
	if got := sendLagLimit(open, set); got != set.Diagnosis.ClientSendLagS {
		t.Errorf("open loop limit %g, want %g", got, set.Diagnosis.ClientSendLagS)
	}
}

// capMetrics writes constructed vLLM metrics per level: running, waiting
// and KV usage, from a function of the level's concurrency.
func capMetrics(f *fakeSweep, at func(c int) (running, waiting, kv float64)) {
	for i, l := range f.levels {
		r, w, kv := at(int(l.Concurrency))
		f.metric(f.at(i, 0.5), "vllm:num_requests_running", `engine="0"`, r)
		f.metric(f.at(i, 0.5), "vllm:num_requests_waiting", `engine="0"`, w)
		f.metric(f.at(i, 0.5), "vllm:kv_cache_usage_perc", `engine="0"`, kv)
	}
}

// Engines that queue rather than preempt when the KV cache runs out show
// their KV wall as admission stopping: fewer running than sent, others
// waiting, the cache nearly full. At the knee it is the wall.
func TestDiagnoseKVAdmissionCapAtKnee(t *testing.T) {
	t.Parallel()
	f := kneeSweep(t)
	capMetrics(f, func(c int) (float64, float64, float64) {
		if c >= 16 {
			return 12, float64(c - 12), 0.86
		}
		return float64(c), 0, 0.05 * float64(c)
	})
	d := analyzeOne(t, f.write(), testSettings()).Diagnosis
	kv := finding(d, WallKVCache)
	if d.Wall != WallKVCache || kv.Concurrency != 16 || kv.AfterKnee {
		t.Fatalf("wall %q, kv finding at c=%d after knee %v: %s", d.Wall, kv.Concurrency, kv.AfterKnee, kv.Summary)
	}
	var sawCap bool
	for _, e := range kv.Evidence {
		sawCap = sawCap || (e.Name == "running requests (max)" && e.Value == 12 && e.Concurrency == 16)
	}
	if !sawCap || !strings.Contains(kv.Summary, "ran at most 12 of 16 requests while up to 4 waited") {
		t.Errorf("evidence %+v\nsummary %s", kv.Evidence, kv.Summary)
	}
}

// A KV wall that appears only past the TPOT knee is reported as a second
// wall; it does not name the run's wall.
func TestDiagnoseKVWallAfterKnee(t *testing.T) {
	t.Parallel()
	f := kneeSweep(t)
	cleanStats(t, f)
	capMetrics(f, func(c int) (float64, float64, float64) {
		if c >= 32 {
			return 20, 12, 0.86
		}
		return float64(c), 0, 0.02 * float64(c)
	})
	for i := range f.levels {
		f.gpuLevel(i, 98, 600)
	}
	d := analyzeOne(t, f.write(), testSettings()).Diagnosis
	kv := finding(d, WallKVCache)
	if kv.Status != StatusHit || !kv.AfterKnee || kv.Concurrency != 32 {
		t.Fatalf("kv finding %q at c=%d after knee %v: %s", kv.Status, kv.Concurrency, kv.AfterKnee, kv.Summary)
	}
	if d.Wall != WallCompute || !strings.Contains(d.Summary, "Then, past the knee: KV-cache wall after the knee: from c=32") {
		t.Errorf("wall %q: %s", d.Wall, d.Summary)
	}
	if d.Short != "compute knee at c=16; then the KV-cache wall from c=32" {
		t.Errorf("short %q", d.Short)
	}
}

// TPOT bends with a clean log, the client keeping up and the GPU often
// idle: no wall of the seed's fits, and the verdict points at the engine's
// host side rather than stopping at "inconclusive".
func TestDiagnoseIdleGPUPointsAtTheHost(t *testing.T) {
	t.Parallel()
	f := kneeSweep(t)
	cleanStats(t, f)
	for i := range f.levels {
		f.gpuLevel(i, 73, 350)
		f.clientLevel(i, 0.1)
	}
	d := analyzeOne(t, f.write(), testSettings()).Diagnosis
	if d.Wall != WallInconclusive || !strings.Contains(d.Summary, "GPU idle 27% of the time at the knee points at the engine's host side") {
		t.Errorf("wall %q: %s", d.Wall, d.Summary)
	}
}
