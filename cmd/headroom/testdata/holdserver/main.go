// Command holdserver is an OpenAI-compatible server for headroom's Ctrl-C
// test: a request for more than 4 tokens gets one token and is then held
// open until the client goes away (shorter ones, headroom's preparation,
// stream in full). GET /inflight says how many are held. It prints its URL
// on stdout. The test builds it without the race detector, so that the
// server's own cost does not count against headroom's one second.
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"

	"github.com/headroom-llm/headroom/internal/fakeserver"
)

func main() {
	var inFlight atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"data":[{"id":"hold","owned_by":"vllm"}]}`)
	})
	mux.HandleFunc("/inflight", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, inFlight.Load()) })
	mux.HandleFunc("/v1/completions", func(w http.ResponseWriter, r *http.Request) {
		body, ok := fakeserver.ReadCompletion(w, r)
		if !ok {
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if body.MaxTokens > 4 {
			inFlight.Add(1)
			defer inFlight.Add(-1)
			fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":null}]}\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		for i := 0; i < body.MaxTokens; i++ {
			fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":null}]}\n\n")
		}
		fmt.Fprintf(w, "data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n",
			len(strings.Fields(body.Prompt)), body.MaxTokens)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("http://%s\n", ln.Addr())
	if err := http.Serve(ln, mux); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
