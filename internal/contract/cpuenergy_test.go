package contract_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/collect/sweep"
	"github.com/headroom-llm/headroom/internal/testengine"
)

// A sweep of the real test engine on a host whose RAPL package counter
// (a fake powercap folder: this machine has none) advances at 40 W and
// wraps every 100 J: the sweep records cpu_energy, and the report gives
// each level 40 W and that energy per output token, across the wraps.
func TestCPUEnergyFromSweepToReport(t *testing.T) {
	root := t.TempDir()
	zone := filepath.Join(root, "intel-rapl:0")
	if err := os.MkdirAll(zone, 0o755); err != nil {
		t.Fatal(err)
	}
	const watts, rangeUJ = 40.0, 100_000_000 // wraps every 2.5 s
	put := func(name, v string) {
		tmp := filepath.Join(zone, "."+name)
		if err := os.WriteFile(tmp, []byte(v+"\n"), 0o644); err != nil {
			t.Error(err)
		}
		if err := os.Rename(tmp, filepath.Join(zone, name)); err != nil {
			t.Error(err)
		}
	}
	put("name", "package-0")
	put("max_energy_range_uj", strconv.Itoa(rangeUJ))
	start := time.Now()
	put("energy_uj", "0")
	stop := make(chan struct{})
	done := make(chan struct{})
	// maxGap is the longest the counter went unwritten: a reading can be
	// that stale at each end of a level's window. On a loaded machine the
	// 20 ms ticks come late, and the bound below widens with them.
	var maxGap time.Duration
	go func() {
		defer close(done)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		last := time.Now()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				uj := int64(watts*time.Since(start).Seconds()*1e6) % rangeUJ
				put("energy_uj", strconv.FormatInt(uj, 10))
				now := time.Now()
				maxGap = max(maxGap, now.Sub(last))
				last = now
			}
		}
	}()

	// The writer must end with the test, also when the test ends early
	// (no engine installed): it reports through t.
	stopWriter := sync.OnceFunc(func() { close(stop); <-done })
	t.Cleanup(stopWriter)

	e := testengine.Start(t, testengine.Options{Sequences: 4, CtxPerSeq: 512})
	dir := filepath.Join(t.TempDir(), "run")
	s, err := sweep.New(e.BaseURL, sweep.WithLevels(1, 4), sweep.WithDurationPerLevel(3*time.Second), sweep.WithWarmup(1),
		sweep.WithPromptTokens(sweep.Fixed(32)), sweep.WithOutputTokens(sweep.Fixed(16)), sweep.WithNoGPU(),
		sweep.WithPowercap(root), sweep.WithTimeout(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := s.Record(ctx, dir); err != nil {
		t.Fatal(err)
	}
	stopWriter()
	run, err := analyze.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	set := analyze.Default()
	set.Cost = analyze.CostSettings{HostHourUSD: 1, KWhUSD: 0.5}
	rep, err := analyze.Analyze([]*analyze.Run{run}, set)
	if err != nil {
		t.Fatal(err)
	}
	sw := rep.Runs[0].Sweep
	for _, l := range sw.Levels {
		en := l.Energy
		if en == nil || en.CPUEnergyFrom != analyze.EnergyFromRAPL || en.GPUDevices != 0 {
			t.Fatalf("c=%d: energy %+v", l.Concurrency, en)
		}
		// The fake advances in 20 ms steps, the sweep samples every 0.5 s:
		// within 10 % over a level of a few seconds, plus what a reading
		// as stale as the fake's longest gap, at both ends, can move it.
		tol := 0.1 + 2*maxGap.Seconds()/en.WindowS
		if math.Abs(en.CPUPowerW/watts-1) > tol || en.OutputTokens != float64(l.OutputTokens) ||
			math.Abs(en.CPUJPerOutputToken-en.CPUJ/float64(l.OutputTokens)) > 1e-12 {
			t.Errorf("c=%d: %.1f W (want %.0f within %.0f %%: the fake's longest gap %v), %+v", l.Concurrency, en.CPUPowerW, watts, tol*100, maxGap, en)
		}
		t.Logf("c=%d: %.1f W, %.3f J/output token over %.1f s", l.Concurrency, en.CPUPowerW, en.CPUJPerOutputToken, en.WindowS)
	}
	c := sw.Cost
	if c == nil || c.Basis != analyze.CostPerHost || len(c.Points) == 0 {
		t.Fatalf("cost %+v", c)
	}
	for _, p := range c.Points {
		if p.PowerFrom != analyze.PowerMeasured || p.EnergyFrom != analyze.EnergyFromRAPL || math.Abs(p.USDPerHour-(1+p.PowerW/1000*0.5)) > 1e-12 {
			t.Errorf("%s: %+v", p.Name, p)
		}
	}
}
