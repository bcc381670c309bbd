package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// Request is one request a Source decides: what to send. Where it falls
// (level, sequence number, warm-up) is the generator's.
type Request struct {
	// ID names the request in the rows; "" gives "<level>-<seq>".
	ID string
	// Prompt is the completions prompt, or the user message for chat.
	Prompt string
	// Messages, for chat, is a JSON message list sent verbatim instead of
	// one user message holding Prompt.
	Messages json.RawMessage
	// PromptTokens is the prompt's intended length, recorded (0: unknown).
	PromptTokens int
	// MaxTokens is the output length asked (max_tokens, and min_tokens
	// with Config.FixedOutput).
	MaxTokens int
	// Extra holds more top-level fields of the body, as a JSON object
	// ({"top_p": 0.9}); it must not repeat the fields the generator writes
	// (model, prompt or messages, max_tokens, min_tokens, ignore_eos,
	// temperature, stream, stream_options).
	Extra json.RawMessage
}

// Source decides the requests of a plan. Next is called when request seq of
// level l is about to be sent, concurrently from the level's streams (in
// sequence order in an open loop); it may block, for one to wait on an
// earlier answer (a conversation's next turn).
type Source interface {
	Next(l Level, seq int, warmup bool) Request
}

// SourceFunc is a Source from a function.
type SourceFunc func(l Level, seq int, warmup bool) Request

// Next calls f.
func (f SourceFunc) Next(l Level, seq int, warmup bool) Request { return f(l, seq, warmup) }

// Sink receives a run's rows. Request and ClientSample are called
// concurrently; LevelDone once per level after its last request.
type Sink interface {
	Request(rundir.RequestRow, []rundir.TokenRow)
	ClientSample(rundir.ClientSampleRow)
	LevelDone(rundir.LevelRow) error
}

// attempt is one request being sent, with where it falls and what the
// server asked for.
type attempt struct {
	Request
	level       int
	concurrency int
	seq         int
	warmup      bool
	intended    time.Time // open loop: the scheduled send time; zero in closed loop
	// slotFree is when the open loop's concurrency cap let the request go:
	// after intended when every slot was busy (the server's backlog, not
	// the client's).
	slotFree time.Time
	// retryAfter is the server's Retry-After on a failed answer (0: none);
	// the closed loop waits this long before the slot's next request.
	retryAfter time.Duration
	// target is the replica to send to; -1: the balancer picks.
	target int
	// answer, when not nil, collects the streamed text still JSON-escaped
	// (a conversation's next turn carries it); nil: the text is not kept.
	answer []byte
	// session, turn and think are recorded for a conversation's turns.
	session *string
	turn    int32
	think   time.Duration
}

// Optional request fields a server may reject with HTTP 400; the generator
// drops them and retries (fixed output: the seed's rule and caveat).
var (
	fixedOutputFields  = []string{"min_tokens", "ignore_eos"}
	includeUsageFields = []string{"stream_options", "include_usage"}
)

// body renders the JSON request with the optional fields the server has
// accepted so far.
func (g *Generator) body(a *attempt) []byte {
	var b bytes.Buffer
	b.Grow(len(a.Prompt) + len(a.Messages) + len(a.Extra) + 256)
	b.WriteString(`{"model":`)
	writeJSONString(&b, g.cfg.Model)
	if g.cfg.Chat {
		b.WriteString(`,"messages":`)
		if a.Messages != nil {
			b.Write(a.Messages)
		} else {
			b.WriteString(`[{"role":"user","content":`)
			writeJSONString(&b, a.Prompt)
			b.WriteString(`}]`)
		}
	} else {
		b.WriteString(`,"prompt":`)
		writeJSONString(&b, a.Prompt)
	}
	fmt.Fprintf(&b, `,"max_tokens":%d`, a.MaxTokens)
	if g.fixedOutput.Load() {
		fmt.Fprintf(&b, `,"min_tokens":%d,"ignore_eos":true`, a.MaxTokens)
	}
	fmt.Fprintf(&b, `,"temperature":%s,"stream":true`, jsonFloat(g.cfg.Temperature))
	if g.includeUsage.Load() {
		b.WriteString(`,"stream_options":{"include_usage":true}`)
	}
	if members := extraMembers(a.Extra); len(members) > 0 {
		b.WriteByte(',')
		b.Write(members)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// extraMembers returns the members of a JSON object without its braces, or
// nil when raw is not a non-empty object.
func extraMembers(raw json.RawMessage) []byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '{' || !json.Valid(raw) {
		return nil
	}
	return bytes.TrimSpace(raw[1 : len(raw)-1])
}

func writeJSONString(b *bytes.Buffer, s string) {
	data, _ := json.Marshal(s) // a string always marshals
	b.Write(data)
}

func jsonFloat(f float64) string {
	data, _ := json.Marshal(f)
	return string(data)
}

// Do sends one request outside any level (level index -1), as a caller
// preparing a load does to check the endpoint, and reads its stream to the
// end.
func (g *Generator) Do(ctx context.Context, r Request) (rundir.RequestRow, []rundir.TokenRow) {
	if r.ID == "" {
		r.ID = "probe"
	}
	return g.do(ctx, &attempt{Request: r, level: -1, target: -1})
}

// DoAt is Do against one replica (its index in Config.URLs): a caller
// checks every replica before the first level.
func (g *Generator) DoAt(ctx context.Context, replica int, r Request) (rundir.RequestRow, []rundir.TokenRow) {
	if r.ID == "" {
		r.ID = "probe"
	}
	if replica < 0 || replica >= len(g.urls) {
		replica = 0
	}
	return g.do(ctx, &attempt{Request: r, level: -1, target: replica})
}

// do sends one request and reads its stream to the end. It always returns
// a row; a 400 that names an optional field drops the field for the rest
// of the run and retries once per field group.
func (g *Generator) do(ctx context.Context, a *attempt) (rundir.RequestRow, []rundir.TokenRow) {
	row := rundir.RequestRow{
		RequestID:          a.ID,
		LevelIndex:         int32(a.level),
		Concurrency:        int64(a.concurrency),
		Seq:                int64(a.seq),
		Warmup:             a.warmup,
		Endpoint:           g.endpoint(),
		PromptTokensTarget: int64(a.PromptTokens),
		OutputTokensTarget: int64(a.MaxTokens),
	}
	if a.session != nil {
		turn, think := a.turn, int64(a.think)
		row.SessionID, row.Turn, row.ThinkNS = a.session, &turn, &think
	}
	for n := 0; ; n++ {
		tokens, retry := g.stream(ctx, a, &row)
		if !retry || n >= 2 {
			return row, tokens
		}
	}
}

// endpoint is the requests table's name for the API.
func (g *Generator) endpoint() string {
	if g.cfg.Chat {
		return "chat"
	}
	return "completions"
}

// stream performs one attempt. retry is set when the server rejected an
// optional field that has now been dropped.
func (g *Generator) stream(ctx context.Context, a *attempt, row *rundir.RequestRow) (tokens []rundir.TokenRow, retry bool) {
	*row = rundir.RequestRow{
		RequestID: row.RequestID, LevelIndex: row.LevelIndex, Concurrency: row.Concurrency, Seq: row.Seq,
		Warmup: row.Warmup, Endpoint: row.Endpoint, PromptTokensTarget: row.PromptTokensTarget,
		OutputTokensTarget: row.OutputTokensTarget, SessionID: row.SessionID, Turn: row.Turn, ThinkNS: row.ThinkNS,
	}
	if a.answer != nil {
		a.answer = a.answer[:0] // a retried attempt starts its answer again
	}
	rctx, cancel := context.WithTimeout(ctx, g.cfg.Timeout)
	defer cancel()
	target := a.target
	if target < 0 {
		target = g.lb.acquire()
		defer g.lb.release(target)
	}
	if len(g.urls) > 1 {
		r := int32(target)
		row.Replica = &r
	}
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, g.urls[target], bytes.NewReader(g.body(a)))
	if err != nil {
		g.fail(row, rundir.StatusConnect, err.Error(), time.Now())
		return nil, false
	}
	for k, v := range g.cfg.Header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	// A server may close a kept-alive connection just as the next request
	// goes out on it (llama-server did, mid-level, for 1-10 % of the
	// requests of a GPU sweep): the request fails before any byte of an
	// answer, and the server never saw it. Browsers and the OpenAI SDKs
	// send it again on a new connection, and so does Go's transport for a
	// request marked idempotent (an empty key marks it and is not sent).
	// Only then, and only once: an answer that began and broke stays a
	// failure. The time of the retry stays in the request's TTFT, and the
	// client samples count the requests sent again.
	req.Header["Idempotency-Key"] = nil
	conns := 0
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) {
			if conns++; conns > 1 {
				g.resent.Add(1)
			}
		},
	}))

	sent := time.Now()
	row.SendNS = g.clock.NS(sent)
	row.IntendedSendNS = row.SendNS
	if !a.intended.IsZero() {
		row.IntendedSendNS = g.clock.NS(a.intended)
		// The client's own lag counts from when it could send: a wait for a
		// free slot under the cap is queueing, and it stays visible as
		// send_ns - intended_send_ns.
		g.noteSendLag(sent.Sub(later(a.intended, a.slotFree)))
	}
	g.openStreams.Add(1)
	defer g.openStreams.Add(-1)

	resp, err := g.client.Do(req)
	if err != nil {
		status := rundir.StatusConnect
		switch {
		case ctx.Err() != nil:
			status = rundir.StatusCanceled
		case errors.Is(rctx.Err(), context.DeadlineExceeded):
			status = rundir.StatusTimeout
		}
		g.fail(row, status, err.Error(), time.Now())
		return nil, false
	}
	defer resp.Body.Close()
	row.HTTPStatus = int32(resp.StatusCode)
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<10))
		end := time.Now()
		if resp.StatusCode == http.StatusBadRequest && g.dropRejectedField(data) {
			return nil, true
		}
		if d, ok := retryAfter(resp.Header, end); ok {
			a.retryAfter = d
		}
		g.fail(row, rundir.StatusHTTPError, StatusMessage(resp, data), end)
		return nil, false
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "application/json" {
		// stream:true ignored: one JSON answer, maybe an error
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		var c chunk
		var p jparser
		if p.parseChunk(bytes.TrimSpace(data), &c) == nil && c.isError {
			g.fail(row, rundir.StatusServerError, "server error: "+string(c.errMsg), time.Now())
		} else {
			g.fail(row, rundir.StatusStreamError, "the server answered with one JSON document, not an event stream (does it support \"stream\": true?)", time.Now())
		}
		return nil, false
	}
	return g.readStream(ctx, rctx, resp.Body, a, row), false
}

// maxTokenPrealloc bounds the token rows allocated before a stream is read:
// the asked output length comes from input (a flag, a dataset line) and may
// be absurd; the slice grows as chunks really arrive.
const maxTokenPrealloc = 4096

// readStream reads the event stream, one goroutine per stream, and fills
// the row; it returns the text chunks.
func (g *Generator) readStream(ctx, rctx context.Context, body io.Reader, a *attempt, row *rundir.RequestRow) []rundir.TokenRow {
	tokens := make([]rundir.TokenRow, 0, min(max(a.MaxTokens+2, 16), maxTokenPrealloc))
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
		usageK    int64 = -1
		observer        = g.cfg.ChunkObserver
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
			ns := g.clock.NS(at)
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
			usageP, usageC, usageK = c.promptTokens, c.completionTokens, c.cachedTokens
		}
		if a.answer != nil && c.textBytes > 0 {
			a.answer = append(a.answer, c.text...)
		}
	}
	if sawDone {
		// Read what follows [DONE] so the connection can be reused.
		_, _ = io.CopyN(io.Discard, body, 64<<10)
	}
	if last.IsZero() {
		last = time.Now()
	}
	row.EndNS = g.clock.NS(last)
	row.ClientChunks = int64(len(tokens))
	row.FinishReason = string(finish)
	if usageSeen {
		if usageP >= 0 {
			row.ServerPromptTokens = &usageP
		}
		if usageC >= 0 {
			row.ServerCompletionTokens = &usageC
		}
		if usageK >= 0 {
			row.ServerCachedTokens = &usageK
		}
	}
	switch {
	case serverErr != "":
		row.Status, row.Error = rundir.StatusServerError, "server error in stream: "+serverErr
	case malformed != "":
		row.Status, row.Error = rundir.StatusStreamError, malformed
	case streamErr != nil:
		row.EndNS = g.clock.NowNS()
		switch {
		case ctx.Err() != nil:
			row.Status = rundir.StatusCanceled
		case errors.Is(rctx.Err(), context.DeadlineExceeded):
			row.Status = rundir.StatusTimeout
		default:
			row.Status = rundir.StatusStreamError
		}
		row.Error = streamErr.Error()
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

func (g *Generator) fail(row *rundir.RequestRow, status, msg string, end time.Time) {
	row.Status, row.Error = status, msg
	row.EndNS = g.clock.NS(end)
	if row.SendNS == 0 {
		row.SendNS, row.IntendedSendNS = row.EndNS, row.EndNS
	}
}

// dropRejectedField turns off an optional field group named in a 400
// answer, so the request can be retried without it. It reports whether it
// dropped anything.
func (g *Generator) dropRejectedField(body []byte) bool {
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
	case g.fixedOutput.Load() && mentions(fixedOutputFields):
		if g.fixedOutput.CompareAndSwap(true, false) {
			g.addFallback(fmt.Sprintf("the server rejected min_tokens/ignore_eos (HTTP 400: %s); requests were sent without them, so output lengths vary (the seed's caveat)", Excerpt(body)))
		}
		return true
	case g.includeUsage.Load() && mentions(includeUsageFields):
		if g.includeUsage.CompareAndSwap(true, false) {
			g.addFallback(fmt.Sprintf("the server rejected stream_options.include_usage (HTTP 400: %s); token counts are the client's chunk counts", Excerpt(body)))
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

// StatusMessage describes a non-200 answer for the requests table: the
// status, where a redirect pointed (never followed), the Retry-After, and
// the start of the body.
func StatusMessage(resp *http.Response, body []byte) string {
	msg := fmt.Sprintf("HTTP %d", resp.StatusCode)
	if loc := resp.Header.Get("Location"); resp.StatusCode >= 300 && resp.StatusCode < 400 && loc != "" {
		msg += " redirect to " + Excerpt([]byte(loc)) + " (not followed: give the final address as --base-url)"
	}
	if v := resp.Header.Get("Retry-After"); v != "" {
		msg += " (Retry-After: " + Excerpt([]byte(v)) + ")"
	}
	if len(body) > 0 {
		msg += ": " + Excerpt(body)
	}
	return msg
}

// Excerpt keeps the first 300 bytes of an answer on one line.
func Excerpt(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func (g *Generator) noteSendLag(d time.Duration) {
	for {
		cur := g.sendLagMaxNS.Load()
		if int64(d) <= cur || g.sendLagMaxNS.CompareAndSwap(cur, int64(d)) {
			return
		}
	}
}
