package analyze

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/headroom-llm/headroom/rundir"
)

// Energy per output token on the recorded H200 runs (their telemetry has
// power samples and no energy counter), against a computation by hand
// from the raw tables: trapezoids over the power samples inside each
// level's measured window, scaled from the sampled span to the window,
// over the server-reported output tokens of the window's measured
// successful requests.
func TestEnergyOnRecordedH200Runs(t *testing.T) {
	for _, dir := range []string{"h200/sweep-kv256", "h200/sweep-kv768", "h200-llamacpp/sweep-f16", "h200-llamacpp/sweep-q4_0"} {
		t.Run(dir, func(t *testing.T) {
			path := filepath.Join("..", "examples", "runs", dir)
			gpu, err := rundir.ReadTable[rundir.GPUTelemetryRow](path, rundir.TableGPUTelemetry)
			if err != nil {
				t.Fatal(err)
			}
			levels, err := rundir.ReadTable[rundir.LevelRow](path, rundir.TableLevels)
			if err != nil {
				t.Fatal(err)
			}
			reqs, err := rundir.ReadTable[rundir.RequestRow](path, rundir.TableRequests)
			if err != nil {
				t.Fatal(err)
			}
			want := map[int]float64{} // level index → J per output token
			for _, lv := range levels {
				var j, t0, t1 float64
				var prev *rundir.GPUTelemetryRow
				for i := range gpu { // one GPU, rows in time order
					r := &gpu[i]
					if r.TimeNS < lv.WarmupEndNS || r.TimeNS > lv.EndNS {
						continue
					}
					if prev == nil {
						t0 = float64(r.TimeNS)
					} else {
						j += (prev.PowerW + r.PowerW) / 2 * float64(r.TimeNS-prev.TimeNS) / 1e9
					}
					t1, prev = float64(r.TimeNS), r
				}
				var tokens int64
				for _, r := range reqs {
					if r.LevelIndex == lv.LevelIndex && !r.Warmup && r.Status == rundir.StatusOK && r.ServerCompletionTokens != nil {
						tokens += *r.ServerCompletionTokens
					}
				}
				if t1 > t0 && tokens > 0 {
					want[int(lv.LevelIndex)] = j * float64(lv.EndNS-lv.WarmupEndNS) / (t1 - t0) / float64(tokens)
				}
			}
			run, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Analyze([]*Run{run}, testSettings())
			if err != nil {
				t.Fatal(err)
			}
			got := 0
			for _, l := range rep.Runs[0].Sweep.Levels {
				w, ok := want[l.LevelIndex]
				if !ok {
					if l.Energy != nil && l.Energy.GPUJPerOutputToken > 0 {
						t.Errorf("c=%d: %.4g J/token where the tables give none", l.Concurrency, l.Energy.GPUJPerOutputToken)
					}
					continue
				}
				got++
				e := l.Energy
				if e == nil || e.GPUEnergyFrom != EnergyFromPower || e.GPUDevices != 1 || math.Abs(e.GPUJPerOutputToken-w) > 1e-6*w {
					t.Errorf("c=%d: energy %+v, want %.6g J/output token from integrated power (rel %g)", l.Concurrency, e, w, (e.GPUJPerOutputToken-w)/w)
					continue
				}
				if p := l.Server.GPUPowerMeanW; math.Abs(p-e.GPUJ/e.WindowS) > 1e-9*p {
					t.Errorf("c=%d: mean GPU power %.4g W is not the energy over the window (%.4g W)", l.Concurrency, p, e.GPUJ/e.WindowS)
				}
				t.Logf("c=%-3d %7.1f W  %.4f J/output token", l.Concurrency, e.GPUPowerW, e.GPUJPerOutputToken)
			}
			if got < 4 {
				t.Errorf("only %d levels with energy", got)
			}
		})
	}
}

// A few of the values above, pinned so that a change to either computation
// shows: the 8B shape on transformers at c=1 and c=64, llama.cpp f16 at
// c=1, and the thrashing llama.cpp level (c=16, the GPU near idle).
func TestEnergyPinnedValues(t *testing.T) {
	for _, tt := range []struct {
		dir          string
		conc         int
		jPerTok, pow float64
	}{
		{"h200/sweep-kv256", 1, 12.3428, 360.52},
		{"h200/sweep-kv256", 64, 1.92095, 517.09},
		{"h200-llamacpp/sweep-f16", 1, 4.10738, 516.71},
		{"h200-llamacpp/sweep-f16", 16, 17.7455, 128.6},
	} {
		run, err := Load(filepath.Join("..", "examples", "runs", tt.dir))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Analyze([]*Run{run}, testSettings())
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range rep.Runs[0].Sweep.Levels {
			if l.Concurrency != tt.conc {
				continue
			}
			if e := l.Energy; e == nil || math.Abs(e.GPUJPerOutputToken/tt.jPerTok-1) > 1e-4 || math.Abs(e.GPUPowerW/tt.pow-1) > 1e-3 {
				t.Errorf("%s c=%d: %+v, want %.6g J/token at %.5g W", tt.dir, tt.conc, e, tt.jPerTok, tt.pow)
			}
		}
	}
}

func mj(v int64) *int64 { return &v }

// The energy counter is used when every GPU's samples carry it; one GPU
// without it sends every GPU to the power samples, so the sum has one
// source. RAPL zones are summed without double counting, across a wrap.
func TestLevelEnergySources(t *testing.T) {
	const s = int64(1e9)
	level := func() []LevelStats {
		return []LevelStats{{LevelIndex: 0, Concurrency: 4, WarmupEndNS: 10 * s, EndNS: 20 * s, WindowS: 10, OutputTokens: 1000}}
	}
	// Two GPUs sampled at 10, 15 and 20 s. Their counters say 3000 J and
	// 1000 J over the window; their power samples say 400 W and 100 W.
	gpu := []rundir.GPUTelemetryRow{
		{TimeNS: 10 * s, Device: 0, PowerW: 400, EnergyMJ: mj(5_000_000)},
		{TimeNS: 15 * s, Device: 0, PowerW: 400, EnergyMJ: mj(6_500_000)},
		{TimeNS: 20 * s, Device: 0, PowerW: 400, EnergyMJ: mj(8_000_000)},
		{TimeNS: 10 * s, Device: 1, PowerW: 100, EnergyMJ: mj(1_000_000)},
		{TimeNS: 15 * s, Device: 1, PowerW: 100, EnergyMJ: mj(1_500_000)},
		{TimeNS: 20 * s, Device: 1, PowerW: 100, EnergyMJ: mj(2_000_000)},
		{TimeNS: 25 * s, Device: 0, PowerW: 700, EnergyMJ: mj(9_000_000)}, // after the window
	}
	levels := level()
	levelEnergy(&Run{GPU: gpu}, levels)
	if e := levels[0].Energy; e == nil || e.GPUEnergyFrom != EnergyFromCounter || e.GPUDevices != 2 || e.GPUJ != 4000 || e.GPUJPerOutputToken != 4 || e.GPUPowerW != 400 {
		t.Errorf("counter: %+v", e)
	}
	if p := levels[0].Server.GPUPowerMeanW; p != 400 {
		t.Errorf("mean GPU power %g W, want the energy over the window", p)
	}
	gpu[4].EnergyMJ = nil // GPU 1 has no counter at one sample
	levels = level()
	levelEnergy(&Run{GPU: gpu}, levels)
	if e := levels[0].Energy; e == nil || e.GPUEnergyFrom != EnergyFromPower || e.GPUJ != 5000 || e.GPUJPerOutputToken != 5 {
		t.Errorf("power: %+v", e)
	}
	// Samples at 12 and 18 s only: 6 s sampled of a 10 s window, scaled.
	levels = level()
	levelEnergy(&Run{GPU: []rundir.GPUTelemetryRow{{TimeNS: 12 * s, PowerW: 300}, {TimeNS: 18 * s, PowerW: 300}}}, levels)
	if e := levels[0].Energy; e == nil || math.Abs(e.GPUJ-3000) > 1e-9 {
		t.Errorf("scaled to the window: %+v", e)
	}
	// One sample in the window: no energy.
	levels = level()
	levelEnergy(&Run{GPU: []rundir.GPUTelemetryRow{{TimeNS: 12 * s, PowerW: 300}}}, levels)
	if levels[0].Energy != nil {
		t.Errorf("one sample: %+v", levels[0].Energy)
	}

	// RAPL: package-0 wraps once (range 1000 J), package-1 plain, DRAM
	// counted, the core subzone and psys not (they are inside others).
	const rng = 1_000_000_000 // µJ
	cpu := []rundir.CPUEnergyRow{
		{TimeNS: 10 * s, Zone: "intel-rapl:0", Name: "package-0", EnergyUJ: 900_000_000, MaxEnergyRangeUJ: rng},
		{TimeNS: 15 * s, Zone: "intel-rapl:0", Name: "package-0", EnergyUJ: 100_000_000, MaxEnergyRangeUJ: rng}, // +200 J across the wrap
		{TimeNS: 20 * s, Zone: "intel-rapl:0", Name: "package-0", EnergyUJ: 300_000_000, MaxEnergyRangeUJ: rng},
		{TimeNS: 10 * s, Zone: "intel-rapl:1", Name: "package-1", EnergyUJ: 0, MaxEnergyRangeUJ: rng},
		{TimeNS: 20 * s, Zone: "intel-rapl:1", Name: "package-1", EnergyUJ: 350_000_000, MaxEnergyRangeUJ: rng},
		{TimeNS: 10 * s, Zone: "intel-rapl:0:1", Name: "dram", EnergyUJ: 0, MaxEnergyRangeUJ: rng},
		{TimeNS: 20 * s, Zone: "intel-rapl:0:1", Name: "dram", EnergyUJ: 50_000_000, MaxEnergyRangeUJ: rng},
		{TimeNS: 10 * s, Zone: "intel-rapl:0:0", Name: "core", EnergyUJ: 0, MaxEnergyRangeUJ: rng},
		{TimeNS: 20 * s, Zone: "intel-rapl:0:0", Name: "core", EnergyUJ: 300_000_000, MaxEnergyRangeUJ: rng},
		{TimeNS: 10 * s, Zone: "psys", Name: "psys", EnergyUJ: 0, MaxEnergyRangeUJ: rng},
		{TimeNS: 20 * s, Zone: "psys", Name: "psys", EnergyUJ: 900_000_000, MaxEnergyRangeUJ: rng},
	}
	levels = level()
	levelEnergy(&Run{CPUEnergy: cpu}, levels)
	e := levels[0].Energy
	if e == nil || e.CPUEnergyFrom != EnergyFromRAPL || math.Abs(e.CPUJ-800) > 1e-9 || math.Abs(e.CPUJPerOutputToken-0.8) > 1e-12 ||
		math.Abs(e.CPUPowerW-80) > 1e-9 || e.GPUDevices != 0 || len(e.CPUZones) != 3 {
		t.Errorf("RAPL: %+v", e)
	}
	if levels[0].Server.GPUPowerMeanW != 0 {
		t.Error("no GPU: no GPU power")
	}
}

func TestCounterDelta(t *testing.T) {
	for _, tt := range []struct{ prev, cur, max, want int64 }{
		{100, 250, 1000, 150},
		{900, 100, 1000, 200}, // wrapped once
		{900, 100, 0, 0},      // went back without a known range: a reset
		{900, 900, 1000, 0},
	} {
		if got := counterDelta(tt.prev, tt.cur, tt.max); got != tt.want {
			t.Errorf("counterDelta(%d, %d, %d) = %d, want %d", tt.prev, tt.cur, tt.max, got, tt.want)
		}
	}
}
