package testengine

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A plain OpenAI client, just enough for these tests.

type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

type choice struct {
	Index        int     `json:"index"`
	Text         *string `json:"text"`
	FinishReason *string `json:"finish_reason"`
	Delta        *struct {
		Role    *string `json:"role"`
		Content *string `json:"content"`
	} `json:"delta"`
	Message *struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"message"`
}

type chunk struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   *usage   `json:"usage"`
}

// content is the chunk's text (completions) or delta content (chat), "" when it has none.
func (c chunk) content() string {
	if len(c.Choices) == 0 {
		return ""
	}
	ch := c.Choices[0]
	switch {
	case ch.Text != nil:
		return *ch.Text
	case ch.Delta != nil && ch.Delta.Content != nil:
		return *ch.Delta.Content
	}
	return ""
}

type stream struct {
	chunks []chunk
	done   bool // saw data: [DONE]
}

// contentChunks counts chunks with non-empty text: one per generated token.
func (s stream) contentChunks() int {
	n := 0
	for _, c := range s.chunks {
		if c.content() != "" {
			n++
		}
	}
	return n
}

func (s stream) usage() *usage {
	for _, c := range s.chunks {
		if c.Usage != nil {
			return c.Usage
		}
	}
	return nil
}

func (s stream) finishReason() string {
	for _, c := range s.chunks {
		if len(c.Choices) > 0 && c.Choices[0].FinishReason != nil {
			return *c.Choices[0].FinishReason
		}
	}
	return ""
}

func postJSON(ctx context.Context, url string, body any) (*http.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return http.DefaultClient.Do(req)
}

// streamRequest posts a streaming request and reads the SSE stream to its end.
func streamRequest(ctx context.Context, url string, body map[string]any) (stream, error) {
	body["stream"] = true
	resp, err := postJSON(ctx, url, body)
	if err != nil {
		return stream{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return stream{}, fmt.Errorf("POST %s: %s: %s", url, resp.Status, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		return stream{}, fmt.Errorf("POST %s: Content-Type %q, want text/event-stream", url, ct)
	}
	var s stream
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			return s, fmt.Errorf("line %q is not an SSE data line", line)
		}
		if s.done {
			return s, fmt.Errorf("data after [DONE]: %q", line)
		}
		if data == "[DONE]" {
			s.done = true
			continue
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			return s, fmt.Errorf("chunk %q: %w", data, err)
		}
		s.chunks = append(s.chunks, c)
	}
	return s, sc.Err()
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

func tokenizeCount(t *testing.T, e *Engine, prompt string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := postJSON(ctx, e.BaseURL+"/tokenize", map[string]any{"prompt": prompt})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Count       int   `json:"count"`
		Tokens      []int `json:"tokens"`
		MaxModelLen int   `json:"max_model_len"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.Count != len(out.Tokens) || out.MaxModelLen != e.Options.CtxPerSeq {
		t.Fatalf("/tokenize %q: count %d, %d tokens, max_model_len %d (want %d)", prompt, out.Count, len(out.Tokens), out.MaxModelLen, e.Options.CtxPerSeq)
	}
	return out.Count
}
