// Command streamserver is the benchmark's OpenAI-compatible streaming
// server: it answers /v1/completions with max_tokens chunks of the size of
// a vLLM chunk (~190 bytes), paced on an absolute schedule (first token
// after -ttft, then one every -itl; requests for at most 4 tokens, like
// headroom's preparation requests, unpaced) so that its own timing is
// exact, and stamps each chunk's text with the Unix time in ns at which it
// was written, so a client on the same host can measure its own timestamp
// error. GET /stats reports chunks written and the server's CPU time (of
// the one process that answers, with -reuseport).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8900", "listen address")
	ttft := flag.Duration("ttft", 0, "delay before the first token (requests for more than 4 tokens; shorter ones, like headroom's preparation requests, are answered at once, unpaced)")
	itl := flag.Duration("itl", 10*time.Millisecond, "time between tokens (0: as fast as possible)")
	batch := flag.Int("batch", 1, "with -itl 0 (burst): chunks written per flush, so the server is not the bottleneck")
	stagger := flag.Bool("stagger", false, "offset each stream's token schedule by a different fraction of -itl, so chunks of many streams do not arrive in one burst")
	pad := flag.Int("pad", 0, "bytes of filler text added to every chunk: costs the client parsing time, not the server (a starved-client scenario)")
	reusePort := flag.Bool("reuseport", false, "listen with SO_REUSEPORT, so that several streamserver processes share -addr (the kernel spreads connections over them): one process holds at most its open-file limit of connections")
	flag.Parse()
	filler := strings.Repeat("x", *pad)

	var chunks, requests atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"object":"list","data":[{"id":"bench","object":"model","owned_by":"bench"}]}`)
	})
	mux.HandleFunc("/stats", func(w http.ResponseWriter, r *http.Request) {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		cpu := float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
		fmt.Fprintf(w, `{"chunks":%d,"requests":%d,"cpu_s":%.3f}`, chunks.Load(), requests.Load(), cpu)
	})
	mux.HandleFunc("/v1/completions", func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		var body struct {
			MaxTokens     int `json:"max_tokens"`
			StreamOptions *struct {
				IncludeUsage bool `json:"include_usage"`
			} `json:"stream_options"`
			Prompt string `json:"prompt"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.MaxTokens < 1 {
			http.Error(w, `{"error":{"message":"bad request"}}`, 400)
			return
		}
		n := requests.Add(1)
		if *stagger && *itl > 0 && body.MaxTokens > 4 {
			// golden-ratio sequence: phases spread evenly over one ITL
			start = start.Add(time.Duration(float64(*itl) * math.Mod(float64(n)*0.6180339887, 1)))
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		fl := w.(http.Flusher)
		buf := make([]byte, 0, 512)
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		for i := range body.MaxTokens {
			first, gap := *ttft, *itl
			if body.MaxTokens <= 4 {
				first, gap = 0, 0 // headroom's preparation requests: not the load being measured
			}
			due := start.Add(first + time.Duration(i)*gap)
			if d := time.Until(due); d > 0 {
				timer.Reset(d)
				select {
				case <-timer.C:
				case <-r.Context().Done():
					return
				}
			}
			finish := "null"
			if i == body.MaxTokens-1 {
				finish = `"length"`
			}
			buf = append(buf[:0], `data: {"id":"cmpl-bench","object":"text_completion","created":1764460800,"model":"bench","choices":[{"index":0,"text":" `...)
			buf = strconv.AppendInt(buf, time.Now().UnixNano(), 10)
			buf = append(buf, filler...)
			buf = append(buf, `","logprobs":null,"finish_reason":`...)
			buf = append(buf, finish...)
			buf = append(buf, `,"stop_reason":null}],"usage":null}`+"\n\n"...)
			if _, err := w.Write(buf); err != nil {
				return
			}
			if *itl > 0 || (i+1)%*batch == 0 || i == body.MaxTokens-1 {
				fl.Flush()
			}
			chunks.Add(1)
		}
		if body.StreamOptions != nil && body.StreamOptions.IncludeUsage {
			fmt.Fprintf(w, "data: {\"id\":\"cmpl-bench\",\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d}}\n\n",
				len(body.Prompt)/5+1, body.MaxTokens)
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
	var lc net.ListenConfig
	if *reusePort {
		lc.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			if err := c.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1) }); err != nil {
				return err
			}
			return serr
		}
	}
	// The accept backlog is the kernel's net.core.somaxconn of this
	// process's network namespace (Go reads it at the first listen).
	ln, err := lc.Listen(context.Background(), "tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: mux} // loopback only; idle keep-alive connections stay open
	log.Fatal(srv.Serve(ln))
}
