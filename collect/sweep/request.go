package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/headroom-llm/headroom/collect/server"
	"github.com/headroom-llm/headroom/rundir"
)

// requestSpec is one request of a level, fully decided before it is sent.
type requestSpec struct {
	id           string
	level        int
	concurrency  int
	seq          int
	warmup       bool
	prompt       string          // completions, or the user message for chat
	messages     json.RawMessage // chat messages from a dataset, verbatim
	promptTarget int             // 0 when unknown (dataset without tokenizer)
	outputTarget int
	intended     time.Time // open loop: the scheduled send time; zero in closed loop
	// slotFree is when the open loop's concurrency cap let the request go:
	// after intended when every slot was busy (the server's backlog, not
	// the client's).
	slotFree time.Time
	// retryAfter is the server's Retry-After on a failed answer (0: none);
	// the closed loop waits this long before the slot's next request.
	retryAfter time.Duration
}

// Optional request fields a server may reject with HTTP 400; the sweep
// drops them and retries (fixed output: the seed's rule and caveat).
var (
	fixedOutputFields  = []string{"min_tokens", "ignore_eos"}
	includeUsageFields = []string{"stream_options", "include_usage"}
)

// body renders the JSON request for spec with the optional fields the
// server has accepted so far.
func (s *Sweep) body(spec *requestSpec) []byte {
	var b bytes.Buffer
	b.Grow(len(spec.prompt) + 256)
	b.WriteString(`{"model":`)
	writeJSONString(&b, s.model)
	if s.cfg.endpoint == EndpointChat {
		b.WriteString(`,"messages":`)
		if spec.messages != nil {
			b.Write(spec.messages)
		} else {
			b.WriteString(`[{"role":"user","content":`)
			writeJSONString(&b, spec.prompt)
			b.WriteString(`}]`)
		}
	} else {
		b.WriteString(`,"prompt":`)
		writeJSONString(&b, spec.prompt)
	}
	fmt.Fprintf(&b, `,"max_tokens":%d`, spec.outputTarget)
	if s.fixedOutput.Load() {
		fmt.Fprintf(&b, `,"min_tokens":%d,"ignore_eos":true`, spec.outputTarget)
	}
	fmt.Fprintf(&b, `,"temperature":%s,"stream":true`, jsonFloat(s.cfg.temperature))
	if s.includeUsage.Load() {
		b.WriteString(`,"stream_options":{"include_usage":true}`)
	}
	b.WriteByte('}')
	return b.Bytes()
}

func writeJSONString(b *bytes.Buffer, s string) {
	data, _ := json.Marshal(s) // a string always marshals
	b.Write(data)
}

func jsonFloat(f float64) string {
	data, _ := json.Marshal(f)
	return string(data)
}

// do sends one request and reads its stream to the end. It always returns
// a row; a 400 that names an optional field drops the field for the rest
// of the sweep and retries once per field group.
func (s *Sweep) do(ctx context.Context, spec *requestSpec) (rundir.RequestRow, []rundir.TokenRow) {
	row := rundir.RequestRow{
		RequestID:          spec.id,
		LevelIndex:         int32(spec.level),
		Concurrency:        int64(spec.concurrency),
		Seq:                int64(spec.seq),
		Warmup:             spec.warmup,
		Endpoint:           string(s.cfg.endpoint),
		PromptTokensTarget: int64(spec.promptTarget),
		OutputTokensTarget: int64(spec.outputTarget),
	}
	for attempt := 0; ; attempt++ {
		tokens, retry := s.stream(ctx, spec, &row)
		if !retry || attempt >= 2 {
			// Servers and proxies may echo credentials in error bodies.
			row.Error, row.FinishReason = s.redact(row.Error), s.redact(row.FinishReason)
			return row, tokens
		}
	}
}

// stream performs one attempt. retry is set when the server rejected an
// optional field that has now been dropped.
func (s *Sweep) stream(ctx context.Context, spec *requestSpec, row *rundir.RequestRow) (tokens []rundir.TokenRow, retry bool) {
	*row = rundir.RequestRow{
		RequestID: row.RequestID, LevelIndex: row.LevelIndex, Concurrency: row.Concurrency, Seq: row.Seq,
		Warmup: row.Warmup, Endpoint: row.Endpoint, PromptTokensTarget: row.PromptTokensTarget,
		OutputTokensTarget: row.OutputTokensTarget,
	}
	rctx, cancel := context.WithTimeout(ctx, s.cfg.timeout)
	defer cancel()
	body := s.body(spec)
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, s.genURL, bytes.NewReader(body))
	if err != nil {
		s.fail(row, rundir.StatusConnect, err.Error(), time.Now())
		return nil, false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	s.authorize(req)

	sent := time.Now()
	row.SendNS = s.clock.ns(sent)
	row.IntendedSendNS = row.SendNS
	if !spec.intended.IsZero() {
		row.IntendedSendNS = s.clock.ns(spec.intended)
		// The client's own lag counts from when it could send: a wait for a
		// free slot under the cap is queueing, and it stays visible as
		// send_ns - intended_send_ns.
		s.noteSendLag(sent.Sub(later(spec.intended, spec.slotFree)))
	}
	s.openStreams.Add(1)
	defer s.openStreams.Add(-1)

	resp, err := s.client.Do(req)
	if err != nil {
		status := rundir.StatusConnect
		switch {
		case ctx.Err() != nil:
			status = rundir.StatusCanceled
		case errors.Is(rctx.Err(), context.DeadlineExceeded):
			status = rundir.StatusTimeout
		}
		s.fail(row, status, s.redact(err.Error()), time.Now())
		return nil, false
	}
	defer resp.Body.Close()
	row.HTTPStatus = int32(resp.StatusCode)
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<10))
		end := time.Now()
		if resp.StatusCode == http.StatusBadRequest && s.dropRejectedField(data) {
			return nil, true
		}
		if d, ok := retryAfter(resp.Header, end); ok {
			spec.retryAfter = d
		}
		s.fail(row, rundir.StatusHTTPError, statusMessage(resp, data), end)
		return nil, false
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "application/json" {
		// stream:true ignored: one JSON answer, maybe an error
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var c chunk
		var p jparser
		if p.parseChunk(bytes.TrimSpace(data), &c) == nil && c.isError {
			s.fail(row, rundir.StatusServerError, "server error: "+string(c.errMsg), time.Now())
		} else {
			s.fail(row, rundir.StatusStreamError, "the server answered with one JSON document, not an event stream (does it support \"stream\": true?)", time.Now())
		}
		return nil, false
	}
	return s.readStream(ctx, rctx, resp.Body, spec, row), false
}

// readStream reads the event stream, one goroutine per stream, and fills
// the row; it returns the text chunks.
func (s *Sweep) readStream(ctx, rctx context.Context, body io.Reader, spec *requestSpec, row *rundir.RequestRow) []rundir.TokenRow {
	tokens := make([]rundir.TokenRow, 0, max(spec.outputTarget+2, 16))
	sc := newLineScanner(body, 4096, DefaultMaxLineBytes)
	var (
		p         jparser
		c         chunk
		finish    []byte
		sawDone   bool
		serverErr string
		last      time.Time
		streamErr error
		usageSeen bool
		usageP    int64 = -1
		usageC    int64 = -1
		observer        = s.cfg.chunkObserver
		malformed string
	)
	for {
		line, at, err := sc.next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				streamErr = err
			}
			break
		}
		last = at
		field, value := sseField(line)
		if string(field) != "data" {
			continue // comments, event:, id:, retry:, blank lines
		}
		if string(value) == "[DONE]" {
			sawDone = true
			break
		}
		if len(bytes.TrimSpace(value)) == 0 {
			continue
		}
		if err := p.parseChunk(value, &c); err != nil {
			malformed = fmt.Sprintf("malformed chunk %q: %v", truncate(value, 120), err)
			break
		}
		if c.isError {
			serverErr = string(c.errMsg)
			if serverErr == "" {
				serverErr = truncate(value, 300)
			}
			break
		}
		if c.textBytes > 0 {
			ns := s.clock.ns(at)
			if len(tokens) == 0 {
				row.FirstTokenNS = &ns
			}
			if observer != nil {
				observer(row.RequestID, len(tokens), ns, c.text)
			}
			tokens = append(tokens, rundir.TokenRow{
				RequestID: row.RequestID, Index: int32(len(tokens)), RecvNS: ns, Tokens: 1, Bytes: int32(c.textBytes),
			})
		}
		if c.finishReason != nil && !bytes.Equal(c.finishReason, finish) {
			finish = append(finish[:0], c.finishReason...)
		}
		if c.hasUsage {
			usageSeen = true
			usageP, usageC = c.promptTokens, c.completionTokens
		}
	}
	if sawDone {
		// Read what follows [DONE] so the connection can be reused.
		_, _ = io.CopyN(io.Discard, body, 64<<10)
	}
	if last.IsZero() {
		last = time.Now()
	}
	row.EndNS = s.clock.ns(last)
	row.ClientChunks = int64(len(tokens))
	row.FinishReason = string(finish)
	if usageSeen {
		if usageP >= 0 {
			row.ServerPromptTokens = &usageP
		}
		if usageC >= 0 {
			row.ServerCompletionTokens = &usageC
		}
	}
	switch {
	case serverErr != "":
		row.Status, row.Error = rundir.StatusServerError, "server error in stream: "+serverErr
	case malformed != "":
		row.Status, row.Error = rundir.StatusStreamError, malformed
	case streamErr != nil:
		row.EndNS = s.clock.nowNS()
		switch {
		case ctx.Err() != nil:
			row.Status = rundir.StatusCanceled
		case errors.Is(rctx.Err(), context.DeadlineExceeded):
			row.Status = rundir.StatusTimeout
		default:
			row.Status = rundir.StatusStreamError
		}
		row.Error = s.redact(streamErr.Error())
		if errors.Is(streamErr, io.ErrUnexpectedEOF) {
			row.Error = "connection closed mid-stream (" + row.Error + ")"
		}
	case !sawDone && len(finish) == 0:
		row.Status, row.Error = rundir.StatusStreamError, "stream ended without [DONE] or a finish_reason"
	case len(tokens) == 0:
		row.Status, row.Error = rundir.StatusNoTokens, "the stream carried no text"
	default:
		row.Status = rundir.StatusOK
	}
	return tokens
}

func (s *Sweep) fail(row *rundir.RequestRow, status, msg string, end time.Time) {
	row.Status, row.Error = status, msg
	row.EndNS = s.clock.ns(end)
	if row.SendNS == 0 {
		row.SendNS, row.IntendedSendNS = row.EndNS, row.EndNS
	}
}

// dropRejectedField turns off an optional field group named in a 400
// answer, so the request can be retried without it. It reports whether it
// dropped anything.
func (s *Sweep) dropRejectedField(body []byte) bool {
	msg := strings.ToLower(string(body))
	mentions := func(fields []string) bool {
		for _, f := range fields {
			if strings.Contains(msg, f) {
				return true
			}
		}
		return false
	}
	switch {
	case s.fixedOutput.Load() && mentions(fixedOutputFields):
		if s.fixedOutput.CompareAndSwap(true, false) {
			s.addFallback(fmt.Sprintf("the server rejected min_tokens/ignore_eos (HTTP 400: %s); requests were sent without them, so output lengths vary (the seed's caveat)", excerpt(body)))
		}
		return true
	case s.includeUsage.Load() && mentions(includeUsageFields):
		if s.includeUsage.CompareAndSwap(true, false) {
			s.addFallback(fmt.Sprintf("the server rejected stream_options.include_usage (HTTP 400: %s); token counts are the client's chunk counts", excerpt(body)))
		}
		return true
	}
	return false
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// redact removes the API key and the secrets of --server-cmd from a
// message, in case a server or a proxy echoed them.
func (s *Sweep) redact(msg string) string {
	for _, secret := range s.secretValues {
		msg = strings.ReplaceAll(msg, secret, server.Redacted)
	}
	return msg
}

// secrets are the strings removed from everything written: the API key
// and every value that the server command's redaction hides. A key shorter
// than server.MinSecretBytes is a placeholder (EMPTY, x): it is never
// written by headroom, but searching every log line and error for it would
// mangle them. New keeps them in s.secretValues.
func (s *Sweep) secrets() []string {
	var out []string
	if len(s.cfg.apiKey) >= server.MinSecretBytes {
		out = append(out, s.cfg.apiKey)
	}
	if s.cfg.serverCmd != "" {
		out = append(out, server.SecretValues(server.SplitCommand(s.cfg.serverCmd), s.cfg.apiKey)...)
	}
	// headroom's own free-text flags: a token pasted into a label, a tag or
	// a description is not written either.
	for _, v := range append([]string{s.cfg.label, s.cfg.engineDesc}, s.cfg.tags...) {
		out = append(out, server.SecretValues(server.SplitCommand(v))...)
	}
	return out
}

// maxRetryAfter caps how long a closed-loop slot honours a Retry-After.
const maxRetryAfter = time.Minute

// retryAfter reads a Retry-After header: delay-seconds or an HTTP date.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs >= int64(maxRetryAfter/time.Second) { // also keeps the multiplication from overflowing
			return maxRetryAfter, true
		}
		return time.Duration(secs) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), maxRetryAfter), true
	}
	return 0, false
}

// statusMessage describes a non-200 answer for the requests table: the
// status, where a redirect pointed (never followed), the Retry-After, and
// the start of the body.
func statusMessage(resp *http.Response, body []byte) string {
	msg := fmt.Sprintf("HTTP %d", resp.StatusCode)
	if loc := resp.Header.Get("Location"); resp.StatusCode >= 300 && resp.StatusCode < 400 && loc != "" {
		msg += " redirect to " + excerpt([]byte(loc)) + " (not followed: give the final address as --base-url)"
	}
	if v := resp.Header.Get("Retry-After"); v != "" {
		msg += " (Retry-After: " + excerpt([]byte(v)) + ")"
	}
	if len(body) > 0 {
		msg += ": " + excerpt(body)
	}
	return msg
}

func (s *Sweep) authorize(req *http.Request) {
	if s.cfg.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+s.cfg.apiKey)
	}
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
