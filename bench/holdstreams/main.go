// Command holdstreams holds many concurrent streams against
// bench/streamserver with headroom's load generator (the library, as
// headroom sweep uses it) and measures the client's timestamp error: the
// server writes its send time (Unix ns) into every chunk, and the client's
// receive time for that chunk is compared with it. Both run on one host,
// so they share the clock; the error includes loopback delivery.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/headroom-llm/headroom/collect/sweep"
	"github.com/headroom-llm/headroom/rundir"
)

type counter struct {
	mu        sync.Mutex
	maxOpen   int64
	requests  int
	ok        int
	chunks    int
	firstErrs []string
}

func (c *counter) Request(r rundir.RequestRow, t []rundir.TokenRow) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests++
	c.chunks += len(t)
	if r.Status == rundir.StatusOK {
		c.ok++
	} else if len(c.firstErrs) < 5 {
		c.firstErrs = append(c.firstErrs, r.Status+": "+r.Error)
	}
}
func (c *counter) ClientSample(s rundir.ClientSampleRow) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.maxOpen = max(c.maxOpen, s.OpenStreams)
}
func (c *counter) LevelDone(rundir.LevelRow) error { return nil }

func main() {
	url := flag.String("url", "http://127.0.0.1:8901", "bench/streamserver address")
	streams := flag.Int("streams", 10000, "concurrent streams")
	tokens := flag.Int("tokens", 20, "tokens per stream")
	prewarm := flag.Bool("prewarm", true, "open the connections first (GET /v1/models in waves of 500), so the streams start without a connection storm overflowing the listen backlog")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the sweep to this file")
	by := flag.Bool("by-second", false, "also print the error's p50 and p99 for each second of the run")
	flag.Parse()

	var mu sync.Mutex
	errs := make([]int64, 0, *streams**tokens)
	sentAt := make(map[int64][]int64) // second of the server's clock -> errors
	observe := func(_ string, _ int, recvNS int64, text []byte) {
		sent, err := strconv.ParseInt(string(text[1:]), 10, 64) // text is " <ns>"
		if err != nil {
			return
		}
		mu.Lock()
		errs = append(errs, recvNS-sent)
		if *by {
			sentAt[sent/1e9] = append(sentAt[sent/1e9], recvNS-sent)
		}
		mu.Unlock()
	}
	s, err := sweep.New(*url, sweep.WithModel("bench"), sweep.WithLevels(*streams), sweep.WithRequestsPerLevel(*streams),
		sweep.WithWarmup(0), sweep.WithPromptTokens(sweep.Fixed(16)), sweep.WithOutputTokens(sweep.Fixed(*tokens)),
		sweep.WithChunkObserver(observe), sweep.WithTimeout(5*time.Minute))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if *prewarm {
		// Hold every connection open at once (in waves of 500 dials), then
		// put them all back in the client's idle pool for the sweep to reuse.
		client := s.HTTPClient()
		bodies := make(chan io.ReadCloser, *streams)
		for done := 0; done < *streams; done += 500 {
			var wg sync.WaitGroup
			for range min(500, *streams-done) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if resp, err := client.Get(*url + "/v1/models"); err == nil {
						bodies <- resp.Body
					}
				}()
			}
			wg.Wait()
		}
		close(bodies)
		for b := range bodies {
			io.Copy(io.Discard, b)
			b.Close()
		}
	}
	rec := &counter{}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	if _, err := s.Run(context.Background(), rec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	sort.Slice(errs, func(i, j int) bool { return errs[i] < errs[j] })
	q := func(p float64) float64 {
		if len(errs) == 0 {
			return 0
		}
		return float64(errs[min(int(float64(len(errs))*p), len(errs)-1)]) / 1e6
	}
	fmt.Printf("streams=%d max_open_streams=%d requests=%d ok=%d chunks=%d wall_s=%.1f\n",
		*streams, rec.maxOpen, rec.requests, rec.ok, len(errs), time.Since(start).Seconds())
	fmt.Printf("timestamp_error_ms p50=%.4f p90=%.4f p99=%.4f p999=%.4f max=%.4f min=%.4f\n", q(0.5), q(0.9), q(0.99), q(0.999), q(1), q(0))
	var secs []int64
	for k := range sentAt {
		secs = append(secs, k)
	}
	sort.Slice(secs, func(i, j int) bool { return secs[i] < secs[j] })
	for _, k := range secs {
		xs := sentAt[k]
		if len(xs) < 100 {
			continue // preparation requests
		}
		sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
		fmt.Printf("second %d: n=%d p50=%.3f p99=%.3f ms\n", k-secs[0], len(xs), float64(xs[len(xs)/2])/1e6, float64(xs[len(xs)*99/100])/1e6)
	}
	for _, e := range rec.firstErrs {
		fmt.Println("error:", e)
	}
}
