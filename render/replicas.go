package render

import (
	"github.com/headroom-llm/headroom/analyze"
)

// replicasTable shows a sweep spread over several servers replica by
// replica: its share of the set's requests at each level (the balance),
// its own output rate and latencies, and the wall its own data shows.
// The tables above it are the set's, as one box.
func replicasTable(sw *analyze.SweepAnalysis) (table, bool) {
	if len(sw.Replicas) < 2 {
		return table{}, false
	}
	t := table{
		Caption: "Per replica: each server of the set alone, at each level of the set's load: its share of the measured requests, " +
			"its output rate and its median latencies, and the wall its own requests, metrics and log show.",
		Head:  []string{"Replica", "Load", "Requests", "Share", "Output tok/s", "TTFT p50", "TPOT p50", "Wall"},
		Right: []bool{false, true, true, true, true, true, true, false},
	}
	for _, r := range sw.Replicas {
		name := integer(r.Index) + ": " + r.BaseURL
		for j, l := range r.Levels {
			row := []string{"", loadName(l.Load), integer(l.Requests), orDash(l.Share, percent), orDash(l.OutputTokPerS, sig),
				durationText(l.TTFTP50S), durationText(l.TPOTP50S), ""}
			if j == 0 {
				row[0], row[7] = name, wallName(r.Wall)
			}
			t.Rows = append(t.Rows, row)
		}
	}
	lo, hi := sw.Replicas[0].Share, sw.Replicas[0].Share
	for _, r := range sw.Replicas {
		lo, hi = min(lo, r.Share), max(hi, r.Share)
	}
	t.Notes = append(t.Notes, "Over all levels the replicas took "+percent(lo)+" to "+percent(hi)+" of the requests"+balanceText(sw.Balance)+".")
	return t, true
}

func balanceText(b string) string {
	switch b {
	case "least-outstanding":
		return ", each request sent to the replica with the fewest in flight"
	case "round-robin":
		return ", the requests sent to each replica in turn"
	}
	return ""
}
