package sweep

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/headroom-llm/headroom/collect/clocksync"
	"github.com/headroom-llm/headroom/collect/loadgen"
	"github.com/headroom-llm/headroom/rundir"
)

// shardPlan is this host's part of a sweep that several hosts run at once
// (WithShard).
type shardPlan struct {
	index, count int
	startAt      time.Time     // level 0, on the reference clock
	levelEvery   time.Duration // between level starts
}

// WithShard makes the sweep shard index (0-based) of count: every level's
// concurrency (open loop: its arrivals and its cap) is split across the
// shards, the seeded workload is partitioned by sequence number (each
// request of the plan is sent by exactly one shard), and level k starts at
// startAt + k × levelEvery on the shards' common reference clock (see
// collect/clocksync), which each shard measures before the first level.
// headroom merge joins the shards' runs into one.
func WithShard(index, count int, startAt time.Time, levelEvery time.Duration) Option {
	return func(c *config) error {
		switch {
		case count < 1:
			return fmt.Errorf("shard count %d: want at least 1", count)
		case index < 0 || index >= count:
			return fmt.Errorf("shard %d of %d: want 0 to %d", index, count, count-1)
		case startAt.IsZero():
			return errors.New("a shard needs the shared start time (--start-at)")
		case levelEvery < 0:
			return fmt.Errorf("level interval %v: want positive", levelEvery)
		}
		c.shard = &shardPlan{index: index, count: count, startAt: startAt, levelEvery: levelEvery}
		return nil
	}
}

// checkShard refuses a sharded plan whose levels cannot start together.
func (c *config) checkShard() error {
	if c.shard == nil {
		return nil
	}
	switch {
	case c.findMax != nil:
		return errors.New("--shard and --find-max do not combine: each shard would search on its own")
	case c.stopWhenSaturated:
		return errors.New("--shard and --stop-when-saturated do not combine: each shard would stop on its own")
	case c.traceCfg != nil || c.ramp != nil:
		return errors.New("--shard splits fixed levels (--concurrency or --rate); a trace replay or a ramp cannot be sharded yet")
	}
	n := len(c.levels)
	if len(c.rates) > 0 {
		n = len(c.rates) // an open loop's levels are its rates; c.levels keeps the closed loop's default
	}
	if n > 1 && c.shard.levelEvery == 0 {
		return fmt.Errorf("a shard of a sweep with %d levels needs --level-every: level k starts at --start-at + k × --level-every on every shard", n)
	}
	return nil
}

// Share is one shard's part of a level of size total (concurrency, or a
// count of requests) split over the active shards: the first total mod
// active shards get one more.
func Share(total, active, index int) int {
	if index >= active || active <= 0 {
		return 0
	}
	n := total / active
	if index < total%active {
		n++
	}
	return n
}

// activeShards is how many shards take part in a level of the given
// concurrency (or cap): at most one per stream.
func activeShards(count, concurrency int) int { return max(min(count, concurrency), 1) }

// shardLevel turns a level of the plan into this shard's share of it.
// Requests are partitioned by the plan's sequence numbers: of the warm-up
// requests 0…W−1 the shard sends those ≡ index (mod active), and so of the
// measured requests W, W+1, …; the open loop keeps the plan's schedule, so
// every request is sent at the time the single-host sweep would send it.
func (sp *shardPlan) shardLevel(l loadgen.Level, offsetNS int64) loadgen.Level {
	active := activeShards(sp.count, l.Concurrency)
	i := sp.index
	out := l
	out.StartAt = time.Unix(0, sp.startAt.UnixNano()+int64(l.Index)*int64(sp.levelEvery)+offsetNS)
	if i >= active {
		// No share of this level: it ends at once; merge knows the shard
		// had none from the plan.
		out.Concurrency, out.Warmup, out.Requests, out.Duration, out.RateRPS = 0, 0, 0, 0, 0
		if out.Arrivals != nil {
			out.Arrivals = loadgen.Times{}
		}
		return out
	}
	w := l.Warmup
	out.Concurrency = Share(l.Concurrency, active, i)
	out.Warmup = Share(w, active, i)
	if l.Requests > 0 {
		out.Requests = Share(l.Requests, active, i)
	}
	if l.RateRPS > 0 {
		out.RateRPS = l.RateRPS / float64(active)
	}
	wi := out.Warmup
	out.SeqOf = func(k int) int {
		if k < wi {
			return i + active*k
		}
		return w + i + active*(k-wi)
	}
	return out
}

// planID is the same on every shard of one plan: a hash of the workload as
// configured, the shard count and the start times.
func (s *Sweep) planID() string {
	c := &s.cfg
	b, _ := json.Marshal(struct {
		Endpoint                string
		Levels                  []int
		Rates                   []float64
		MaxConc, Requests, Warm int
		Duration                time.Duration
		Prompt, Output          Dist
		Prefix                  int
		Dataset                 string
		Seed                    int64
		Temperature             float64
		Count                   int
		StartAt                 time.Time
		Every                   time.Duration
	}{string(c.endpoint), c.levels, c.rates, c.maxConc, c.requestsPerLevel, c.warmup, c.durationPerLevel,
		c.prompt, c.output, c.sharedPrefix, c.dataset, c.seed, c.temperature,
		c.shard.count, c.shard.startAt.UTC(), c.shard.levelEvery})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// shardManifest is the manifest's record of the shard, before its clock is
// measured.
func (s *Sweep) shardManifest() *rundir.Shard {
	sp := s.cfg.shard
	if sp == nil {
		return nil
	}
	return &rundir.Shard{Index: sp.index, Count: sp.count, PlanID: s.planID(), StartAt: sp.startAt.UTC(), LevelEveryS: sp.levelEvery.Seconds()}
}

// measureClock measures this host's clock against the server's Date header
// before the first level: the levels' start times are on that clock, and
// merge corrects the shard's times by the offset.
func (ss *session) measureClock(ctx context.Context) error {
	s := ss.s
	if s.cfg.shard == nil {
		return nil
	}
	off := clocksync.ServerDate(ctx, s.HTTPClient(), s.url("/v1/models"), ss.header, s.clock.NowNS)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if off.Known {
		s.clockOffsetNS = int64(off.OffsetS * 1e9)
		s.cfg.logf("clock: %+.1f ms against the server's Date header, ± %.1f ms", off.OffsetS*1e3, off.UncertaintyS*1e3)
	} else {
		s.warn("this shard's clock could not be measured against the server (" + off.Error + "): its levels start by its own clock, and merge cannot correct its times")
	}
	ss.run.Manifest.Shard.Clock = &off
	return nil
}

// checkShardStart warns when a level of a shard started well after its
// shared start time: level 0 when the shard was not ready by --start-at, a
// later one when the previous level ran past --level-every (the shards'
// levels then overlapped).
func (s *Sweep) checkShardStart(row rundir.LevelRow) {
	sp := s.cfg.shard
	if sp == nil || row.Concurrency == 0 {
		return
	}
	want := sp.startAt.UnixNano() + int64(row.LevelIndex)*int64(sp.levelEvery) + s.clockOffsetNS
	late := time.Duration(row.StartNS - want)
	switch {
	case late <= lateStart:
	case row.LevelIndex == 0:
		s.warn(fmt.Sprintf("level 0 started %.1f s after --start-at: this shard was not ready by then (start the shards earlier), so its load began later than the other shards'", late.Seconds()))
	default:
		s.warn(fmt.Sprintf("level %d started %.1f s after its shared start time (the level before ran past --level-every): its load overlapped the other shards' previous level", row.LevelIndex, late.Seconds()))
	}
}

// lateStart is how late a shard's level may start before the manifest
// says so: the sleep and the clock measurement are good to a few ms.
const lateStart = 250 * time.Millisecond
