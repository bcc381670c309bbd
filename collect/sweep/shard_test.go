package sweep

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/collect/loadgen"
	"github.com/headroom-llm/headroom/rundir"
)

// Every request of the plan's level is sent by exactly one shard, warm-up
// ones as warm-up, and the shards' streams add up to the level's.
func TestShardsPartitionTheLevel(t *testing.T) {
	cases := []struct{ conc, warm, reqs, shards int }{
		{1, 1, 16, 4}, {2, 2, 16, 4}, {4, 4, 16, 4}, {5, 5, 21, 4}, {64, 64, 256, 4},
		{3, 0, 7, 2}, {128, 128, 512, 3}, {8, 8, 100, 1},
	}
	start := time.Unix(1_800_000_000, 0)
	for _, c := range cases {
		plan := loadgen.Level{Index: 2, Concurrency: c.conc, Warmup: c.warm, Requests: c.reqs}
		seen := map[int]bool{}
		streams, sent := 0, 0
		for i := range c.shards {
			sp := &shardPlan{index: i, count: c.shards, startAt: start, levelEvery: 10 * time.Second}
			l := sp.shardLevel(plan, 5e6)
			if want := start.Add(20*time.Second + 5*time.Millisecond); !l.StartAt.Equal(want) {
				t.Errorf("%+v shard %d: starts %v, want %v (level 2, 5 ms offset)", c, i, l.StartAt, want)
			}
			streams += l.Concurrency
			if l.Concurrency == 0 && l.Warmup+l.Requests > 0 {
				t.Errorf("%+v shard %d: requests without streams", c, i)
			}
			for k := range l.Warmup + l.Requests {
				g := planSeqForTest(l, k)
				if seen[g] {
					t.Fatalf("%+v: request %d sent twice (shard %d)", c, g, i)
				}
				seen[g] = true
				if (k < l.Warmup) != (g < c.warm) {
					t.Errorf("%+v shard %d: local %d (warm-up %v) is plan request %d", c, i, k, k < l.Warmup, g)
				}
				sent++
			}
		}
		if streams != c.conc || sent != c.warm+c.reqs || len(seen) != sent {
			t.Errorf("%+v: %d streams, %d requests sent; want %d and %d", c, streams, sent, c.conc, c.warm+c.reqs)
		}
		for g := range c.warm + c.reqs {
			if !seen[g] {
				t.Errorf("%+v: plan request %d sent by no shard", c, g)
			}
		}
	}
}

func planSeqForTest(l loadgen.Level, k int) int {
	if l.SeqOf == nil {
		return k
	}
	return l.SeqOf(k)
}

// An open loop keeps the plan's schedule: each shard sends its requests at
// the plan's intended times, the rate split among them.
func TestShardedOpenLoopKeepsTheSchedule(t *testing.T) {
	plan := loadgen.Level{Index: 0, Concurrency: 64, RateRPS: 8, Arrivals: loadgen.Poisson(8, rand.New(rand.NewPCG(1, 0xa771))), Warmup: 8, Requests: 128}
	rate := 0.0
	for i := range 4 {
		sp := &shardPlan{index: i, count: 4, startAt: time.Unix(1_800_000_000, 0)}
		l := sp.shardLevel(plan, 0)
		rate += l.RateRPS
		if l.Concurrency != 16 {
			t.Errorf("shard %d: cap %d, want 16", i, l.Concurrency)
		}
		if l.SeqOf(0) != i || l.SeqOf(l.Warmup) != 8+i {
			t.Errorf("shard %d: first requests are plan's %d and %d", i, l.SeqOf(0), l.SeqOf(l.Warmup))
		}
	}
	if rate != 8 {
		t.Errorf("shards' rates add up to %v, want 8", rate)
	}
}

func TestShardNeedsLevelEvery(t *testing.T) {
	_, err := New("http://127.0.0.1:1", WithLevels(1, 2), WithShard(0, 2, time.Now(), 0))
	if err == nil {
		t.Fatal("two levels without --level-every: no error")
	}
	if _, err := New("http://127.0.0.1:1", WithLevels(4), WithShard(1, 2, time.Now(), 0)); err != nil {
		t.Fatal(err)
	}
	// One open-loop rate is one level, whatever the closed loop's default levels.
	if _, err := New("http://127.0.0.1:1", WithRates(64, 8), WithShard(1, 2, time.Now(), 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := New("http://127.0.0.1:1", WithRates(64, 8, 16), WithShard(1, 2, time.Now(), 0)); err == nil {
		t.Fatal("two rates without --level-every: no error")
	}
	if _, err := New("http://127.0.0.1:1", WithShard(2, 2, time.Now(), time.Second)); err == nil {
		t.Fatal("shard 2 of 2: no error")
	}
}

// A shard's level that starts late says why: level 0 because the shard was
// not ready by --start-at, a later one because the level before ran long.
func TestShardLateStartSaysWhy(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	s, err := New("http://127.0.0.1:1", WithLevels(2, 4), WithShard(0, 2, start, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	s.checkShardStart(rundir.LevelRow{LevelIndex: 0, Concurrency: 1, StartNS: start.UnixNano() + 100e6})
	if len(s.warnings) != 0 {
		t.Fatalf("100 ms late is on time: %q", s.warnings)
	}
	s.checkShardStart(rundir.LevelRow{LevelIndex: 0, Concurrency: 1, StartNS: start.UnixNano() + 30e9})
	s.checkShardStart(rundir.LevelRow{LevelIndex: 1, Concurrency: 2, StartNS: start.Add(time.Minute).UnixNano() + 5e9})
	if len(s.warnings) != 2 || !strings.Contains(s.warnings[0], "level 0 started 30.0 s after --start-at: this shard was not ready") ||
		!strings.Contains(s.warnings[1], "level 1 started 5.0 s after its shared start time (the level before ran past --level-every)") {
		t.Errorf("warnings %q", s.warnings)
	}
}
