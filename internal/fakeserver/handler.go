package fakeserver

import (
	"fmt"
	"net/http"
	"time"
)

// Handler is what an in-process test server answers: /v1/models lists
// model, each /v1/completions request is read and handed to complete, and
// any other path is not found.
func Handler(model string, complete func(w http.ResponseWriter, r *http.Request, c Completion)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			fmt.Fprintf(w, `{"data":[{"id":%q,"owned_by":"vllm"}]}`, model)
		case "/v1/completions":
			if c, ok := ReadCompletion(w, r); ok {
				complete(w, r, c)
			}
		default:
			http.NotFound(w, r)
		}
	}
}

// Reply is the stream Stream sends.
type Reply struct {
	Tokens       int           // one-character "a" tokens; the last one finishes with "length"
	PromptTokens int           // the prompt's length in the usage
	Chat         bool          // chat deltas instead of completion text
	Delay        time.Duration // before each token but the first
}

// Stream answers a generation request with rep's tokens, each flushed as
// it is written, then the usage and [DONE]. It stops when the client
// goes away while it waits.
func Stream(w http.ResponseWriter, r *http.Request, rep Reply) {
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	text := `"text":"a"`
	if rep.Chat {
		text = `"delta":{"content":"a"}`
	}
	for i := range rep.Tokens {
		if i > 0 && !pause(r, rep.Delay) {
			return
		}
		finish := "null"
		if i == rep.Tokens-1 {
			finish = `"length"`
		}
		fmt.Fprintf(w, "data: {\"choices\":[{%s,\"finish_reason\":%s}]}\n\n", text, finish)
		fl.Flush()
	}
	fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", rep.PromptTokens, rep.Tokens)
}

// pause waits d, and is false when the client went away first.
func pause(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	select {
	case <-r.Context().Done():
		return false
	case <-time.After(d):
		return true
	}
}
