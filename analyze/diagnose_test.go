package analyze

import (
	"slices"
	"strings"
	"testing"
)

// The request timings, metric values, GPU telemetry, server CPU and client
// samples of these runs are constructed (fake_test.go); every server log
// line is a real line from testdata/serverlogs, placed inside a level
// through constructed receive times in server_log_lines. The tests assert
// decisions (statuses, levels, numbers, evidence), never prose.

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

// cleanKneeSweep is kneeSweep with cleanStats's log.
func cleanKneeSweep(t *testing.T) *fakeSweep {
	f := kneeSweep(t)
	cleanStats(t, f)
	return f
}

// fromLevel is below in the levels of kneeSweep under concurrency c and at
// from c's level on.
func fromLevel(i, c int, below, at float64) float64 {
	if i >= kneeLevel[c] {
		return at
	}
	return below
}

func check(d Diagnosis, kind string) Finding {
	for _, f := range d.Checks {
		if f.Check == kind {
			return f
		}
	}
	return Finding{}
}

func hasEvidence(ev []Evidence, kind string, ok func(Evidence) bool) bool {
	return slices.ContainsFunc(ev, func(e Evidence) bool { return e.Kind == kind && (ok == nil || ok(e)) })
}

func hasFix(fs []Fix, action, flag string) bool {
	return slices.ContainsFunc(fs, func(f Fix) bool { return f.Action == action && f.Flag == flag })
}

// wantWall checks the primary wall's kind and level.
func wantWall(t *testing.T, d Diagnosis, kind string, concurrency int) {
	t.Helper()
	if d.Wall != kind || d.Primary.Kind != kind || d.Primary.At.Concurrency != concurrency {
		t.Fatalf("wall %q at c=%d, want %q at c=%d (checks %+v)", d.Wall, d.Primary.At.Concurrency, kind, concurrency, d.Checks)
	}
	if len(d.Checks) != len(WallKinds) {
		t.Errorf("%d checks, want one per wall kind", len(d.Checks))
	}
}

func TestDiagnoseKVCacheWall(t *testing.T) {
	t.Parallel()
	f := cleanKneeSweep(t)
	preempt := fixtureLines(t, "vllm-0.4.x-docs-preemption-cnt.log")[0]
	c16 := kneeLevel[16]
	f.log(f.at(c16, 0.6), preempt)
	wantLine := int64(len(f.logLines))
	// Constructed metrics: KV usage near full and the preemption counter
	// rising during c=16.
	cum := 0.0
	for i := range f.levels {
		f.metric(f.at(i, 0.2), "vllm:kv_cache_usage_perc", `engine="0"`, fromLevel(i, 16, 0.3, 0.99))
		f.metric(f.at(i, 0.2), "vllm:num_preemptions_total", `engine="0"`, cum)
		cum += fromLevel(i, 16, 0, 2)
		f.metric(f.at(i, 0.9), "vllm:num_preemptions_total", `engine="0"`, cum)
	}
	f.gpuLevel(c16, 97, 650)
	sw := analyzeOne(t, f.write(), testSettings())
	d := sw.Diagnosis
	wantWall(t, d, WallKVCache, 16)
	kv := d.Primary
	if e := kv.Evidence[0]; e.Kind != EvPreemptions || e.Value != 2 || e.Name != "vllm:num_preemptions_total" || e.Concurrency != 16 {
		t.Errorf("strongest evidence %+v, want the preemption counter's 2 at c=16", e)
	}
	if !hasEvidence(kv.Evidence, EvPreemptLog, func(e Evidence) bool { return e.Line == wantLine && e.Text == preempt }) ||
		!hasEvidence(kv.Evidence, EvKVUsage, func(e Evidence) bool { return e.Value == 0.99 && e.TimeNS != 0 }) {
		t.Errorf("evidence lacks the quoted preemption line %d or the KV metric: %+v", wantLine, kv.Evidence)
	}
	if !hasFix(kv.Fixes, FixMoreKVMemory, "--gpu-memory-utilization") || !hasFix(kv.Fixes, FixSwapPreempted, "--swap-space") {
		t.Errorf("fixes %+v, want vLLM's, swap space included (it preempted)", kv.Fixes)
	}
	l16 := sw.Levels[c16]
	if !l16.Server.PreemptionsKnown || l16.Server.PreemptionsSource != "vllm:num_preemptions_total" || l16.Server.Preemptions != 2 {
		t.Errorf("c=16 preemptions %d from %q, want 2 from the counter", l16.Server.Preemptions, l16.Server.PreemptionsSource)
	}
	if c := check(d, WallCompute); c.Status != StatusClear || c.Reason != ReasonKneeIsKV {
		t.Errorf("compute %q (%s) with a preempting log", c.Status, c.Reason)
	}
	if d.Confidence.Level != ConfidenceHigh || !slices.Contains(d.Confidence.Reasons, WhyServerEvidence) {
		t.Errorf("confidence %+v", d.Confidence)
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

// The project's test engine's KV wall is its admission budget, and its fix
// is that budget's flag.
func TestDiagnoseKVWallTestEngine(t *testing.T) {
	t.Parallel()
	f := kneeSweep(t)
	f.manifest.Engine.Name = "node-llama-cpp"
	lines := fixtureLines(t, "node-llama-cpp-3.21.1-preemptions.log") // captured from the test engine
	for _, l := range lines {
		f.log(f.at(kneeLevel[8], 0.5), l) // its preempt lines land at c=8, before the knee
	}
	d := analyzeOne(t, f.write(), testSettings()).Diagnosis
	wantWall(t, d, WallKVCache, 8)
	if len(d.Primary.Fixes) != 1 || !hasFix(d.Primary.Fixes, FixKVBudget, "--kv-budget-tokens") {
		t.Errorf("fixes %+v", d.Primary.Fixes)
	}
}

// A KV wall needs no TPOT knee: TPOT flat, but at the top levels the cache
// is full and requests are preempted. (The second failure: this
// read as "no wall reached".)
func TestDiagnoseKVWallWithoutTPOTKnee(t *testing.T) {
	t.Parallel()
	f := newFakeSweep(t)
	f.manifest.Engine.Name = "node-llama-cpp"
	for _, c := range []int{1, 2, 4, 8} {
		f.level(c, 3, constTTFT(0.05), 0.02)
	}
	cum := 0.0
	for i, l := range f.levels {
		kv := 0.1 * float64(l.Concurrency)
		if l.Concurrency >= 4 {
			kv, cum = 1, cum+float64(10*l.Concurrency)
		}
		f.metric(f.at(i, 0.1), "nodellama:kv_cache_usage_perc", "", kv)
		f.metric(f.at(i, 0.9), "nodellama:num_preemptions_total", "", cum)
	}
	f.metric(f.at(0, 0.05), "nodellama:num_preemptions_total", "", 0)
	sw := analyzeOne(t, f.write(), testSettings())
	if sw.Knees.TPOTKneeLevel >= 0 {
		t.Fatalf("constructed sweep has a TPOT knee at %d", sw.Knees.TPOTKneeLevel)
	}
	wantWall(t, sw.Diagnosis, WallKVCache, 4)
	if e := sw.Diagnosis.Primary.Evidence[0]; e.Kind != EvPreemptions || e.Value != 40 {
		t.Errorf("strongest evidence %+v, want 40 preemptions", e)
	}
}

func TestDiagnoseComputeKnee(t *testing.T) {
	t.Parallel()
	f := cleanKneeSweep(t)
	for i := range f.levels {
		f.gpuLevel(i, fromLevel(i, 16, 55, 98), 600)
		f.clientLevel(i, 0.2)
	}
	d := analyzeOne(t, f.write(), testSettings()).Diagnosis
	wantWall(t, d, WallCompute, 16)
	w := d.Primary
	if w.Basis != BasisGPU || w.Evidence[0].Kind != EvTPOTRatio || !near(w.Evidence[0].Ratio, 2, 1e-9) ||
		!hasEvidence(w.Evidence, EvGPUUtil, func(e Evidence) bool { return e.Value == 98 && e.Concurrency == 16 }) {
		t.Errorf("compute wall %+v", w)
	}
	if cl := check(d, WallClientBound); cl.Status != StatusClear {
		t.Errorf("client %q", cl.Status)
	}
	// No probe: where the knee sits against the ridge is unknown.
	if d.Confidence.Level != ConfidenceMedium || !slices.Contains(d.Confidence.Reasons, WhyNoRidge) {
		t.Errorf("confidence %+v", d.Confidence)
	}
}

// engineCapSweep is a flat-TPOT sweep against an engine holding 8
// sequences: from c=16 every request waits for a slot, so p50 TTFT grows
// with the load while p99/p50 stays near 1 (every request waits alike).
func engineCapSweep(t *testing.T) *fakeSweep {
	f := newFakeSweep(t)
	f.manifest.Engine.Flags = []string{"vllm", "serve", "m", "--max-num-seqs", "8"}
	const service = 0.05 + 15*0.02
	for _, c := range []int{1, 2, 4, 8, 16, 32} {
		wait := 0.0
		if c > 8 {
			wait = float64(c-8) / 8 * service
		}
		f.level(c, 4, constTTFT(0.05+wait), 0.02)
	}
	capMetrics(f, func(c int) (float64, float64, float64) {
		return float64(min(c, 8)), float64(max(c-8, 0)), 0.02 * float64(min(c, 8))
	})
	return f
}

// Queueing at the engine's sequence cap: running held at 8, requests
// waiting with the cache nearly empty, TTFT growing. (The third
// failure: the p99/p50 test called this queue clear.)
func TestDiagnoseEngineCap(t *testing.T) {
	t.Parallel()
	sw := analyzeOne(t, engineCapSweep(t).write(), testSettings())
	d := sw.Diagnosis
	wantWall(t, d, WallEngineCap, 16)
	w := d.Primary
	if e := w.Evidence[0]; e.Kind != EvRunningPinned || e.Value != 8 || e.Count < 2 {
		t.Errorf("strongest evidence %+v, want running pinned at 8", e)
	}
	if !hasEvidence(w.Evidence, EvCapFlag, func(e Evidence) bool { return e.Name == "--max-num-seqs" && e.Value == 8 }) {
		t.Errorf("evidence lacks the cap flag: %+v", w.Evidence)
	}
	if !hasEvidence(w.Evidence, EvLittle, func(e Evidence) bool { return e.Ratio > 0.5 && e.Ratio < 2 }) {
		t.Errorf("Little's law does not agree: %+v", w.Evidence)
	}
	if !hasFix(w.Fixes, FixRaiseSequenceCap, "--max-num-seqs") || !hasFix(w.Fixes, FixAdmissionControl, "") {
		t.Errorf("fixes %+v", w.Fixes)
	}
	if kv := check(d, WallKVCache); kv.Status != StatusClear {
		t.Errorf("kv %q with the cache 16%% full", kv.Status)
	}
	if r := sw.Levels[kneeLevel[16]].TTFTP99OverP50; r > 1.1 {
		t.Fatalf("constructed sweep: p99/p50 TTFT %v, want about 1", r)
	}
}

// An open-loop overload: 40 req/s offered to 4 client slots that serve at
// most about 11 req/s. The achieved rate falls short, requests wait for a
// slot, and TTFT from the intended send time grows without bound; judged
// from the actual send, TTFT would look fine. (The fourth failure.)
func TestDiagnoseOpenLoopOverload(t *testing.T) {
	t.Parallel()
	f := newFakeSweep(t)
	f.manifest.Workload.Mode = "open"
	for _, rate := range []float64{2, 5, 40} {
		f.openLevel(rate, 60, 4, 0.05, 0.02)
	}
	capMetrics(f, func(int) (float64, float64, float64) { return 4, 0, 0.1 })
	sw := analyzeOne(t, f.write(), testSettings())
	d := sw.Diagnosis
	if d.Wall != WallFrontQueue || d.Primary.At.RateRPS != 40 || d.Primary.At.Axis != AxisRate {
		t.Fatalf("wall %q at %+v, want front_queue at 40 req/s (checks %+v)", d.Wall, d.Primary.At, d.Checks)
	}
	if !hasEvidence(d.Primary.Evidence, EvAchievedRate, func(e Evidence) bool { return e.Ref == 40 && e.Value < 15 }) ||
		!hasEvidence(d.Primary.Evidence, EvSlotWait, nil) {
		t.Errorf("evidence %+v", d.Primary.Evidence)
	}
	if k := sw.Knees; k.Plateau != PlateauSaturated || k.SaturatedRateRPS != 40 {
		t.Errorf("plateau %q at %v req/s, want saturated at 40", k.Plateau, k.SaturatedRateRPS)
	}
	op := sw.Operating
	if op.At.Axis != AxisRate || op.At.RateRPS != 5 || op.FirstFailing.RateRPS != 40 || op.TTFTFrom != TTFTFromIntended || op.SLOSource != SLODefault {
		t.Errorf("operating point %+v, want 5 req/s under the default SLO, TTFT from the intended send", op)
	}
	if l := sw.Levels[2]; l.TTFT.P99S > 2 || l.TTFTFromIntended.P99S <= 2 {
		t.Fatalf("constructed sweep: TTFT p99 %v from send, %v from intended", l.TTFT.P99S, l.TTFTFromIntended.P99S)
	}
}

func TestDiagnoseClientBound(t *testing.T) {
	t.Parallel()
	f := cleanKneeSweep(t)
	for i := range f.levels {
		f.clientLevel(i, fromLevel(i, 8, 0.3, 0.97))
		f.gpuLevel(i, 98, 600)
	}
	sw := analyzeOne(t, f.write(), testSettings())
	d := sw.Diagnosis
	wantWall(t, d, WallClientBound, 8)
	if e := d.Primary.Evidence[0]; e.Kind != EvClientCPU || !near(e.Value, 0.97, 1e-9) || e.Count != 2 {
		t.Errorf("evidence %+v", d.Primary.Evidence)
	}
	if l := sw.Levels[kneeLevel[8]].Client; !l.Known || l.CPUs != 2 || !near(l.CPUBusyFraction, 0.97, 1e-9) {
		t.Errorf("client self-check %+v", l)
	}
	// The knee at c=16 comes after the client saturated: not the server's.
	if c := check(d, WallCompute); c.Reason != ReasonKneeIsClient {
		t.Errorf("compute %q (%s)", c.Status, c.Reason)
	}
}

// One late send on a busy host is not a bottleneck: the lag must persist
// in at least half of a level's samples.
func TestClientOneLateSendIsNotClientBound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lagging int
		want    string
	}{{1, StatusClear}, {3, StatusHit}} {
		f := newFakeSweep(t)
		for _, c := range []int{1, 2, 4} {
			f.level(c, 3, constTTFT(0.05), 0.02)
		}
		cleanStats(t, f)
		f.clientEveryLevel(0.1)
		// Level 2's five samples: tc.lagging of them lag 50 ms, the rest none.
		n := 0
		for i := range f.client {
			if f.client[i].TimeNS >= f.levels[2].WarmupEndNS && n < tc.lagging {
				f.client[i].SendLagMaxS, n = 0.050, n+1
			}
		}
		d := analyzeOne(t, f.write(), testSettings()).Diagnosis
		if c := check(d, WallClientBound); c.Status != tc.want {
			t.Errorf("%d lagging samples of 5: client %q, want %q", tc.lagging, c.Status, tc.want)
		}
	}
}

func TestDiagnoseCleanNoWall(t *testing.T) {
	t.Parallel()
	f := newFakeSweep(t)
	for _, c := range []int{1, 2, 4, 8} {
		f.level(c, 5, constTTFT(0.05), 0.02)
	}
	cleanStats(t, f)
	f.gpuEveryLevel(40, 300)
	f.clientEveryLevel(0.1)
	d := analyzeOne(t, f.write(), testSettings()).Diagnosis
	if d.Wall != WallNone || d.Primary.At.Concurrency != 8 || d.Primary.RaiseTo != 32 || d.Primary.RaiseBasis != RaiseDoubling {
		t.Errorf("wall %+v", d.Primary)
	}
	if !hasFix(d.Primary.Fixes, FixRaiseLoad, "") || !slices.Equal(d.Missing, []string{MeasureServerMetrics, MeasureProbe}) {
		t.Errorf("fixes %+v, missing %v", d.Primary.Fixes, d.Missing)
	}
}

// Without a log or metrics the KV cache cannot be ruled out at the knee:
// inconclusive, naming that measurement.
func TestDiagnoseInconclusive(t *testing.T) {
	t.Parallel()
	d := analyzeOne(t, kneeSweep(t).write(), testSettings()).Diagnosis
	if d.Wall != WallInconclusive || d.Primary.Deciding != MeasureKVSignals || d.Primary.Likely != WallCompute || d.Primary.At.Concurrency != 16 {
		t.Fatalf("verdict %+v", d.Primary)
	}
	for _, want := range []string{MeasureServerLog, MeasureServerMetrics, MeasureGPUTelemetry, MeasureClientSamples} {
		if !slices.Contains(d.Missing, want) {
			t.Errorf("missing %v lacks %s", d.Missing, want)
		}
	}
	if d.Confidence.Level != ConfidenceLow {
		t.Errorf("confidence %+v", d.Confidence)
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
	wantWall(t, d, WallKVCache, 16)
	if !hasEvidence(d.Primary.Evidence, EvKVFullLog, func(e Evidence) bool { return e.Line == 4 && e.Text == lines[3] }) {
		t.Errorf("evidence %+v", d.Primary.Evidence)
	}
	if !hasFix(d.Primary.Fixes, FixMoreKVMemory, "--ctx-size") || hasFix(d.Primary.Fixes, FixSwapPreempted, "") {
		t.Errorf("fixes %+v", d.Primary.Fixes)
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

// capMetrics writes constructed vLLM metrics per level: running, waiting
// and KV usage, from a function of the level's concurrency.
func capMetrics(f *fakeSweep, at func(c int) (running, waiting, kv float64)) {
	for i, l := range f.levels {
		r, w, kv := at(int(l.Concurrency))
		for _, frac := range []float64{0.3, 0.6} {
			f.metric(f.at(i, frac), "vllm:num_requests_running", `engine="0"`, r)
			f.metric(f.at(i, frac), "vllm:num_requests_waiting", `engine="0"`, w)
			f.metric(f.at(i, frac), "vllm:kv_cache_usage_perc", `engine="0"`, kv)
		}
	}
}

// Engines that queue rather than preempt when the KV cache runs out show
// their KV wall as admission stopping: fewer running than sent, others
// waiting, the cache nearly full. The fix list has no swap space: nothing
// was preempted.
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
	wantWall(t, d, WallKVCache, 16)
	if e := d.Primary.Evidence[0]; e.Kind != EvAdmission || e.Value != 12 || e.Ref != 16 {
		t.Errorf("strongest evidence %+v", e)
	}
	if hasFix(d.Primary.Fixes, FixSwapPreempted, "--swap-space") {
		t.Errorf("fixes %+v suggest a swap space without preemptions", d.Primary.Fixes)
	}
	if ec := check(d, WallEngineCap); ec.Status != StatusClear {
		t.Errorf("engine cap %q: the waiting is for want of cache", ec.Status)
	}
}

// A KV wall that appears only past the TPOT knee is a secondary wall, in
// order of load after the one that bent TPOT.
func TestDiagnoseKVWallAfterKnee(t *testing.T) {
	t.Parallel()
	f := cleanKneeSweep(t)
	capMetrics(f, func(c int) (float64, float64, float64) {
		if c >= 32 {
			return 20, 12, 0.86
		}
		return float64(c), 0, 0.02 * float64(c)
	})
	f.gpuEveryLevel(98, 600)
	d := analyzeOne(t, f.write(), testSettings()).Diagnosis
	wantWall(t, d, WallCompute, 16)
	if len(d.Secondary) != 1 || d.Secondary[0].Kind != WallKVCache || d.Secondary[0].At.Concurrency != 32 {
		t.Errorf("secondary walls %+v, want the KV cache at c=32", d.Secondary)
	}
}

// TPOT bends with a clean log, the client keeping up and the GPU often
// idle: the engine's overhead, not the silicon.
func TestDiagnoseIdleGPUIsEngineOverhead(t *testing.T) {
	t.Parallel()
	f := cleanKneeSweep(t)
	f.gpuEveryLevel(73, 350)
	f.clientEveryLevel(0.1)
	d := analyzeOne(t, f.write(), testSettings()).Diagnosis
	wantWall(t, d, WallEngineOverhead, 16)
	if d.Primary.Basis != BasisGPU || check(d, WallEngineOverhead).Reason != ReasonGPUNotBusy || d.Primary.Evidence[0].Kind != EvGPUUtil {
		t.Errorf("overhead %+v", d.Primary)
	}
	if !hasFix(d.Primary.Fixes, FixProfileHost, "") {
		t.Errorf("fixes %+v", d.Primary.Fixes)
	}
}

// A CPU-served engine: its CPU demand at the knee decides compute
// (saturated) against engine overhead: one thread wanting a whole core, or
// the process wanting the one core the test engine decodes on while its
// work hops between four threads (node-llama-cpp's thread pool).
func TestDiagnoseCPUServedEngine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		demand  float64
		threads int
		want    string
	}{{1.0, 1, WallCompute}, {1.1, 4, WallCompute}, {0.4, 1, WallEngineOverhead}, {0.6, 4, WallEngineOverhead}} {
		f := kneeSweep(t)
		f.manifest.GPUs = nil
		f.manifest.Engine.Name = "node-llama-cpp"
		f.log(f.at(0, 0.5), fixtureLines(t, "node-llama-cpp-3.21.1-contract-example.log")[0])
		for i := range f.levels {
			f.serverCPULevel(i, tc.demand, tc.threads)
		}
		sw := analyzeOne(t, f.write(), testSettings())
		d := sw.Diagnosis
		wantWall(t, d, tc.want, 16)
		if d.Primary.Basis != BasisServerCPU || !hasEvidence(d.Primary.Evidence, EvServerCPU, func(e Evidence) bool { return near(e.Value, tc.demand/float64(tc.threads), 1e-6) && e.Name == "decode" }) ||
			!hasEvidence(d.Primary.Evidence, EvServerCPUTotal, func(e Evidence) bool { return e.Ref == 1 && near(e.Value, tc.demand, 0.05) }) {
			t.Errorf("demand %v over %d threads: wall %+v", tc.demand, tc.threads, d.Primary)
		}
		if l := sw.Levels[kneeLevel[16]].Server; !l.CPUKnown || l.CPUBusiestThread != "decode" || l.CPUHostCores != 2 {
			t.Errorf("server CPU %+v", l)
		}
	}
	// Without the server's CPU, a CPU engine's knee is inconclusive and
	// names that measurement.
	f := kneeSweep(t)
	f.manifest.GPUs = nil
	f.manifest.Engine.Name = "node-llama-cpp"
	f.log(f.at(0, 0.5), fixtureLines(t, "node-llama-cpp-3.21.1-contract-example.log")[0])
	d := analyzeOne(t, f.write(), testSettings()).Diagnosis
	if d.Wall != WallInconclusive || d.Primary.Deciding != MeasureServerCPU || d.Primary.Likely != WallCompute {
		t.Errorf("verdict %+v", d.Primary)
	}
}

// The entry point for log-only verdicts applies the same rules to windows
// that hold only the server's side.
func TestDiagnoseWindowsFromALog(t *testing.T) {
	t.Parallel()
	var ws []Window
	for i, running := range []float64{1, 2, 4, 4} {
		l := LevelStats{LevelIndex: i, Concurrency: 1 << i, Load: LoadKeyOf(AxisConcurrency, 1<<i, 0)}
		l.Server.RunningMax, l.Server.RunningKnown = running, true
		l.Server.WaitingKnown, l.Server.KVUsageKnown = true, true
		l.Server.KVUsageMaxFraction = 0.25 * running
		if i == 3 {
			l.Server.Preemptions, l.Server.PreemptionsKnown, l.Server.WaitingMax = 12, true, 4
		}
		ws = append(ws, Window{Level: l})
	}
	_, d := DiagnoseWindows(ws, AxisConcurrency, Sources{Log: true, KVObservable: true, Engine: "vllm"}, testSettings())
	wantWall(t, d, WallKVCache, 8)
	if e := d.Primary.Evidence[0]; e.Kind != EvPreemptions || e.Value != 12 {
		t.Errorf("evidence %+v", d.Primary.Evidence)
	}
}
