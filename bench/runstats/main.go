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
	levels, err := rundir.ReadTable[rundir.LevelRow](os.Args[1], rundir.TableLevels)
	if err != nil {
		fmt.Fprintln(os.Stderr, "runstats:", err)
		os.Exit(1)
	}
	chunks := map[int64]int64{} // measured chunks per level
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
		chunks[r.Concurrency] += r.ClientChunks
		a.ttft = append(a.ttft, float64(*r.FirstTokenNS-r.SendNS)/1e6)
		a.tpot = append(a.tpot, float64(r.EndNS-*r.FirstTokenNS)/1e6/float64(r.ClientChunks-1))
	}
	// the seed's pct(): sorted, index int(n*p/100)
	pct := func(xs []float64, p float64) float64 {
		sort.Float64s(xs)
		return xs[min(int(float64(len(xs))*p/100), len(xs)-1)]
	}
	samples, _ := rundir.ReadTable[rundir.ClientSampleRow](os.Args[1], rundir.TableClientSamples)
	window := map[int64]float64{}
	cpuShare := map[int64]float64{} // client CPU / wall over the measured window (from client_samples)
	for _, l := range levels {
		window[l.Concurrency] = float64(l.EndNS-l.WarmupEndNS) / 1e9
		var first, last *rundir.ClientSampleRow
		for i := range samples {
			if samples[i].TimeNS >= l.WarmupEndNS && samples[i].TimeNS <= l.EndNS {
				if first == nil {
					first = &samples[i]
				}
				last = &samples[i]
			}
		}
		if first != nil && last != first {
			cpuShare[l.Concurrency] = (last.CPUUserS + last.CPUSystemS - first.CPUUserS - first.CPUSystemS) /
				(float64(last.TimeNS-first.TimeNS) / 1e9)
		}
	}
	var rows []map[string]float64
	for c, a := range by {
		rows = append(rows, map[string]float64{"concurrency": float64(c), "completed": float64(len(a.ttft)),
			"ttft_p50_ms": pct(a.ttft, 50), "ttft_p99_ms": pct(a.ttft, 99), "tpot_p50_ms": pct(a.tpot, 50), "tpot_p99_ms": pct(a.tpot, 99),
			"window_s": window[c], "chunks_per_s": float64(chunks[c]) / window[c], "client_cpu_share": cpuShare[c]})
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i]["concurrency"] < rows[j]["concurrency"] })
	json.NewEncoder(os.Stdout).Encode(map[string]any{"rows": rows})
}
