// Command shardstats prints, for each shard run of a sweep from several
// hosts (bench/multihost.sh), the streams it held at once, the chunks per
// second it received, and the p99 of its timestamp error against the
// server's pacing: bench/streamserver sends chunk k of a request exactly
// k × itl after chunk 0, so a chunk received later than that, measured
// from the same request's first chunk, shows how late the client read it.
//
//	shardstats -itl 1s RUN...
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/headroom-llm/headroom/rundir"
	"github.com/headroom-llm/headroom/stats"
)

func main() {
	itl := flag.Duration("itl", time.Second, "the stream server's time between tokens")
	flag.Parse()
	for _, dir := range flag.Args() {
		if err := shard(dir, *itl); err != nil {
			fmt.Fprintln(os.Stderr, "shardstats:", err)
			os.Exit(1)
		}
	}
}

func shard(dir string, itl time.Duration) error {
	levels, err := rundir.ReadTable[rundir.LevelRow](dir, rundir.TableLevels)
	if err != nil {
		return err
	}
	tokens, err := rundir.ReadTable[rundir.TokenRow](dir, rundir.TableTokens)
	if err != nil {
		return err
	}
	samples, err := rundir.ReadTable[rundir.ClientSampleRow](dir, rundir.TableClientSamples)
	if err != nil {
		return err
	}
	reqs, err := rundir.ReadTable[rundir.RequestRow](dir, rundir.TableRequests)
	if err != nil {
		return err
	}
	held := int64(0)
	for _, s := range samples {
		held = max(held, s.OpenStreams)
	}
	cpu := 0.0 // the client's CPU seconds over its samples
	if n := len(samples); n > 1 {
		cpu = samples[n-1].CPUUserS + samples[n-1].CPUSystemS - samples[0].CPUUserS - samples[0].CPUSystemS
	}
	byReq := map[string][]rundir.TokenRow{}
	for _, t := range tokens {
		byReq[t.RequestID] = append(byReq[t.RequestID], t)
	}
	var errs []float64
	for _, ts := range byReq {
		sort.Slice(ts, func(i, j int) bool { return ts[i].Index < ts[j].Index })
		anchor := int64(0)
		for i, t := range ts {
			if a := t.RecvNS - int64(t.Index)*int64(itl); i == 0 || a < anchor {
				anchor = a
			}
		}
		for _, t := range ts {
			errs = append(errs, float64(t.RecvNS-int64(t.Index)*int64(itl)-anchor)/1e6)
		}
	}
	ok := 0
	for _, r := range reqs {
		if r.Status == rundir.StatusOK {
			ok++
		}
	}
	var from, to int64
	for _, l := range levels {
		if from == 0 || l.StartNS < from {
			from = l.StartNS
		}
		to = max(to, l.EndNS)
	}
	window := float64(to-from) / 1e9
	p := stats.Of(errs, 50, 99)
	fmt.Printf("%s: %d requests (%d ok), %d streams held at once, %.0f chunks/s over %.1f s, timestamp error p50 %.1f ms p99 %.1f ms, client CPU %.1f s\n",
		dir, len(reqs), ok, held, float64(len(tokens))/window, window, p[0], p[1], cpu)
	return nil
}
