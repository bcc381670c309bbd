package merge

import (
	"slices"
	"sort"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// clientSamples is the shards' self-check as one client, sampled as one
// client is: one row every sampling interval of the shards (not at every
// time any shard sampled, which would be N times as dense and uneven), from
// the run's start on (a shard's wait for --start-at is not part of the
// run). Each row holds the CPU time all shards used since then (each
// interpolated between its own samples), all their cores, their open
// streams, and the largest send lag any of them saw since the row before.
// So the merged run's client_samples read as one client host's with the
// cores of all of them; each shard's own verdict on its levels (a shard
// that was the bottleneck alone) is among the shard warnings, from its own
// run.
func (mg *merged) clientSamples() []rundir.ClientSampleRow {
	type series struct {
		rows []rundir.ClientSampleRow
		base rundir.ClientSampleRow
		next int // first row not yet counted into a send-lag maximum
	}
	var all []series
	var times []int64
	var cpus int32
	waitKnown := true
	for _, s := range mg.ss {
		if len(s.samples) == 0 {
			continue
		}
		rows := append([]rundir.ClientSampleRow(nil), s.samples...)
		for i := range rows {
			rows[i].TimeNS = s.refNS(rows[i].TimeNS)
			times = append(times, rows[i].TimeNS)
			waitKnown = waitKnown && rows[i].CPUWaitS != nil
		}
		sort.SliceStable(rows, func(i, j int) bool { return rows[i].TimeNS < rows[j].TimeNS })
		all = append(all, series{rows: rows, base: rows[0]})
		cpus += rows[0].CPUs
	}
	if len(all) == 0 {
		return nil
	}
	var gaps []int64
	for _, sr := range all {
		for i := 1; i < len(sr.rows); i++ {
			gaps = append(gaps, sr.rows[i].TimeNS-sr.rows[i-1].TimeNS)
		}
	}
	grid := sampleGrid(times, gaps, mg.startNS()-preStartNS)
	var out []rundir.ClientSampleRow
	for k, t := range grid {
		row := rundir.ClientSampleRow{TimeNS: t, CPUs: cpus}
		var wait float64
		for j := range all {
			sr := &all[j]
			if k == 0 {
				// CPU time and send lags are counted from the first row on
				u, sy, w, _ := at(sr.rows, t)
				sr.base = rundir.ClientSampleRow{CPUUserS: u, CPUSystemS: sy, CPUWaitS: &w}
				for sr.next < len(sr.rows) && sr.rows[sr.next].TimeNS < t {
					sr.next++
				}
			}
			u, sy, w, open := at(sr.rows, t)
			row.CPUUserS += u - sr.base.CPUUserS
			row.CPUSystemS += sy - sr.base.CPUSystemS
			if waitKnown {
				wait += w - *sr.base.CPUWaitS
			}
			row.OpenStreams += open
			for ; sr.next < len(sr.rows) && sr.rows[sr.next].TimeNS <= t; sr.next++ {
				row.SendLagMaxS = max(row.SendLagMaxS, sr.rows[sr.next].SendLagMaxS)
			}
		}
		if waitKnown {
			row.CPUWaitS = &wait
		}
		out = append(out, row)
	}
	return out
}

// preStartNS is how much of the time before the run's first level start a
// merged run keeps of its samples: a single host's run starts sampling a
// moment before its first level (its preparation requests), a shard up to
// --start-at's lead earlier (its wait), which is not part of the run.
const preStartNS = int64(time.Second)

// startNS is the first level's start on the reference clock (0: no level).
func (mg *merged) startNS() int64 {
	var first int64
	for _, s := range mg.ss {
		for _, l := range s.levels {
			if t := s.refNS(l.StartNS); l.Concurrency > 0 && (first == 0 || t < first) {
				first = t
			}
		}
	}
	return first
}

// sampleGrid is the merged client's sample times: one every step (the
// median gap of the shards' own samples), from the first sample at or
// after from to the last, which is kept. Without gaps to go by (one sample
// a shard) it is the samples' own times.
func sampleGrid(times, gaps []int64, from int64) []int64 {
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	first, last := times[0], times[len(times)-1]
	if len(gaps) == 0 {
		return slices.Compact(times)
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	step := gaps[len(gaps)/2]
	if step <= 0 {
		return slices.Compact(times)
	}
	start := max(first, min(from, last))
	var out []int64
	for t := start; t < last; t += step {
		out = append(out, t)
	}
	return append(out, last)
}

// at is a shard's cumulative CPU times at t, interpolated between its
// samples (held at the ends), and its open streams then (0 outside).
func at(rows []rundir.ClientSampleRow, t int64) (user, sys, wait float64, open int64) {
	w := func(r rundir.ClientSampleRow) float64 {
		if r.CPUWaitS == nil {
			return 0
		}
		return *r.CPUWaitS
	}
	i := sort.Search(len(rows), func(i int) bool { return rows[i].TimeNS >= t })
	switch {
	case i == 0:
		r := rows[0]
		if r.TimeNS == t {
			open = r.OpenStreams
		}
		return r.CPUUserS, r.CPUSystemS, w(r), open
	case i == len(rows):
		r := rows[len(rows)-1]
		return r.CPUUserS, r.CPUSystemS, w(r), 0
	}
	a, b := rows[i-1], rows[i]
	f := float64(t-a.TimeNS) / float64(b.TimeNS-a.TimeNS)
	lerp := func(x, y float64) float64 { return x + f*(y-x) }
	return lerp(a.CPUUserS, b.CPUUserS), lerp(a.CPUSystemS, b.CPUSystemS), lerp(w(a), w(b)), a.OpenStreams
}
