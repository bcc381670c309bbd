package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/headroom-llm/headroom/collect/sweep"
)

// shardFlags are the flags of a sweep run from several hosts.
type shardFlags struct {
	shard      shardSpec
	fromEnv    bool
	startAt    time.Time
	levelEvery time.Duration
	k8s        k8sFlags
}

// shardSpec is --shard I/N.
type shardSpec struct{ index, count int }

func parseShard(s string) (shardSpec, error) {
	i, n, ok := strings.Cut(s, "/")
	if !ok {
		// --shard-from-env with --shard N: the count alone.
		i, n = "", s
	}
	count, err := strconv.Atoi(strings.TrimSpace(n))
	if err != nil || count < 1 {
		return shardSpec{}, fmt.Errorf("%q: want I/N, the shard I (0-based) of N shards, e.g. 0/4", s)
	}
	sp := shardSpec{index: -1, count: count}
	if ok {
		idx, err := strconv.Atoi(strings.TrimSpace(i))
		if err != nil || idx < 0 || idx >= count {
			return shardSpec{}, fmt.Errorf("%q: want I/N with I from 0 to N−1, e.g. 0/4", s)
		}
		sp.index = idx
	}
	return sp, nil
}

// parseStartAt reads --start-at: an RFC 3339 time, Unix seconds, or
// +DURATION from now (only where the time is fixed once for every shard:
// --emit-k8s-job writes the absolute time into the Job).
func parseStartAt(s string) (time.Time, error) {
	if d, ok := strings.CutPrefix(s, "+"); ok {
		dur, err := time.ParseDuration(d)
		if err != nil || dur < 0 {
			return time.Time{}, fmt.Errorf("%q: want +DURATION (e.g. +2m), an RFC 3339 time or Unix seconds", s)
		}
		return time.Now().Add(dur).Truncate(time.Second).UTC(), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f > 0 {
		return time.Unix(0, int64(f*1e9)).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("%q: want an RFC 3339 time (2026-12-01T23:30:00Z), Unix seconds, or +DURATION", s)
}

func (f *shardFlags) define(fl *pflag.FlagSet) {
	parsedVar(fl, &f.shard, "shard", "I/N", "", "run shard I (0-based) of N of this plan, one per client host: each level's concurrency (or rate) split, the requests partitioned; merge the shards' runs with headroom merge", parseShard)
	fl.BoolVar(&f.fromEnv, "shard-from-env", false, "take the shard index I from $JOB_COMPLETION_INDEX (a Kubernetes Indexed Job); --shard then gives N (or I/N, I ignored)")
	parsedVar(fl, &f.startAt, "start-at", "time", "", "with --shard: when level 0 starts, the same for every shard (RFC 3339 or Unix seconds; +DURATION from now with --emit-k8s-job)", parseStartAt)
	fl.DurationVar(&f.levelEvery, "level-every", 0, "with --shard: time between level starts (level k starts at --start-at + k × this); needed with more than one level")
	f.k8s.define(fl)
}

// option is the sweep option of the shard flags; nil without --shard.
func (f *shardFlags) option(startAtGiven bool) (sweep.Option, error) {
	if f.shard.count == 0 {
		if f.fromEnv || startAtGiven || f.levelEvery > 0 {
			return nil, usageError{errors.New("--shard-from-env, --start-at and --level-every go with --shard I/N")}
		}
		return nil, nil
	}
	idx := f.shard.index
	if f.fromEnv {
		v, ok := os.LookupEnv("JOB_COMPLETION_INDEX")
		if !ok {
			return nil, usageError{errors.New("--shard-from-env: $JOB_COMPLETION_INDEX is not set (Kubernetes sets it in the pods of an Indexed Job)")}
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n >= f.shard.count {
			return nil, usageError{fmt.Errorf("--shard-from-env: $JOB_COMPLETION_INDEX is %q: want 0 to %d", v, f.shard.count-1)}
		}
		idx = n
	}
	if idx < 0 {
		return nil, usageError{fmt.Errorf("--shard %d gives the count only: give I/N, or --shard-from-env", f.shard.count)}
	}
	if !startAtGiven {
		return nil, usageError{errors.New("--shard needs --start-at: the time level 0 starts, the same for every shard")}
	}
	return sweep.WithShard(idx, f.shard.count, f.startAt, f.levelEvery), nil
}
