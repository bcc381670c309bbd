// Command holdstreams holds many concurrent streams against
// bench/streamserver with headroom's load generator (the library, as
// headroom sweep uses it) and measures the client's timestamp error: the
// server writes its send time (Unix ns) into every chunk, and the client's
// receive time for that chunk is compared with it. Both run on one host,
// so they share the clock; the error includes loopback delivery.
//
// With -floor it runs a minimal client instead of headroom's: raw TCP
// connections, one request written by hand, each line timestamped as soon
// as a read returns it, no HTTP library and no JSON. Its error is the
// floor that the server, the kernel and the Go runtime set on this host;
// headroom's error minus the floor is what headroom adds.
package main

import (
	"bufio"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
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
	floor := flag.Bool("floor", false, "run the minimal raw-TCP client instead of headroom's, for the floor of the error on this host")
	flag.Parse()

	st := &stamps{errs: make([]int64, 0, *streams**tokens), sentAt: map[int64][]int64{}}
	if *floor {
		start := time.Now()
		ok, err := rawStreams(*url, *streams, *tokens, st)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Printf("floor client (raw TCP): streams=%d ok=%d chunks=%d wall_s=%.1f\n", *streams, ok, len(st.errs), time.Since(start).Seconds())
		st.print(*by)
		return
	}
	observe := func(_ string, _ int, recvNS int64, text []byte) {
		if sent, err := strconv.ParseInt(string(text[1:]), 10, 64); err == nil { // text is " <ns>"
			st.add(recvNS, sent)
		}
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
	fmt.Printf("streams=%d max_open_streams=%d requests=%d ok=%d chunks=%d wall_s=%.1f\n",
		*streams, rec.maxOpen, rec.requests, rec.ok, len(st.errs), time.Since(start).Seconds())
	st.print(*by)
	for _, e := range rec.firstErrs {
		fmt.Println("error:", e)
	}
}

// stamps collects receive-minus-send times, overall and by the second of
// the server's clock in which the chunk was sent.
type stamps struct {
	mu     sync.Mutex
	errs   []int64
	sentAt map[int64][]int64
}

func (s *stamps) add(recvNS, sentNS int64) {
	s.mu.Lock()
	s.errs = append(s.errs, recvNS-sentNS)
	s.sentAt[sentNS/1e9] = append(s.sentAt[sentNS/1e9], recvNS-sentNS)
	s.mu.Unlock()
}

func (s *stamps) print(bySecond bool) {
	errs := s.errs
	sort.Slice(errs, func(i, j int) bool { return errs[i] < errs[j] })
	q := func(p float64) float64 {
		if len(errs) == 0 {
			return 0
		}
		return float64(errs[min(int(float64(len(errs))*p), len(errs)-1)]) / 1e6
	}
	fmt.Printf("timestamp_error_ms p50=%.4f p90=%.4f p99=%.4f p999=%.4f max=%.4f min=%.4f\n", q(0.5), q(0.9), q(0.99), q(0.999), q(1), q(0))
	if !bySecond {
		return
	}
	var secs []int64
	for k := range s.sentAt {
		secs = append(secs, k)
	}
	sort.Slice(secs, func(i, j int) bool { return secs[i] < secs[j] })
	for _, k := range secs {
		xs := s.sentAt[k]
		if len(xs) < 100 {
			continue // preparation requests
		}
		sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
		fmt.Printf("second %d: n=%d p50=%.3f p99=%.3f ms\n", k-secs[0], len(xs), float64(xs[len(xs)/2])/1e6, float64(xs[len(xs)*99/100])/1e6)
	}
}

// rawStreams opens n connections (in waves of 500 dials, as -prewarm does),
// then sends one streaming completion on each and timestamps every line
// carrying a server stamp as soon as a read returns it. It returns how many
// streams ended with [DONE].
func rawStreams(base string, n, tokens int, st *stamps) (int, error) {
	u, err := url.Parse(base)
	if err != nil {
		return 0, err
	}
	conns := make([]net.Conn, 0, n)
	for len(conns) < n {
		wave := min(500, n-len(conns))
		ch := make(chan net.Conn, wave)
		var wg sync.WaitGroup
		for range wave {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if c, err := net.Dial("tcp", u.Host); err == nil {
					ch <- c
				}
			}()
		}
		wg.Wait()
		close(ch)
		got := 0
		for c := range ch {
			conns = append(conns, c)
			got++
		}
		if got == 0 {
			return 0, fmt.Errorf("cannot connect to %s", u.Host)
		}
	}
	body := fmt.Sprintf(`{"model":"bench","prompt":"hello hello hello","max_tokens":%d,"stream":true}`, tokens)
	req := []byte(fmt.Sprintf("POST /v1/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", u.Host, len(body), body))
	marker := []byte(`"text":" `)
	var wg sync.WaitGroup
	var done atomic.Int64 // streams that ended with [DONE]
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			if _, err := c.Write(req); err != nil {
				return
			}
			r := bufio.NewReaderSize(c, 4096)
			for {
				line, err := r.ReadSlice('\n')
				now := time.Now().UnixNano()
				if err != nil {
					return
				}
				if i := bytes.Index(line, marker); i >= 0 {
					rest := line[i+len(marker):]
					if j := bytes.IndexByte(rest, '"'); j > 0 {
						if sent, err := strconv.ParseInt(string(rest[:j]), 10, 64); err == nil {
							st.add(now, sent)
						}
					}
				} else if bytes.HasPrefix(line, []byte("data: [DONE]")) {
					done.Add(1)
					return
				}
			}
		}()
	}
	wg.Wait()
	return int(done.Load()), nil
}
