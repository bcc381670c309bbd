package testengine

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/headroom-llm/headroom/internal/gguf"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The log contract of docs/test-engine.md, one pattern per event.
var (
	lineHead    = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (INFO|WARN|ERROR) \S`)
	startLine   = regexp.MustCompile(`^\S+ INFO engine start version=3\.21\.1 llama=\S+ model=\S+ n_ctx_per_seq=(\d+) sequences=(\d+) kv_budget_tokens=(\d+) threads=(\d+) batch=(\d+) prefix_cache=(on|off)$`)
	admitLine   = regexp.MustCompile(`^\S+ INFO admit req=(\S+) prompt_tokens=(\d+) max_tokens=(\d+) running=(\d+) waiting=(\d+)$`)
	stepLine    = regexp.MustCompile(`^\S+ INFO step n=(\d+) running=(\d+) waiting=(\d+) batch_tokens=(\d+) prefill_tokens=(\d+) kv_used_tokens=(\d+) kv_budget_tokens=(\d+) kv_usage=([01]\.\d{3})$`)
	preemptLine = regexp.MustCompile(`^\S+ WARN preempt req=(\S+) mode=recompute generated=(\d+) kv_used_tokens=(\d+) kv_budget_tokens=(\d+) total_preemptions=(\d+)$`)
	finishLine  = regexp.MustCompile(`^\S+ INFO finish req=(\S+) prompt_tokens=(\d+) completion_tokens=(\d+) reason=(stop|length|abort) ttft_ms=(\d+\.\d) e2e_ms=(\d+\.\d)$`)
	errorLine   = regexp.MustCompile(`^\S+ ERROR request req=(\S+) status=(\d{3}) error=("(?:[^"\\]|\\.)*")$`)
)

// logEvents splits the engine log by event, checking every line's timestamp and level.
func logEvents(t *testing.T, e *Engine) map[*regexp.Regexp][][]string {
	t.Helper()
	text, err := e.Log()
	if err != nil {
		t.Fatal(err)
	}
	out := map[*regexp.Regexp][][]string{}
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if !lineHead.MatchString(line) {
			t.Errorf("log line %d has no timestamp and level: %q", i+1, line)
			continue
		}
		matched := false
		for _, re := range []*regexp.Regexp{startLine, admitLine, stepLine, preemptLine, finishLine, errorLine} {
			if m := re.FindStringSubmatch(line); m != nil {
				out[re] = append(out[re], m)
				matched = true
			}
		}
		if !matched {
			t.Errorf("log line %d is no event of the contract: %q", i+1, line)
		}
	}
	if len(out[startLine]) != 1 {
		t.Errorf("%d engine start lines, want 1", len(out[startLine]))
	}
	return out
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	v, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func fixedLength(prompt string, n int) map[string]any {
	return map[string]any{"prompt": prompt, "max_tokens": n, "min_tokens": n, "ignore_eos": true,
		"stream_options": map[string]any{"include_usage": true}}
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func TestEngineAPI(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{Sequences: 2, CtxPerSeq: 256})
	ctx := testContext(t)

	t.Run("models", func(t *testing.T) {
		var models struct {
			Object string `json:"object"`
			Data   []struct {
				ID          string `json:"id"`
				MaxModelLen int    `json:"max_model_len"`
			} `json:"data"`
		}
		getJSON(t, e.BaseURL+"/v1/models", &models)
		if models.Object != "list" || len(models.Data) != 1 || models.Data[0].ID != e.ModelName || models.Data[0].MaxModelLen != 256 {
			t.Errorf("/v1/models = %+v, want one model %q with max_model_len 256", models, e.ModelName)
		}
	})

	t.Run("version", func(t *testing.T) {
		var v struct{ Engine, Version string }
		getJSON(t, e.BaseURL+"/version", &v)
		if v.Engine != "node-llama-cpp" || v.Version != "3.21.1" {
			t.Errorf("/version = %+v, want node-llama-cpp 3.21.1", v)
		}
	})

	t.Run("tokenize counts UTF-8 bytes plus BOS", func(t *testing.T) {
		for _, prompt := range []string{"", "a", "hello world", "héllo wörld", "日本語のテキスト", "tab\tand\nnewline", "emoji 🙂!"} {
			if got, want := tokenizeCount(t, e, prompt), len(prompt)+1; got != want {
				t.Errorf("/tokenize %q: %d tokens, want %d (%d bytes + BOS)", prompt, got, want, len(prompt))
			}
		}
	})

	t.Run("streaming completion of fixed length", func(t *testing.T) {
		prompt := "The quick brown fox jumps over the lazy dog."
		s, err := streamRequest(ctx, e.BaseURL+"/v1/completions", fixedLength(prompt, 16))
		if err != nil {
			t.Fatal(err)
		}
		if !s.done {
			t.Error("no data: [DONE]")
		}
		if n := s.contentChunks(); n != 16 {
			t.Errorf("%d content chunks, want 16", n)
		}
		u := s.usage()
		if u == nil {
			t.Fatal("no usage chunk with include_usage")
		}
		if want := tokenizeCount(t, e, prompt); u.PromptTokens != want || u.CompletionTokens != 16 || u.TotalTokens != want+16 {
			t.Errorf("usage %+v, want prompt_tokens %d (as /tokenize), completion_tokens 16", *u, want)
		}
		if last := s.chunks[len(s.chunks)-1]; len(last.Choices) != 0 || last.Usage == nil {
			t.Errorf("last chunk %+v: want the usage chunk with no choices", last)
		}
		if r := s.finishReason(); r != "length" {
			t.Errorf("finish_reason %q, want length", r)
		}
		for _, c := range s.chunks {
			if c.Object != "text_completion" || c.Model != e.ModelName || !strings.HasPrefix(c.ID, "cmpl-") {
				t.Errorf("chunk %+v: want object text_completion, model %q, id cmpl-…", c, e.ModelName)
			}
			if !utf8.ValidString(c.content()) {
				t.Errorf("chunk text %q is not UTF-8", c.content())
			}
		}
	})

	t.Run("chat stream opens with the role chunk", func(t *testing.T) {
		body := fixedLength("", 8)
		delete(body, "prompt")
		body["messages"] = []map[string]string{{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}}
		s, err := streamRequest(ctx, e.BaseURL+"/v1/chat/completions", body)
		if err != nil {
			t.Fatal(err)
		}
		first := s.chunks[0]
		if len(first.Choices) != 1 || first.Choices[0].Delta == nil || first.Choices[0].Delta.Role == nil ||
			*first.Choices[0].Delta.Role != "assistant" || first.content() != "" {
			t.Errorf("first chunk %+v: want the assistant role with empty content", first)
		}
		if n := s.contentChunks(); n != 8 {
			t.Errorf("%d content chunks, want 8", n)
		}
		if u := s.usage(); u == nil || u.CompletionTokens != 8 {
			t.Errorf("usage %+v, want completion_tokens 8", u)
		}
		if first.Object != "chat.completion.chunk" || !strings.HasPrefix(first.ID, "chatcmpl-") {
			t.Errorf("chunk object %q id %q: want chat.completion.chunk, chatcmpl-…", first.Object, first.ID)
		}
	})

	t.Run("non-streaming", func(t *testing.T) {
		for _, tc := range []struct {
			path string
			body map[string]any
		}{
			{"/v1/completions", map[string]any{"prompt": "abc", "max_tokens": 5, "min_tokens": 5}},
			{"/v1/chat/completions", map[string]any{"messages": []map[string]string{{"role": "user", "content": "abc"}}, "max_tokens": 5, "min_tokens": 5}},
		} {
			resp, err := postJSON(ctx, e.BaseURL+tc.path, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			var out chunk
			err = json.NewDecoder(resp.Body).Decode(&out)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: %s, %v", tc.path, resp.Status, err)
			}
			text := ""
			if len(out.Choices) == 1 && out.Choices[0].Text != nil {
				text = *out.Choices[0].Text
			} else if len(out.Choices) == 1 && out.Choices[0].Message != nil {
				text = out.Choices[0].Message.Content
			}
			if out.Usage == nil || out.Usage.CompletionTokens != 5 || len(text) != 5 {
				t.Errorf("%s: text %q, usage %+v: want 5 tokens of one byte each", tc.path, text, out.Usage)
			}
		}
	})

	t.Run("a seed gives the same text alone and batched", func(t *testing.T) {
		body := map[string]any{"prompt": "seeded", "max_tokens": 24, "min_tokens": 24, "seed": 5, "temperature": 1}
		complete := func() (string, error) {
			resp, err := postJSON(ctx, e.BaseURL+"/v1/completions", body)
			if err != nil {
				return "", err
			}
			defer resp.Body.Close()
			var out chunk
			if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || len(out.Choices) != 1 || out.Choices[0].Text == nil {
				return "", fmt.Errorf("%s: %+v, %v", resp.Status, out, err)
			}
			return *out.Choices[0].Text, nil
		}
		alone, err := complete()
		if err != nil {
			t.Fatal(err)
		}
		var batched [2]string
		var errs [2]error
		var wg sync.WaitGroup
		for i := range batched {
			wg.Add(1)
			go func() {
				defer wg.Done()
				batched[i], errs[i] = complete()
			}()
		}
		wg.Wait()
		for i := range batched {
			if errs[i] != nil || batched[i] != alone {
				t.Errorf("batched request %d: %q (%v), alone: %q", i, batched[i], errs[i], alone)
			}
		}
		if len(alone) != 24 {
			t.Errorf("text %q: want 24 one-byte tokens", alone)
		}
	})

	t.Run("over-long prompt is rejected", func(t *testing.T) {
		resp, err := postJSON(ctx, e.BaseURL+"/v1/completions", map[string]any{"prompt": strings.Repeat("x", 250), "max_tokens": 16, "stream": true})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var out struct {
			Error struct{ Message string } `json:"error"`
		}
		if err := json.Unmarshal(b, &out); err != nil || resp.StatusCode != http.StatusBadRequest ||
			out.Error.Message != "prompt+max_tokens 267 exceeds per-sequence context 256" {
			t.Errorf("got %s %s, want 400 naming prompt+max_tokens 267 (251 + 16) and the context 256", resp.Status, b)
		}
	})

	t.Run("body over 16 MiB is 413", func(t *testing.T) {
		resp, err := postJSON(ctx, e.BaseURL+"/v1/completions", map[string]any{"prompt": strings.Repeat("x", 17<<20)})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("status %s, want 413", resp.Status)
		}
	})

	t.Run("unknown model is 404", func(t *testing.T) {
		resp, err := postJSON(ctx, e.BaseURL+"/v1/completions", map[string]any{"model": "gpt-none", "prompt": "x", "max_tokens": 1})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("status %s, want 404", resp.Status)
		}
	})

	t.Run("metrics", func(t *testing.T) {
		fams := scrape(t, e)
		for name, typ := range map[string]dto.MetricType{
			"nodellama:num_requests_running":          dto.MetricType_GAUGE,
			"nodellama:num_requests_waiting":          dto.MetricType_GAUGE,
			"nodellama:kv_cache_usage_perc":           dto.MetricType_GAUGE,
			"nodellama:kv_budget_tokens":              dto.MetricType_GAUGE,
			"nodellama:num_preemptions_total":         dto.MetricType_COUNTER,
			"nodellama:prompt_tokens_total":           dto.MetricType_COUNTER,
			"nodellama:generation_tokens_total":       dto.MetricType_COUNTER,
			"nodellama:request_success_total":         dto.MetricType_COUNTER,
			"nodellama:time_to_first_token_seconds":   dto.MetricType_HISTOGRAM,
			"nodellama:time_per_output_token_seconds": dto.MetricType_HISTOGRAM,
		} {
			f, ok := fams[name]
			if !ok {
				t.Errorf("/metrics has no %s", name)
				continue
			}
			if f.GetType() != typ {
				t.Errorf("%s is a %v, want %v", name, f.GetType(), typ)
			}
		}
		// Idle now: nothing runs or waits; seven requests finished by length, 16+8+5+5+3*24 tokens.
		for name, want := range map[string]float64{
			"nodellama:num_requests_running":    0,
			"nodellama:num_requests_waiting":    0,
			"nodellama:kv_budget_tokens":        512,
			"nodellama:generation_tokens_total": 106,
		} {
			if got := value(fams, name, ""); got != want {
				t.Errorf("%s = %v, want %v", name, got, want)
			}
		}
		if got := value(fams, "nodellama:request_success_total", "length"); got != 7 {
			t.Errorf("request_success_total{finished_reason=length} = %v, want 7", got)
		}
		if h := fams["nodellama:time_to_first_token_seconds"].GetMetric()[0].GetHistogram(); h.GetSampleCount() != 7 {
			t.Errorf("time_to_first_token_seconds count %d, want 7", h.GetSampleCount())
		}
		if h := fams["nodellama:time_per_output_token_seconds"].GetMetric()[0].GetHistogram(); h.GetSampleCount() != 106-7 {
			t.Errorf("time_per_output_token_seconds count %d, want 99 (one per token after the first)", h.GetSampleCount())
		}
	})

	t.Run("log", func(t *testing.T) {
		ev := logEvents(t, e)
		if m := ev[startLine]; len(m) == 1 && (m[0][1] != "256" || m[0][2] != "2" || m[0][3] != "512" || m[0][4] != "1" || m[0][5] != "512") {
			t.Errorf("engine start line %q: want n_ctx_per_seq=256 sequences=2 kv_budget_tokens=512 threads=1 batch=512", m[0][0])
		}
		if n := len(ev[finishLine]); n != 7 {
			t.Errorf("%d finish lines, want 7", n)
		}
		var rejected []string
		for _, m := range ev[errorLine] {
			rejected = append(rejected, m[2]+" "+m[3])
		}
		want := []string{`400 "prompt+max_tokens 267 exceeds per-sequence context 256"`, `413 "body larger than 16777216 bytes"`,
			`404 "The model ` + "`gpt-none`" + ` does not exist."`}
		if strings.Join(rejected, "\n") != strings.Join(want, "\n") {
			t.Errorf("request error lines %q, want %q", rejected, want)
		}
	})

	t.Run("client disconnect aborts the request", func(t *testing.T) {
		reqCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		body := fixedLength("abort me", 200)
		body["stream"] = true
		resp, err := postJSON(reqCtx, e.BaseURL+"/v1/completions", body)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 64)
		if _, err := io.ReadFull(resp.Body, buf); err != nil { // the first chunk
			t.Fatal(err)
		}
		cancel()
		resp.Body.Close()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if value(scrape(t, e), "nodellama:request_success_total", "abort") == 1 {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		fams := scrape(t, e)
		if got := value(fams, "nodellama:request_success_total", "abort"); got != 1 {
			t.Fatalf("request_success_total{finished_reason=abort} = %v, want 1", got)
		}
		if got := value(fams, "nodellama:num_requests_running", ""); got != 0 {
			t.Errorf("num_requests_running = %v after the abort, want 0", got)
		}
		var aborted []string
		for _, m := range logEvents(t, e)[finishLine] {
			if m[4] == "abort" {
				aborted = append(aborted, m[0])
			}
		}
		if len(aborted) != 1 || strings.Contains(aborted[0], "completion_tokens=200") {
			t.Errorf("abort finish lines %q: want one, before all 200 tokens", aborted)
		}
		// The engine still serves.
		s, err := streamRequest(ctx, e.BaseURL+"/v1/completions", fixedLength("after", 3))
		if err != nil || s.contentChunks() != 3 {
			t.Errorf("request after the abort: %d chunks, %v", s.contentChunks(), err)
		}
	})
}

func scrape(t *testing.T, e *Engine) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(e.BaseURL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if f := expfmt.ResponseFormat(resp.Header); f != expfmt.FmtText {
		t.Fatalf("/metrics Content-Type %q is not the text format 0.0.4", resp.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	return fams
}

// value is a gauge's or counter's value; reason selects a request_success_total series.
func value(fams map[string]*dto.MetricFamily, name, reason string) float64 {
	f, ok := fams[name]
	if !ok {
		return -1
	}
	for _, m := range f.GetMetric() {
		if reason != "" {
			match := false
			for _, l := range m.GetLabel() {
				match = match || (l.GetName() == "finished_reason" && l.GetValue() == reason)
			}
			if !match {
				continue
			}
		}
		if m.Gauge != nil {
			return m.GetGauge().GetValue()
		}
		return m.GetCounter().GetValue()
	}
	return -1
}

// runConcurrently sends n fixed-length streaming requests at once and checks each one's length.
func runConcurrently(t *testing.T, e *Engine, n, tokens int) {
	t.Helper()
	ctx := testContext(t)
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Distinct prompts of distinct lengths, so no two requests share a prefix.
			prompt := fmt.Sprintf("request %d: %s", i, strings.Repeat("abc ", 2+i))
			s, err := streamRequest(ctx, e.BaseURL+"/v1/completions", fixedLength(prompt, tokens))
			switch {
			case err != nil:
				errs[i] = err
			case s.contentChunks() != tokens || s.usage() == nil || s.usage().CompletionTokens != tokens || !s.done:
				errs[i] = fmt.Errorf("request %d: %d content chunks, usage %+v, [DONE] %v: want %d tokens", i, s.contentChunks(), s.usage(), s.done, tokens)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestEngineQueuesBeyondItsSequences(t *testing.T) {
	t.Parallel()
	e := Start(t, Options{Sequences: 2, CtxPerSeq: 256, StepLogInterval: -1})

	// Watch /metrics while six requests share two sequences.
	stop := make(chan struct{})
	var maxWaiting, maxRunning float64
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			resp, err := http.Get(e.BaseURL + "/metrics")
			if err != nil {
				continue
			}
			p := expfmt.NewTextParser(model.LegacyValidation)
			fams, err := p.TextToMetricFamilies(resp.Body)
			resp.Body.Close()
			if err != nil {
				continue
			}
			maxWaiting = max(maxWaiting, value(fams, "nodellama:num_requests_waiting", ""))
			maxRunning = max(maxRunning, value(fams, "nodellama:num_requests_running", ""))
		}
	}()
	runConcurrently(t, e, 6, 64)
	close(stop)
	<-watched
	if maxWaiting <= 0 || maxRunning != 2 {
		t.Errorf("/metrics showed at most %v running and %v waiting, want 2 running and some waiting", maxRunning, maxWaiting)
	}

	ev := logEvents(t, e)
	if n := len(ev[admitLine]); n != 6 {
		t.Errorf("%d admit lines, want 6", n)
	}
	queued := false
	for _, m := range ev[admitLine] {
		if atoi(t, m[4]) > 2 {
			t.Errorf("admit line %q: more running requests than sequences", m[0])
		}
		queued = queued || atoi(t, m[5]) > 0
	}
	if !queued {
		t.Error("no admit line shows waiting requests")
	}
	batched := false
	lastStep := 0
	for _, m := range ev[stepLine] {
		n, running, batch, prefill := atoi(t, m[1]), atoi(t, m[2]), atoi(t, m[4]), atoi(t, m[5])
		if n != lastStep+1 {
			t.Errorf("step line %q follows step %d: every step is logged here", m[0], lastStep)
		}
		lastStep = n
		// Two decodes in one step: both sequences in one llama_decode batch.
		batched = batched || (running == 2 && batch == 2 && prefill == 0)
		usage, _ := strconv.ParseFloat(m[8], 64)
		if used, budget := atoi(t, m[6]), atoi(t, m[7]); math.Abs(usage-float64(used)/float64(budget)) > 0.0005+1e-9 { // three decimals, ties either way
			t.Errorf("step line %q: kv_usage is not kv_used_tokens/kv_budget_tokens", m[0])
		}
	}
	if !batched {
		t.Error("no step decoded both sequences together")
	}
	finished := 0
	for _, m := range ev[finishLine] {
		if m[3] != "64" || m[4] != "length" {
			t.Errorf("finish line %q: want completion_tokens=64 reason=length", m[0])
		}
		ttft, _ := strconv.ParseFloat(m[5], 64)
		e2e, _ := strconv.ParseFloat(m[6], 64)
		if ttft >= e2e {
			t.Errorf("finish line %q: ttft_ms is not below e2e_ms", m[0])
		}
		finished++
	}
	if finished != 6 {
		t.Errorf("%d finish lines, want 6", finished)
	}
}

func TestEnginePreemptsWhenKVBudgetIsExceeded(t *testing.T) {
	t.Parallel()
	// Four sequences but KV room for one full request: the four fit by prompt, then outgrow the
	// budget while decoding, so the newest ones are preempted and recomputed.
	e := Start(t, Options{Sequences: 4, CtxPerSeq: 128, KVBudgetTokens: 128, StepLogInterval: -1})
	runConcurrently(t, e, 4, 64)

	ev := logEvents(t, e)
	if len(ev[preemptLine]) == 0 {
		t.Fatal("no preempt line")
	}
	preempted := map[string]bool{}
	for i, m := range ev[preemptLine] {
		preempted[m[1]] = true
		if used, budget := atoi(t, m[3]), atoi(t, m[4]); used <= budget || budget != 128 {
			t.Errorf("preempt line %q: kv_used_tokens must exceed kv_budget_tokens=128", m[0])
		}
		if atoi(t, m[5]) != i+1 {
			t.Errorf("preempt line %q: total_preemptions should be %d", m[0], i+1)
		}
	}
	for _, m := range ev[finishLine] {
		if preempted[m[1]] && (m[3] != "64" || m[4] != "length") {
			t.Errorf("preempted request finished with %q, want completion_tokens=64 reason=length", m[0])
		}
	}
	for _, m := range ev[stepLine] {
		if used := atoi(t, m[6]); used > 128 {
			t.Errorf("step line %q: KV use above the budget", m[0])
		}
	}
	fams := scrape(t, e)
	if got := value(fams, "nodellama:num_preemptions_total", ""); got != float64(len(ev[preemptLine])) {
		t.Errorf("num_preemptions_total = %v, want %d (the preempt lines)", got, len(ev[preemptLine]))
	}
	if got := value(fams, "nodellama:generation_tokens_total", ""); got != 4*64 {
		t.Errorf("generation_tokens_total = %v, want 256: recomputed tokens are not sent twice", got)
	}
}

// Start must fail, not skip, when the engine's npm package is missing.
func TestStartFailsWithInstallHint(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "test", "engine"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"go.mod", "test/engine/server.mjs"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(dir)
	_, err := start(t, Options{})
	if err == nil || !strings.Contains(err.Error(), ".ci/run") || !strings.Contains(err.Error(), "npm ci --omit=optional") {
		t.Errorf("start without node_modules: %v, want an error naming .ci/run and npm ci", err)
	}
}

// The F16 writer path and a model without grouped-query attention load and generate too.
func TestEngineServesF16Model(t *testing.T) {
	t.Parallel()
	c := gguf.TinyLlama()
	c.Name, c.TensorType, c.HeadCountKV, c.Seed = "tiny-f16", gguf.TensorF16, c.HeadCount, 7
	e := Start(t, Options{Model: c, Sequences: 1, CtxPerSeq: 64})
	if e.ModelName != "tiny-f16" {
		t.Errorf("model name %q, want the config's name", e.ModelName)
	}
	s, err := streamRequest(testContext(t), e.BaseURL+"/v1/completions", fixedLength("f16", 12))
	if err != nil {
		t.Fatal(err)
	}
	if s.contentChunks() != 12 || s.usage() == nil || s.usage().PromptTokens != 4 {
		t.Errorf("%d content chunks, usage %+v: want 12 tokens after a 4-token prompt (BOS + 3 bytes)", s.contentChunks(), s.usage())
	}
}
