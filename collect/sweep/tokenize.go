package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/headroom-llm/headroom/collect/loadgen"
)

// tokenizer counts the tokens of a text with the server's own tokenizer.
type tokenizer interface {
	count(ctx context.Context, text string) (int, error)
	name() string
}

// serverTokenizer calls the server's /tokenize: vLLM and SGLang take
// {"prompt": ...} and answer {"count": N, "tokens": [...]}; llama.cpp's
// llama-server takes {"content": ...} and answers {"tokens": [...]}.
type serverTokenizer struct {
	s     *Sweep
	style string // "prompt" (vLLM, SGLang) or "content" (llama.cpp)
}

func (t *serverTokenizer) name() string {
	if t.style == "content" {
		return "server /tokenize (llama.cpp style)"
	}
	return "server /tokenize"
}

func (t *serverTokenizer) count(ctx context.Context, text string) (int, error) {
	body := map[string]any{t.style: text}
	if t.style == "prompt" && t.s.model != "" {
		body["model"] = t.s.model
	}
	var out struct {
		Count  *int              `json:"count"`
		Tokens []json.RawMessage `json:"tokens"`
	}
	if err := t.s.postJSON(ctx, "/tokenize", body, &out); err != nil {
		return 0, err
	}
	switch {
	case out.Count != nil:
		return *out.Count, nil
	case out.Tokens != nil:
		return len(out.Tokens), nil
	}
	return 0, errors.New("/tokenize answered without count or tokens")
}

// findTokenizer returns the server's tokenizer, or nil when it has none.
func (s *Sweep) findTokenizer(ctx context.Context) tokenizer {
	for _, style := range []string{"prompt", "content"} {
		t := &serverTokenizer{s: s, style: style}
		n, err := t.count(ctx, "hello world")
		if err == nil && n > 0 {
			return t
		}
		if errors.Is(err, context.DeadlineExceeded) {
			s.note("the server's /tokenize did not answer within " + s.prepTimeout().String() + ": prompts sized from usage counts")
			return nil // a server that hangs there hangs for the other style too
		}
	}
	return nil
}

// maxPrepTimeout bounds each preparation request to the server
// (/v1/models, /tokenize), besides --timeout: none of them generates, so
// one that takes longer has hung.
const maxPrepTimeout = time.Minute

// prepTimeout is how long one preparation request may take.
func (s *Sweep) prepTimeout() time.Duration { return min(s.cfg.timeout, maxPrepTimeout) }

// postJSON posts a JSON body and decodes a JSON answer, with the API key.
func (s *Sweep) postJSON(ctx context.Context, path string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url(path), bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	return s.doJSON(req, out)
}

// getJSON gets and decodes a JSON document.
func (s *Sweep) getJSON(ctx context.Context, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url(path), nil)
	if err != nil {
		return err
	}
	return s.doJSON(req, out)
}

func (s *Sweep) doJSON(req *http.Request, out any) error {
	for k, v := range s.header() {
		req.Header[k] = v
	}
	ctx, cancel := context.WithTimeout(req.Context(), s.prepTimeout())
	defer cancel()
	req = req.WithContext(ctx)
	resp, err := s.HTTPClient().Do(req)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) && req.Context().Err() == ctx.Err() {
			return fmt.Errorf("%s %s: no answer within %v: %w", req.Method, req.URL.Path, s.prepTimeout(), context.DeadlineExceeded)
		}
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("%s %s: %w", req.Method, req.URL.Path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return errors.New(loadgen.StatusMessage(resp, data))
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: not the JSON expected: %w", req.Method, req.URL.Path, err)
	}
	return nil
}
