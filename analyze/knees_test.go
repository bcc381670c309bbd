package analyze

import (
	"testing"
)

// kneeSweep is a constructed sweep whose TPOT bends at c=16: per level the
// p50 TPOT in seconds.
var kneeTPOT = map[int]float64{1: 0.020, 2: 0.020, 4: 0.021, 8: 0.022, 16: 0.040, 32: 0.080}

const kneeTTFT = 0.05

func kneeSweep(t *testing.T) *fakeSweep {
	f := newFakeSweep(t)
	f.noTokens = true // keeps the race-enabled tests quick; levels_test covers chunk timings
	for _, c := range []int{1, 2, 4, 8, 16, 32} {
		f.level(c, 3, constTTFT(kneeTTFT), kneeTPOT[c])
	}
	return f
}

// wantTokPerS is a closed loop's throughput: c lanes each finishing 16
// tokens per TTFT + 15 TPOT.
func wantTokPerS(c int) float64 { return float64(c) * 16 / (kneeTTFT + 15*kneeTPOT[c]) }

func TestKneesPlateauPeak(t *testing.T) {
	t.Parallel()
	sw := analyzeOne(t, kneeSweep(t).write(), testSettings())
	k := sw.Knees
	if k.BaselineConcurrency != 1 || !near(k.BaselineTPOTP50S, 0.020, 1e-9) {
		t.Errorf("baseline c=%d %v", k.BaselineConcurrency, k.BaselineTPOTP50S)
	}
	if k.TPOTKneeConcurrency != 16 || k.FlatFromConcurrency != 1 || k.FlatToConcurrency != 8 {
		t.Errorf("knee c=%d, flat %d..%d; want knee 16, flat 1..8", k.TPOTKneeConcurrency, k.FlatFromConcurrency, k.FlatToConcurrency)
	}
	if !near(k.FlatTPOTMaxRatio, 1.1, 1e-9) {
		t.Errorf("flat max ratio %v, want 1.1", k.FlatTPOTMaxRatio)
	}
	// Gains per doubling: 8→16 is (T16/T8)−1 ≈ 17%, 16→32 ≈ 4%: the
	// plateau starts at 16.
	g816 := wantTokPerS(16)/wantTokPerS(8) - 1
	g1632 := wantTokPerS(32)/wantTokPerS(16) - 1
	if g816 < 0.1 || g1632 >= 0.1 {
		t.Fatalf("constructed sweep is wrong: gains %v, %v", g816, g1632)
	}
	if k.PlateauConcurrency != 16 {
		t.Errorf("plateau c=%d, want 16 (steps %+v)", k.PlateauConcurrency, k.Steps)
	}
	if k.PeakConcurrency != 32 || !near(k.PeakOutputTokPerS, wantTokPerS(32), 1e-6) {
		t.Errorf("peak %v at c=%d, want %v at 32", k.PeakOutputTokPerS, k.PeakConcurrency, wantTokPerS(32))
	}
	if len(k.Steps) != 5 || !near(k.Steps[3].GainPerDoubling, g816, 1e-6) {
		t.Errorf("steps %+v", k.Steps)
	}
	if k.Plateau != PlateauReached || !k.Intervals || !near(k.TPOTKneeRatio, 2, 1e-9) {
		t.Errorf("plateau %q, intervals %v, knee ratio %v", k.Plateau, k.Intervals, k.TPOTKneeRatio)
	}
	// The default SLO (TTFT p99 ≤ 2 s, TPOT p99 ≤ 100 ms) holds at every
	// level: the operating point is the highest, and may be higher.
	op := sw.Operating
	if op.At.Concurrency != 32 || !op.Capped || op.SLOSource != SLODefault || op.FreeTo.Concurrency != 8 {
		t.Errorf("operating point %+v", op)
	}
}

// A level with too many errors cannot hold the peak.
func TestPeakSkipsUnsustainedLevels(t *testing.T) {
	t.Parallel()
	f := kneeSweep(t)
	for i := range f.reqs {
		// 2 of 96 measured requests (2%, above the 1% limit): throughput
		// stays the highest, but the level is not sustained.
		if f.reqs[i].Concurrency == 32 && (f.reqs[i].Seq == 5 || f.reqs[i].Seq == 6) && !f.reqs[i].Warmup {
			f.reqs[i].Status = "timeout"
		}
	}
	sw := analyzeOne(t, f.write(), testSettings())
	k := sw.Knees
	for _, l := range sw.Levels {
		if want := l.Concurrency != 32; l.Sustained != want {
			t.Errorf("c=%d: sustained %v, want %v (errors %d of %d)", l.Concurrency, l.Sustained, want, l.Errors, l.Requests)
		}
	}
	if k.PeakConcurrency != 16 {
		t.Errorf("peak at c=%d, want 16 (c=32 lost 2%% of its requests)", k.PeakConcurrency)
	}
	if k.UnsustainedPeakLevel != kneeLevel[32] {
		t.Errorf("unsustained peak level %d, want c=32's", k.UnsustainedPeakLevel)
	}
	if op := sw.Operating; op.At.Concurrency != 16 || op.FirstFailing.Concurrency != 32 {
		t.Errorf("operating point %+v: an unsustained level cannot be run at", op)
	}
}

func TestNoKneeNoPlateau(t *testing.T) {
	t.Parallel()
	f := newFakeSweep(t)
	for _, c := range []int{2, 4, 8} {
		f.level(c, 3, constTTFT(0.05), 0.02)
	}
	sw := analyzeOne(t, f.write(), testSettings())
	k := sw.Knees
	if k.TPOTKneeConcurrency != 0 || k.PlateauConcurrency != 0 || k.FlatToConcurrency != 8 || !k.BaselineNotC1 || k.Plateau != PlateauRising {
		t.Errorf("%+v", k)
	}
}

func TestGoodput(t *testing.T) {
	t.Parallel()
	set := testSettings()
	var err error
	if set.SLO, err = ParseSLO("ttft_p99=1s,tpot_p99=30ms"); err != nil {
		t.Fatal(err)
	}
	sw := analyzeOne(t, kneeSweep(t).write(), set)
	g := sw.Goodput
	if g.OperatingConcurrency != 8 || g.FirstFailingConcurrency != 16 || !near(g.OperatingOutputTokPerS, wantTokPerS(8), 1e-6) {
		t.Errorf("operating c=%d (%v tok/s), first failing c=%d", g.OperatingConcurrency, g.OperatingOutputTokPerS, g.FirstFailingConcurrency)
	}
	for _, l := range g.Levels {
		pass := l.Concurrency <= 8
		if l.Pass != pass || l.PerRequestKnown != true {
			t.Errorf("c=%d pass=%v known=%v", l.Concurrency, l.Pass, l.PerRequestKnown)
		}
		want := 0.0
		if pass {
			want = 1
		}
		if l.RequestsMeetingFraction != want {
			t.Errorf("c=%d meeting fraction %v, want %v", l.Concurrency, l.RequestsMeetingFraction, want)
		}
		if tpot := l.Bounds[1]; len(l.Bounds) != 2 || tpot.Metric != "tpot" || tpot.Known != true || (tpot.ValueS > tpot.MaxS) == pass {
			t.Errorf("c=%d bounds %+v", l.Concurrency, l.Bounds)
		}
	}
	if op := sw.Operating; op.At.Concurrency != 8 || op.SLOSource != SLOUser || op.FirstFailing.Concurrency != 16 || len(op.Missed) != 1 || op.Missed[0].Metric != "tpot" {
		t.Errorf("operating point %+v", op)
	}
	// A tighter SLO fails earlier.
	set.SLO, _ = ParseSLO("tpot_p50=20.5ms")
	if op := analyzeOne(t, kneeSweep(t).write(), set).Operating; op.At.Concurrency != 2 {
		t.Errorf("operating point c=%d, want 2 from the SLO", op.At.Concurrency)
	}
}

// The operating point is the SLO's, not the end of the flat-TPOT region:
// with an SLO that c=16 meets, the point is c=16 although TPOT bent there.
// (The fifth failure: the cap stayed at the flat end, and a
// baseline level was its own reason.)
func TestOperatingPointIsTheSLOs(t *testing.T) {
	t.Parallel()
	set := testSettings()
	set.SLO, _ = ParseSLO("ttft_p99=2s,tpot_p99=50ms")
	sw := analyzeOne(t, kneeSweep(t).write(), set)
	if op := sw.Operating; op.At.Concurrency != 16 || op.FreeTo.Concurrency != 8 || op.FirstFailing.Concurrency != 32 {
		t.Errorf("operating point %+v, want c=16, free to c=8, failing at c=32", op)
	}
}

// An open-loop sweep: every level has the same concurrency cap, so levels
// are told apart and ordered by arrival rate. The constructed timings are
// kneeSweep's, relabelled as rates.
func TestOpenLoopKneesByRate(t *testing.T) {
	t.Parallel()
	f := kneeSweep(t)
	f.manifest.Workload.Mode = "open"
	for i := range f.levels {
		f.levels[i].RateRPS = float64(f.levels[i].Concurrency)
		f.levels[i].Concurrency = 64
	}
	for i := range f.reqs {
		f.reqs[i].Concurrency = 64
	}
	sw := analyzeOne(t, f.write(), testSettings())
	k := sw.Knees
	if k.Axis != AxisRate || k.TPOTKneeLevel != kneeLevel[16] || k.TPOTKneeRateRPS != 16 || k.TPOTKneeConcurrency != 64 {
		t.Errorf("knee level %d rate %v cap %d axis %s", k.TPOTKneeLevel, k.TPOTKneeRateRPS, k.TPOTKneeConcurrency, k.Axis)
	}
	if k.PlateauRateRPS != 16 || k.PeakRateRPS != 32 || !k.BaselineIsLowestRate {
		t.Errorf("plateau %v peak %v", k.PlateauRateRPS, k.PeakRateRPS)
	}
	// The operating point is on the rate axis: a rate, never a concurrency.
	if op := sw.Operating; op.At.Axis != AxisRate || op.At.RateRPS != 32 || op.At.Value() != 32 || op.FreeTo.RateRPS != 8 {
		t.Errorf("operating point %+v", op)
	}
	// An open-loop level's load is its rate alone: its cap on requests in
	// flight (64) is no part of the key levels are matched by.
	if l := sw.Levels[3].Load; l != (LoadKey{Axis: AxisRate, RateRPS: 8}) || l.ID() != "8 req/s" {
		t.Errorf("load %+v (%s)", l, l.ID())
	}
}

// One level slowed by a busy host is not a knee: TPOT must stay above the
// factor at every higher level.
func TestKneeIgnoresOneSlowLevel(t *testing.T) {
	t.Parallel()
	f := newFakeSweep(t)
	for _, c := range []int{1, 2, 4, 8} {
		tpot := 0.020
		if c == 2 {
			tpot = 0.045 // one level under a noisy neighbour
		}
		f.level(c, 3, constTTFT(0.05), tpot)
	}
	k := analyzeOne(t, f.write(), testSettings()).Knees
	if k.TPOTKneeLevel >= 0 || k.FlatToConcurrency != 1 {
		t.Errorf("knee at level %d, flat to c=%d: want no knee (the flat region ends where TPOT first left it)", k.TPOTKneeLevel, k.FlatToConcurrency)
	}
}

// A finite open-loop run ends with a drain (its window runs to the last
// completion): the real llm-d result of vllm bench serve at 10 req/s, 300
// of 300 prompts done in 36.0 s with TTFT p50 53 ms, is not saturated; the
// same shortfall with requests waiting seconds for their first token is.
func TestOpenLoopDrainIsNotSaturation(t *testing.T) {
	level := func(ttftP50 float64) LevelStats {
		return LevelStats{RateRPS: 10, WindowS: 36.034275877000255, RequestsPerS: 8.325406649602808,
			TTFT: &Latency{N: 300, P50S: ttftP50}}
	}
	if openLoopSaturated(level(0.053)) {
		t.Error("a 6 s drain after 30 s of arrivals read as a backlog")
	}
	if !openLoopSaturated(level(3.0)) {
		t.Error("a shortfall whose requests waited 3 s is a backlog")
	}
	// Without a TTFT nothing tells the drain from a backlog: the shortfall
	// decides, as before.
	l := level(0)
	l.TTFT = nil
	if !openLoopSaturated(l) {
		t.Error("no TTFT: the shortfall alone decides")
	}
}
