package merge

import (
	"sort"

	"github.com/headroom-llm/headroom/rundir"
)

// clientSamples is the shards' self-check as one client: at every time any
// shard sampled, the CPU time all shards used since they started (each
// interpolated between its own samples), all their cores, their open
// streams, and the largest send lag any of them saw since the time before.
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
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	var out []rundir.ClientSampleRow
	for k, t := range times {
		if k > 0 && t == times[k-1] {
			continue
		}
		row := rundir.ClientSampleRow{TimeNS: t, CPUs: cpus}
		var wait float64
		for j := range all {
			sr := &all[j]
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
