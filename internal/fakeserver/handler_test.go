package fakeserver

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// Handler routes, Stream writes the tokens, the finish and the usage: a
// completion of 3 tokens, a chat completion, a bad body, an unknown path.
func TestHandlerAndStream(t *testing.T) {
	var got []Completion
	srv := httptest.NewServer(Handler("tiny", func(w http.ResponseWriter, r *http.Request, c Completion) {
		got = append(got, c)
		Stream(w, r, Reply{Tokens: c.MaxTokens, PromptTokens: 7, Chat: r.Header.Get("X-Chat") != "", Delay: time.Millisecond})
	}))
	defer srv.Close()
	call := func(method, path, body string, chat bool) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if chat {
			req.Header.Set("X-Chat", "1")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := call("GET", "/v1/models", "", false); code != 200 || body != `{"data":[{"id":"tiny","owned_by":"vllm"}]}` {
		t.Errorf("models: %d %s", code, body)
	}
	want := "data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":null}]}\n\n" +
		"data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":null}]}\n\n" +
		"data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":\"length\"}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}\n\ndata: [DONE]\n\n"
	if code, body := call("POST", "/v1/completions", `{"prompt":"a b c","max_tokens":3}`, false); code != 200 || body != want {
		t.Errorf("completion: %d %q", code, body)
	}
	if code, body := call("POST", "/v1/completions", `{"prompt":"a","max_tokens":1}`, true); code != 200 ||
		body != "data: {\"choices\":[{\"delta\":{\"content\":\"a\"},\"finish_reason\":\"length\"}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n" {
		t.Errorf("chat completion: %d %q", code, body)
	}
	if code, _ := call("POST", "/v1/completions", `not json`, false); code != http.StatusBadRequest {
		t.Errorf("bad body: %d, want 400", code)
	}
	if code, _ := call("GET", "/metrics", "", false); code != http.StatusNotFound {
		t.Errorf("unknown path: %d, want 404", code)
	}
	if len(got) != 2 || got[0] != (Completion{Prompt: "a b c", MaxTokens: 3}) {
		t.Errorf("completions handed on: %+v", got)
	}
}
