package compare

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/internal/cputime"
	"github.com/headroom-llm/headroom/rundir"
)

// heapPeak samples the live heap every 10 ms while f runs and returns the
// largest value seen (bytes).
func heapPeak(f func()) uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			mu.Lock()
			peak = max(peak, sample[0].Value.Uint64())
			mu.Unlock()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(done)
	mu.Lock()
	defer mu.Unlock()
	return peak
}

// archiveOf returns a replayed archive of n runs, made once per size under
// HEADROOM_ARCHIVE_DIR (kept) or a temporary directory.
func archiveOf(b *testing.B, n int) string {
	root := os.Getenv("HEADROOM_ARCHIVE_DIR")
	if root == "" {
		root = b.TempDir()
	}
	dir := filepath.Join(root, "n"+strconv.Itoa(n))
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		replayArchive(b, dir, n)
	}
	return dir
}

// BenchmarkArchiveScale times compare and index over archives of 100, 1,000
// and 10,000 replayed runs from local disk, with CPU time and the peak
// live heap, the first time and from the summary cache: docs/performance.md's
// table. HEADROOM_ARCHIVE_SIZES picks the
// sizes (default 100,1000; add 10000 for the full table), e.g.
//
//	HEADROOM_ARCHIVE_SIZES=100,1000,10000 go test ./analyze/compare -run XXX -bench ArchiveScale -benchtime 1x
func BenchmarkArchiveScale(b *testing.B) {
	sizes := []int{100, 1000}
	if s := os.Getenv("HEADROOM_ARCHIVE_SIZES"); s != "" {
		sizes = nil
		for _, f := range splitComma(s) {
			n, err := strconv.Atoi(f)
			if err != nil {
				b.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	for _, n := range sizes {
		dir := archiveOf(b, n)
		srcs := localDirs(b, dir)
		// The steps before summaries time the archive as older runs are,
		// without summaries; compare-own and index-own with every run's
		// own summary. Each step brings the archive to the state it needs
		// before its timing starts, so a run of only the steps with
		// summaries (bench/archive-scale.sh 10000 'compare-own|index-own')
		// writes them once, not every time.
		without := func(b *testing.B) {
			for _, d := range srcs {
				if err := os.Remove(filepath.Join(d.Name, rundir.SummaryFile)); err != nil && !os.IsNotExist(err) {
					b.Fatal(err)
				}
			}
		}
		with := func(b *testing.B) { writeMissingSummaries(b, srcs) }
		// compare: the first time, analysing every run (and filling the
		// summary cache); compare-cached: again, every run from the cache.
		cache := SummaryCache(filepath.Join(b.TempDir(), "cache"))
		b.Run(fmt.Sprintf("compare/runs=%d", n), func(b *testing.B) {
			without(b)
			measure(b, n, func() {
				os.RemoveAll(string(cache))
				summarizeArchiveWith(b, dir, filepath.Join(b.TempDir(), "runs.parquet"), cache)
			})
		})
		b.Run(fmt.Sprintf("compare-cached/runs=%d", n), func(b *testing.B) {
			without(b)
			measure(b, n, func() {
				summarizeArchiveWith(b, dir, filepath.Join(b.TempDir(), "runs.parquet"), cache)
			})
		})
		// index: into a new dataset without a cache; index-cached: into a
		// new dataset with the summaries cached (the runs are still read
		// for their rows); index-again: into the dataset that holds them
		// all (every run skipped, its manifest read).
		indexed := LocalDataset(b.TempDir())
		b.Run(fmt.Sprintf("index/runs=%d", n), func(b *testing.B) {
			without(b)
			measure(b, n, func() {
				os.RemoveAll(string(indexed))
				st, err := Index(context.Background(), srcs, indexed, analyze.Default())
				if err != nil || st.Runs != n {
					b.Fatalf("%+v %v", st, err)
				}
			})
		})
		b.Run(fmt.Sprintf("index-cached/runs=%d", n), func(b *testing.B) {
			without(b)
			measure(b, n, func() {
				st, err := IndexWith(context.Background(), srcs, LocalDataset(b.TempDir()), analyze.Default(), cache)
				if err != nil || st.Runs != n {
					b.Fatalf("%+v %v", st, err)
				}
			})
		})
		b.Run(fmt.Sprintf("index-again/runs=%d", n), func(b *testing.B) {
			without(b)
			measure(b, n, func() {
				st, err := Index(context.Background(), srcs, indexed, analyze.Default())
				if err != nil || st.Skipped != n {
					b.Fatalf("%+v %v", st, err)
				}
			})
		})
		// summaries: what the runs' sweeps would pay when they close, each
		// writing its summary (here on every CPU); compare-own and
		// index-own: compare (no cache) and index into a new dataset,
		// every run read from its own summary, as for an archive of runs
		// made by this version that neither has seen.
		b.Run(fmt.Sprintf("summaries/runs=%d", n), func(b *testing.B) {
			without(b)
			measure(b, n, func() {
				err := parallel(context.Background(), len(srcs), func(i int) error {
					ok, err := WriteRunSummary(srcs[i].Name, commandSettings(b))
					if err == nil && !ok {
						err = fmt.Errorf("%s: no summary written", srcs[i].Name)
					}
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			})
		})
		b.Run(fmt.Sprintf("compare-own/runs=%d", n), func(b *testing.B) {
			with(b)
			measure(b, n, func() {
				o := DefaultOptions()
				o.GroupBy, o.Settings = "engine.version", commandSettings(b)
				c, err := CompareDirs(context.Background(), srcs, nil, o)
				if err == nil {
					err = c.WriteIndex(filepath.Join(b.TempDir(), "runs.parquet"))
				}
				if err != nil {
					b.Fatal(err)
				}
			})
		})
		b.Run(fmt.Sprintf("index-own/runs=%d", n), func(b *testing.B) {
			with(b)
			measure(b, n, func() {
				st, err := Index(context.Background(), srcs, LocalDataset(b.TempDir()), commandSettings(b))
				if err != nil || st.Runs != n {
					b.Fatalf("%+v %v", st, err)
				}
			})
		})
	}
}

// commandSettings are the analysis settings of `headroom compare`, `index`
// and `sweep` without flags (the built-in price table besides
// analyze.Default()), with which a sweep writes its run's summary: so the
// archive's summaries are those a sweep leaves, and the built binary reads
// them too (bench/archive-s3.sh). cmd/headroom's TestSweepLeavesItsSummary
// checks that the command's compare reads what its sweep writes.
// writeMissingSummaries writes the own summary of every run in srcs that
// has none that holds for the command's settings (see readRun), on
// every CPU, untimed.
func writeMissingSummaries(b *testing.B, srcs []rundir.Dir) {
	set := commandSettings(b)
	own := set
	own.BootstrapResamples = 0 // as WriteRunSummary keys it
	setJSON, err := settingsJSON(own)
	if err != nil {
		b.Fatal(err)
	}
	err = parallel(context.Background(), len(srcs), func(i int) error {
		if _, _, sum, err := readRun(srcs[i], true, setJSON, false); err == nil && sum != nil {
			return nil
		}
		ok, err := WriteRunSummary(srcs[i].Name, set)
		if err == nil && !ok {
			err = fmt.Errorf("%s: no summary written", srcs[i].Name)
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
}

func commandSettings(tb testing.TB) analyze.Settings {
	set := analyze.Default()
	prices, source, err := analyze.LoadPrices("")
	if err != nil {
		tb.Fatal(err)
	}
	set.Cost = analyze.CostSettings{Utilization: 1, Prices: prices, PricesSource: source}
	return set
}

func measure(b *testing.B, n int, f func()) {
	// As the commands run them.
	defer ArchiveGC()()
	var cpu time.Duration
	var peak uint64
	for b.Loop() {
		before := cputime.Total()
		peak = max(peak, heapPeak(f))
		cpu += cputime.Total() - before
	}
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(n), "µs/run")
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}
