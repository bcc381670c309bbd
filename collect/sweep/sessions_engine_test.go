package sweep

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/internal/testengine"
	"github.com/headroom-llm/headroom/rundir"
)

// sessionRows groups a run's requests by session, each in turn order.
func sessionRows(t *testing.T, dir string) map[string][]rundir.RequestRow {
	t.Helper()
	reqs, err := rundir.ReadTable[rundir.RequestRow](dir, rundir.TableRequests)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]rundir.RequestRow{}
	for _, r := range reqs {
		if r.SessionID == nil || r.Turn == nil || r.ThinkNS == nil {
			t.Fatalf("%s: no session, turn or think time", r.RequestID)
		}
		out[*r.SessionID] = append(out[*r.SessionID], r)
	}
	for _, rows := range out {
		slices.SortFunc(rows, func(a, b rundir.RequestRow) int { return int(*a.Turn - *b.Turn) })
	}
	return out
}

// Generated sessions over the chat endpoint against the real test engine
// with its prefix cache on: every session sends its turns in order, each
// prompt holds the previous prompt and the server's own answer (so it is
// longer by at least the answer), each later turn waits its think time
// after the previous answer's end, and the server reports the history as
// cached while first turns find nothing but the BOS token.
func TestGeneratedSessionsAgainstTestEngine(t *testing.T) {
	// More sequences than sessions in progress: a new session takes an
	// unused sequence, never one holding a live session's history.
	e := testengine.Start(t, testengine.Options{Sequences: 8, CtxPerSeq: 1024, PrefixCache: true})
	dir := filepath.Join(t.TempDir(), "run")
	const think, sd = 150 * time.Millisecond, 50 * time.Millisecond
	s := mustNew(t, e.BaseURL, WithEndpoint(EndpointChat), WithLevels(2), WithWarmup(0), WithMetricsInterval(100*time.Millisecond),
		WithPromptTokens(Fixed(40)), WithOutputTokens(Fixed(12)), WithTimeout(time.Minute),
		WithSessions(Sessions{TurnsMean: 3, ThinkMean: think, ThinkStddev: sd, PerLevel: 4}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run, err := s.Record(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if ss := run.Manifest.Workload.Sessions; ss == nil || ss.Source != "generated" || ss.TurnsMean != 3 || ss.ThinkMeanS != think.Seconds() {
		t.Errorf("manifest sessions %+v", ss)
	}
	sessions := sessionRows(t, dir)
	if len(sessions) != 4 {
		t.Fatalf("%d sessions, want 4", len(sessions))
	}
	var thinks []time.Duration
	for id, rows := range sessions {
		if len(rows) != 3 {
			t.Errorf("session %s: %d turns, want 3", id, len(rows))
			continue
		}
		for k, r := range rows {
			if r.Status != rundir.StatusOK || r.ServerPromptTokens == nil || r.ServerCompletionTokens == nil || r.FirstTokenNS == nil {
				t.Fatalf("%s: %s %q", r.RequestID, r.Status, r.Error)
			}
			if int(*r.Turn) != k+1 {
				t.Errorf("%s: turn %d at position %d", r.RequestID, *r.Turn, k)
			}
			if r.ServerCachedTokens == nil {
				t.Fatalf("%s: the engine's cached_tokens did not reach the row", r.RequestID)
			}
			if k == 0 {
				if *r.ThinkNS != 0 || r.IntendedSendNS != r.SendNS || *r.ServerCachedTokens > 1 {
					t.Errorf("%s: first turn think %d, intended %d vs sent %d, cached %d", r.RequestID, *r.ThinkNS,
						r.IntendedSendNS, r.SendNS, *r.ServerCachedTokens)
				}
				continue
			}
			prev := rows[k-1]
			history := *prev.ServerPromptTokens + *prev.ServerCompletionTokens
			if *r.ServerPromptTokens < history+40 {
				t.Errorf("%s: prompt %d tokens, the previous turn's prompt and answer are %d and the new text 40", r.RequestID,
					*r.ServerPromptTokens, history)
			}
			// The last sampled token is never evaluated into the cache.
			if *r.ServerCachedTokens < history-1 {
				t.Errorf("%s: %d cached tokens, the history is %d", r.RequestID, *r.ServerCachedTokens, history)
			}
			th := time.Duration(*r.ThinkNS)
			thinks = append(thinks, th)
			if r.IntendedSendNS != prev.EndNS+*r.ThinkNS {
				t.Errorf("%s: intended send %d, previous end %d + think %d", r.RequestID, r.IntendedSendNS, prev.EndNS, *r.ThinkNS)
			}
			// Never early; late only by the client's scheduling (a second
			// bounds it on a loaded machine; the lag is recorded, not hidden).
			if gap := time.Duration(r.SendNS - prev.EndNS); gap < th || gap > th+time.Second {
				t.Errorf("%s: sent %v after the previous answer, think time %v", r.RequestID, gap, th)
			}
		}
	}
	if len(thinks) != 8 {
		t.Fatalf("%d think times", len(thinks))
	}
	var sum time.Duration
	for _, th := range thinks {
		sum += th
		if th < 0 || th > think+6*sd {
			t.Errorf("think time %v outside a normal of %v ± %v truncated at 0", th, think, sd)
		}
	}
	if mean := sum / time.Duration(len(thinks)); mean < think-3*sd/2 || mean > think+3*sd/2 {
		t.Errorf("mean think time %v of 8, want %v ± 1.5σ", mean, think)
	}
	if thinks[0] == thinks[1] && thinks[1] == thinks[2] {
		t.Error("think times do not vary with a standard deviation")
	}
}

// The real ShareGPT excerpt sent turn by turn (completions, file order)
// against the test engine, whose tokenizer is one token per byte plus BOS,
// so every length is known by construction: the first five conversations
// with a user turn become the sessions (leading assistant messages
// dropped), each turn's prompt is the history, "\n\n" and the user text,
// and the long conversation is cut when its next turn would not fit the
// engine's 1024 tokens.
func TestShareGPTSessionsAgainstTestEngine(t *testing.T) {
	const path = "../../testdata/datasets/sharegpt-excerpt.json"
	var convs []struct {
		ID            string `json:"id"`
		Conversations []struct {
			From  string `json:"from"`
			Value string `json:"value"`
		} `json:"conversations"`
	}
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &convs); err != nil {
		t.Fatal(err)
	}
	const out, ctxLen, sessions = 16, 1024, 5
	// Expected prompt lengths of each session's turns, by the byte rule.
	var want [][]int64
	for _, c := range convs[:sessions] {
		var users []string
		for _, m := range c.Conversations {
			if m.From == "human" {
				users = append(users, m.Value)
			}
		}
		var lens []int64
		prompt := int64(1) // BOS
		for k, u := range users {
			if k > 0 {
				prompt += 2 // "\n\n"
			}
			prompt += int64(len(u))
			// The turn is sent when the history as the server counted it
			// (last prompt and answer), the text as counted alone (with its
			// BOS) and the output fit.
			history := int64(0)
			if k > 0 {
				history = lens[k-1] + out
			}
			if history+int64(len(u))+1+out > ctxLen {
				break
			}
			lens = append(lens, prompt)
			prompt += out
		}
		want = append(want, lens)
	}
	if len(want[4]) < 3 || len(want[4]) >= 33 {
		t.Fatalf("the excerpt changed: the fifth conversation sends %d of its 33 user turns", len(want[4]))
	}

	e := testengine.Start(t, testengine.Options{Sequences: 4, CtxPerSeq: ctxLen})
	s := mustNew(t, e.BaseURL, WithNamedDataset(Dataset{Name: DatasetShareGPT, Path: path, DisableShuffle: true, OutputTokens: out}),
		WithLevels(2), WithWarmup(0), WithMetricsInterval(0), WithTimeout(time.Minute),
		WithSessions(Sessions{PerLevel: sessions}))
	dir, run := engineRun(t, s)
	if ss := run.Manifest.Workload.Sessions; ss == nil || ss.Source != "dataset" {
		t.Errorf("manifest sessions %+v", ss)
	}
	got := sessionRows(t, dir)
	for n, lens := range want {
		rows := got["0-s"+strconv.Itoa(n)]
		if len(rows) != len(lens) {
			t.Errorf("session %d (%s): %d turns sent, want %d", n, convs[n].ID, len(rows), len(lens))
			continue
		}
		for k, r := range rows {
			if r.Status != rundir.StatusOK || r.ServerPromptTokens == nil || *r.ServerPromptTokens != lens[k] ||
				r.ServerCompletionTokens == nil || *r.ServerCompletionTokens != out {
				t.Errorf("%s turn %d: %s, prompt %v want %d, output %v", convs[n].ID, k+1, r.Status, r.ServerPromptTokens, lens[k], r.ServerCompletionTokens)
			}
			// Without a prefix cache the engine reports none.
			if r.ServerCachedTokens != nil {
				t.Errorf("%s turn %d: cached tokens %d from an engine without a prefix cache", convs[n].ID, k+1, *r.ServerCachedTokens)
			}
		}
	}
}
