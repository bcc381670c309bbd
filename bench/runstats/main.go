// Command runstats prints per-level client timing of a headroom sweep run
// as JSON, in the shape of the seed's serving_sweep.json rows (TTFT and TPOT
// p50/p99 in ms, nearest-rank percentiles as the seed computes them), so
// bench/run.sh compares both clients the same way.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"

	"github.com/headroom-llm/headroom/rundir"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: runstats RUN_DIR")
		os.Exit(2)
	}
	reqs, err := rundir.ReadTable[rundir.RequestRow](os.Args[1], rundir.TableRequests)
	if err != nil {
		fmt.Fprintln(os.Stderr, "runstats:", err)
		os.Exit(1)
	}
	type acc struct{ ttft, tpot []float64 }
	by := map[int64]*acc{}
	for _, r := range reqs {
		if r.Warmup || r.Status != rundir.StatusOK || r.FirstTokenNS == nil || r.ClientChunks < 2 {
			continue
		}
		a := by[r.Concurrency]
		if a == nil {
			a = &acc{}
			by[r.Concurrency] = a
		}
		a.ttft = append(a.ttft, float64(*r.FirstTokenNS-r.SendNS)/1e6)
		a.tpot = append(a.tpot, float64(r.EndNS-*r.FirstTokenNS)/1e6/float64(r.ClientChunks-1))
	}
	// the seed's pct(): sorted, index int(n*p/100)
	pct := func(xs []float64, p float64) float64 {
		sort.Float64s(xs)
		return xs[min(int(float64(len(xs))*p/100), len(xs)-1)]
	}
	var rows []map[string]float64
	for c, a := range by {
		rows = append(rows, map[string]float64{"concurrency": float64(c), "completed": float64(len(a.ttft)),
			"ttft_p50_ms": pct(a.ttft, 50), "ttft_p99_ms": pct(a.ttft, 99), "tpot_p50_ms": pct(a.tpot, 50), "tpot_p99_ms": pct(a.tpot, 99)})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i]["concurrency"] < rows[j]["concurrency"] })
	json.NewEncoder(os.Stdout).Encode(map[string]any{"rows": rows})
}
