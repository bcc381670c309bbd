package fakeserver

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// Streams through the proxy arrive whole. The upstream reads a POST's body
// and streams at once, as an engine does; before the proxy answered full
// duplex, Go's server closed the request body when the response header was
// written, the transport's last read of it failed, and the upstream
// connection was closed mid-stream (a sweep test lost a request about one
// run in three). Many requests, two at a time, make the race likely.
func TestProxyKeepsStreamsWhole(t *testing.T) {
	const chunks = 6
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for i := range chunks {
			fmt.Fprintf(w, "data: %d\n\n", i)
			fl.Flush()
		}
	}))
	defer up.Close()
	target, _ := url.Parse(up.URL)
	px := httptest.NewServer(proxy(target))
	defer px.Close()

	const requests = 1000
	var wg sync.WaitGroup
	var mu sync.Mutex
	var failed []string
	for lane := range 2 {
		wg.Go(func() {
			for i := range requests / 2 {
				body := strings.NewReader(fmt.Sprintf(`{"prompt":"lane %d request %d","max_tokens":%d}`, lane, i, chunks))
				resp, err := http.Post(px.URL+"/v1/completions", "application/json", body)
				if err != nil {
					mu.Lock()
					failed = append(failed, err.Error())
					mu.Unlock()
					continue
				}
				n := 0
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					if strings.HasPrefix(sc.Text(), "data: ") {
						n++
					}
				}
				resp.Body.Close()
				if err := sc.Err(); err != nil || n != chunks {
					mu.Lock()
					failed = append(failed, fmt.Sprintf("%d of %d chunks (%v)", n, chunks, err))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if len(failed) > 0 {
		t.Errorf("%d of %d streams cut, first: %s", len(failed), requests, failed[0])
	}
}
