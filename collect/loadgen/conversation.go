package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// Conversation is one multi-turn session: its turns are sent one after the
// other, each carrying the whole history (every earlier user text and the
// server's own answer to it), with the turn's think time between the end of
// the previous answer and the turn's send.
type Conversation struct {
	// ID names the session in the rows (session_id); "" gives
	// "<level>-s<n>".
	ID    string
	Turns []Turn
	// MaxContextTokens, when above 0, ends the session before a turn whose
	// prompt (the history as the server counted it, plus the turn's own
	// text) and output would not fit: the model's context.
	MaxContextTokens int
	// RequestID names request seq of the level (the sweep's run-unique
	// ids); nil: "<session>-t<turn>".
	RequestID func(seq int) string
}

// Turn is one user message of a Conversation.
type Turn struct {
	// Text is the user's message (chat), or the text appended to the
	// history (completions).
	Text string
	// TextTokens is Text's own length in tokens (0: unknown): the prompt's
	// intended length is the previous prompt, the previous answer and this.
	TextTokens int
	// MaxTokens is the output length asked.
	MaxTokens int
	// Think is the wait from the end of the previous turn's answer to this
	// turn's send (ignored for the first turn).
	Think time.Duration
	// Extra holds more top-level fields of the body, as Request.Extra.
	Extra json.RawMessage
}

// ConversationSource decides the sessions of a level whose Sessions is
// set: Conversation is called when session n of level l starts (warm-up
// sessions first), concurrently from the level's streams.
type ConversationSource interface {
	Conversation(l Level, n int, warmup bool) Conversation
}

// completionsTurnSeparator joins the history and the next user text when
// the endpoint is /v1/completions (one prompt string).
const completionsTurnSeparator = "\n\n"

// history is a conversation's state between turns.
type history struct {
	chat     bool
	messages []json.RawMessage // chat: the message list so far
	prompt   []byte            // completions: the prompt so far
	// tokens is the last prompt plus its answer as the server counted them
	// (usage), or the client's estimate; -1 when unknown.
	tokens int
}

func rawMessage(role, content string) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"role":`)
	writeJSONString(&b, role)
	b.WriteString(`,"content":`)
	writeJSONString(&b, content)
	b.WriteByte('}')
	return b.Bytes()
}

// request is the turn's request with the history before it.
func (h *history) request(t Turn) Request {
	r := Request{MaxTokens: t.MaxTokens, Extra: t.Extra}
	if h.chat {
		h.messages = append(h.messages, rawMessage("user", t.Text))
		var b bytes.Buffer
		b.WriteByte('[')
		for i, m := range h.messages {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(m)
		}
		b.WriteByte(']')
		r.Messages = b.Bytes()
		r.Prompt = t.Text
	} else {
		if len(h.prompt) > 0 {
			h.prompt = append(h.prompt, completionsTurnSeparator...)
		}
		h.prompt = append(h.prompt, t.Text...)
		r.Prompt = string(h.prompt)
	}
	if h.tokens >= 0 && t.TextTokens > 0 {
		r.PromptTokens = h.tokens + t.TextTokens
	}
	return r
}

// answered adds the server's answer (its raw, JSON-escaped streamed text)
// to the history.
func (h *history) answered(raw []byte, row *rundir.RequestRow) {
	text := unescapeJSON(raw)
	if h.chat {
		h.messages = append(h.messages, rawMessage("assistant", text))
	} else {
		h.prompt = append(h.prompt, text...)
	}
	switch {
	case row.ServerPromptTokens != nil && row.ServerCompletionTokens != nil:
		h.tokens = int(*row.ServerPromptTokens + *row.ServerCompletionTokens)
	case row.PromptTokensTarget > 0:
		h.tokens = int(row.PromptTokensTarget + row.ClientChunks)
	default:
		h.tokens = -1
	}
}

// unescapeJSON decodes the body of a JSON string (streamed text chunks
// joined); text that does not decode is kept as it came.
func unescapeJSON(raw []byte) string {
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw)
	}
	var s string
	if err := json.Unmarshal(append(append([]byte{'"'}, raw...), '"'), &s); err != nil {
		return string(raw)
	}
	return s
}

// fits reports whether turn t can be sent after the history within limit.
func (h *history) fits(t Turn, limit int) bool {
	if limit <= 0 || h.tokens < 0 {
		return true
	}
	return h.tokens+max(t.TextTokens, 0)+t.MaxTokens <= limit
}

// sessionLoop keeps conc sessions in progress until n sessions started
// (or d elapsed, when d > 0), starting at session number first; every
// request takes the level's next sequence number from seq. It returns the
// next session number.
func (g *Generator) sessionLoop(ctx context.Context, st *levelState, src ConversationSource, seq *atomic.Int64, first, n int, d time.Duration, conc int, warmup bool) int {
	c := newCounter(first, n, d)
	return c.run(conc, func() {
		for {
			i, ok := c.take(ctx)
			if !ok {
				return
			}
			g.runConversation(ctx, st, src.Conversation(st.l, i, warmup), i, seq, warmup)
			st.sessionsDone.Add(1)
			st.report()
		}
	})
}

// runConversation sends one session's turns in order. A failed turn ends
// the session (its history would lack an answer), as does a turn that
// would not fit the context.
func (g *Generator) runConversation(ctx context.Context, st *levelState, c Conversation, n int, seq *atomic.Int64, warmup bool) {
	id := c.ID
	if id == "" {
		id = strconv.Itoa(st.l.Index) + "-s" + strconv.Itoa(n)
	}
	h := &history{chat: g.cfg.Chat}
	var prevEnd time.Time
	for k, t := range c.Turns {
		if ctx.Err() != nil || !h.fits(t, c.MaxContextTokens) {
			return
		}
		think := time.Duration(0)
		intended := time.Now()
		if k > 0 {
			think = max(t.Think, 0)
			intended = prevEnd.Add(think)
			sleepCtx(ctx, time.Until(intended))
			if ctx.Err() != nil {
				return
			}
		}
		s := int(seq.Add(1) - 1)
		r := h.request(t)
		r.ID = fmt.Sprintf("%s-t%d", id, k+1)
		if c.RequestID != nil {
			r.ID = c.RequestID(s)
		}
		a := &attempt{Request: r, level: st.l.Index, concurrency: st.l.Concurrency, seq: s, warmup: warmup, target: -1,
			answer: make([]byte, 0, 256), session: &id, turn: int32(k + 1), think: think}
		if k > 0 {
			// The intended send time is the previous answer's end plus the
			// think time: the client's lag past it stays visible.
			a.intended, a.slotFree = intended, intended
		}
		row, tokens := g.do(ctx, a)
		st.finished(row, tokens)
		if row.Status != rundir.StatusOK {
			return
		}
		h.answered(a.answer, &row)
		prevEnd = g.clock.Time(row.EndNS)
	}
}
