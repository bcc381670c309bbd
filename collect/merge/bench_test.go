package merge

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// BenchmarkMerge merges four shards of one level holding n requests in all
// (16 chunks each): ns/op over n shows whether merge time grows linearly
// with the rows (bench/multihost.sh prints the ratio).
func BenchmarkMerge(b *testing.B) {
	for _, n := range []int{10_000, 20_000, 40_000} {
		b.Run(fmt.Sprintf("requests=%d", n), func(b *testing.B) {
			root := b.TempDir()
			var shards []rundir.Dir
			for i := range 4 {
				shards = append(shards, benchShard(b, filepath.Join(root, fmt.Sprint(i)), i, 4, n))
			}
			b.ResetTimer()
			cpu0 := cpuTime()
			for k := range b.N {
				out := filepath.Join(root, fmt.Sprint("out", k))
				if _, err := Merge(shards, out, Options{}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				os.RemoveAll(out)
				b.StartTimer()
			}
			rows := float64(b.N) * float64(n*17)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/rows, "ns/row")
			// CPU time too: on a shared machine the wall time is mostly
			// waiting for a core.
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/rows, "cpu-ns/row")
		})
	}
}

// cpuTime is the process's CPU time so far (user + system).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchShard writes shard i of count with its share of n requests of one
// level (plan concurrency 4096), 16 chunks each.
func benchShard(b *testing.B, dir string, i, count, n int) rundir.Dir {
	m := &rundir.Manifest{Kinds: []string{rundir.KindSweep}, StartTime: time.Unix(0, base).UTC(),
		Workload: &rundir.Workload{Mode: "closed", Levels: []int{4096}},
		Shard: &rundir.Shard{Index: i, Count: count, PlanID: "bench", StartAt: time.Unix(0, base).UTC(),
			Clock: &rundir.ClockOffset{Reference: rundir.ClockServerDate, Known: true, OffsetS: float64(i) * 1e-3, UncertaintyS: 1e-4}}}
	run, err := rundir.Create(dir, m)
	if err != nil {
		b.Fatal(err)
	}
	var reqs []rundir.RequestRow
	var toks []rundir.TokenRow
	for q := i; q < n; q += count {
		send := base + int64(q)*1e5
		first := send + 5e7
		id := rundir.RequestID(m.RunID, 0, q)
		reqs = append(reqs, rundir.RequestRow{RequestID: id, Concurrency: 1024, Seq: int64(q), SendNS: send, IntendedSendNS: send,
			FirstTokenNS: &first, EndNS: first + 15*1e7, ClientChunks: 16, Status: rundir.StatusOK})
		for k := range 16 {
			toks = append(toks, rundir.TokenRow{RequestID: id, Index: int32(k), RecvNS: first + int64(k)*1e7, Tokens: 1, Bytes: 5})
		}
	}
	level := []rundir.LevelRow{{Concurrency: 1024, StartNS: base, WarmupEndNS: base, EndNS: base + int64(n)*1e5 + 2e8, Requests: int64(len(reqs)), Complete: true}}
	for _, err := range []error{rundir.WriteTable(dir, rundir.TableLevels, level), rundir.WriteTable(dir, rundir.TableRequests, reqs),
		rundir.WriteTable(dir, rundir.TableTokens, toks), run.Finish(nil)} {
		if err != nil {
			b.Fatal(err)
		}
	}
	return rundir.LocalDir(dir)
}
