package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/headroom-llm/headroom/collect/loadgen"
	"github.com/headroom-llm/headroom/rundir"
)

// Sessions configures multi-turn conversations (WithSessions): each level
// keeps its concurrency's number of sessions in progress, each sending its
// turns one after the other with the history (every earlier user text and
// the server's own answers) and a think time before every turn after the
// first. The definitions follow AIPerf's and vLLM's multi-turn benchmarks
// (docs/sweep.md, "Multi-turn sessions").
type Sessions struct {
	// TurnsMean and TurnsStddev draw the number of user turns of a
	// generated session: a normal truncated at zero, rounded up, at least 1
	// (AIPerf's --session-turns-mean/-stddev). With a dataset the
	// conversations decide, and these must be 0.
	TurnsMean, TurnsStddev float64
	// MaxTurns caps a session's user turns (vLLM's --max-turns); 0: all.
	MaxTurns int
	// ThinkMean and ThinkStddev draw the think time before each turn after
	// the first: a normal truncated at zero (AIPerf's
	// --session-turn-delay-mean/-stddev).
	ThinkMean, ThinkStddev time.Duration
	// PerLevel is the number of measured sessions per level; 0: enough
	// for the level's default number of measured requests (4 ×
	// concurrency, at least DefaultMinRequestsPerLevel) at the mean number
	// of turns.
	PerLevel int
}

// WithSessions sends multi-turn conversations instead of single requests:
// from the dataset's conversations (WithNamedDataset), or generated with
// the prompt and output distributions for each turn.
func WithSessions(ss Sessions) Option {
	return func(c *config) error {
		switch {
		case ss.TurnsMean < 0 || ss.TurnsStddev < 0 || math.IsNaN(ss.TurnsMean+ss.TurnsStddev) || math.IsInf(ss.TurnsMean+ss.TurnsStddev, 0):
			return fmt.Errorf("session turns mean %v, stddev %v: want 0 or more", ss.TurnsMean, ss.TurnsStddev)
		case ss.TurnsMean > maxSessionTurns:
			return fmt.Errorf("session turns mean %v: at most %d", ss.TurnsMean, maxSessionTurns)
		case ss.MaxTurns < 0:
			return fmt.Errorf("max turns %d: want 0 (all) or more", ss.MaxTurns)
		case ss.ThinkMean < 0 || ss.ThinkStddev < 0:
			return fmt.Errorf("think time mean %v, stddev %v: want 0 or more", ss.ThinkMean, ss.ThinkStddev)
		case ss.PerLevel < 0:
			return fmt.Errorf("sessions per level %d: want 0 (the default) or more", ss.PerLevel)
		}
		c.sessions = &ss
		return nil
	}
}

// maxSessionTurns bounds the turns of one generated session.
const maxSessionTurns = 1000

// checkSessions checks how sessions combine with the other options.
func checkSessions(c *config) error {
	ss := c.sessions
	if ss == nil {
		return nil
	}
	switch {
	case c.traceCfg != nil:
		return errors.New("a trace times its own requests: it does not mix with multi-turn sessions")
	case len(c.rates) > 0 || c.ramp != nil:
		return errors.New("multi-turn sessions run closed loop (--concurrency is the number of sessions in progress): leave out --rate and ramps")
	case c.sharedPrefix > 0:
		return errors.New("a shared prefix and multi-turn sessions do not mix: every later turn already starts with its history")
	case c.shard != nil:
		return errors.New("multi-turn sessions are not split over several hosts yet: run one sweep")
	case c.dataset != "" && ss.TurnsMean > 0:
		return errors.New("the dataset's conversations decide the turns: leave out --session-turns-mean (--max-turns caps them)")
	case c.dataset == "" && ss.TurnsMean == 0:
		return errors.New("generated sessions need a number of turns: --session-turns-mean N (or a dataset of conversations with --multi-turn)")
	case c.dataset == "" && ss.TurnsMean < 1:
		return fmt.Errorf("session turns mean %v: at least 1", ss.TurnsMean)
	}
	return nil
}

// dialogTurn is one user turn of a dataset conversation, counted.
type dialogTurn struct {
	text         string
	textTokens   int
	answerTokens int // the dataset's answer to it; 0: none, the output distribution decides
}

// prepareDialogs takes the dataset's conversations as sessions: their user
// turns in order (leading assistant messages dropped, as AIPerf takes only
// the human turns), each answer's length the output length of its turn (as
// vLLM's multi-turn benchmark does), each text counted once.
func (s *Sweep) prepareDialogs(ctx context.Context) error {
	d := s.cfg.datasetCfg
	recs := s.datasetRecs
	order := s.datasetOrder()
	count, method, err := s.datasetCounter(ctx, recs, order)
	if err != nil {
		return err
	}
	stats := &rundir.DatasetSample{Format: s.datasetFormat, Records: len(recs), Skipped: map[string]int{}, Shuffled: !d.DisableShuffle,
		OutputOverride: d.OutputTokens, Tokenizer: method}
	need := s.datasetPoolSize()
	var prompts, outputs []float64
	for _, i := range order {
		if len(s.dialogs) == need {
			break
		}
		stats.Considered++
		dl, err := s.dialogOf(ctx, count, recs[i])
		if err != nil {
			return fmt.Errorf("dataset %s: counting tokens: %w", d.Path, err)
		}
		if len(dl) == 0 {
			stats.Skipped[skipNoUserTurn]++
			continue
		}
		if mml := s.maxModelLen; mml > 0 && dl[0].textTokens+s.turnOutputUpper(dl[0]) > mml {
			stats.Skipped[skipMaxModelLen]++
			continue
		}
		s.dialogs = append(s.dialogs, dl)
		for _, t := range dl {
			prompts = append(prompts, float64(t.textTokens))
			if t.answerTokens > 0 {
				outputs = append(outputs, float64(t.answerTokens))
			}
		}
	}
	if len(s.dialogs) == 0 {
		return fmt.Errorf("dataset %s: none of its %d records has a user turn to send", d.Path, len(recs))
	}
	stats.Used = len(s.dialogs)
	if len(s.dialogs) < need {
		stats.Reused = true
		s.note(fmt.Sprintf("dataset %s has %d usable conversations for levels of up to %d sessions: they are sent again in the same order", d.Path, len(s.dialogs), need))
	}
	stats.PromptTokens, stats.OutputTokens = summarize(prompts), summarize(outputs)
	if len(stats.Skipped) == 0 {
		stats.Skipped = nil
	}
	s.datasetStats = stats
	return nil
}

const skipNoUserTurn = "no user turn"

// turnOutputUpper is the most output tokens a dataset turn asks for.
func (s *Sweep) turnOutputUpper(t dialogTurn) int {
	switch {
	case s.cfg.datasetCfg.OutputTokens > 0:
		return s.cfg.datasetCfg.OutputTokens
	case t.answerTokens > 0:
		return t.answerTokens
	}
	return s.cfg.output.upper()
}

// dialogOf is a record's user turns, counted, capped at MaxTurns.
func (s *Sweep) dialogOf(ctx context.Context, count counter, r datasetRecord) ([]dialogTurn, error) {
	var out []dialogTurn
	for k, text := range r.turns {
		if r.roles[k] != "user" {
			if r.roles[k] == "assistant" && len(out) > 0 && out[len(out)-1].answerTokens == 0 {
				n, err := count(ctx, text)
				if err != nil {
					return nil, err
				}
				out[len(out)-1].answerTokens = max(n, 1)
			}
			continue
		}
		if mt := s.cfg.sessions.MaxTurns; mt > 0 && len(out) == mt {
			break
		}
		n, err := count(ctx, text)
		if err != nil {
			return nil, err
		}
		out = append(out, dialogTurn{text: text, textTokens: n})
	}
	return out, nil
}

// meanTurns is the expected number of user turns of a session.
func (s *Sweep) meanTurns() float64 {
	ss := s.cfg.sessions
	if len(s.dialogs) > 0 {
		var n int
		for _, d := range s.dialogs {
			n += len(d)
		}
		return float64(n) / float64(len(s.dialogs))
	}
	if ss.TurnsMean > 0 {
		t := ss.TurnsMean
		if ss.MaxTurns > 0 {
			t = min(t, float64(ss.MaxTurns))
		}
		return t
	}
	return 1
}

// warmupSessions is the number of warm-up sessions of a level of
// concurrency c: the warm-up requests (WithWarmup; by default one per
// stream) divided by the mean turns, rounded up.
func (s *Sweep) warmupSessions(c int) int {
	w := s.cfg.warmup
	if w < 0 {
		w = c
	}
	if w == 0 {
		return 0
	}
	return int(math.Ceil(float64(w) / s.meanTurns()))
}

// sessionCount is the number of measured sessions of a closed-loop level
// of concurrency c: given, or the requests the level would measure
// otherwise divided by the mean turns, and at least one per stream.
func (s *Sweep) sessionCount(c int) int {
	ss := s.cfg.sessions
	switch {
	case s.cfg.durationPerLevel > 0:
		return 0
	case ss.PerLevel > 0:
		return ss.PerLevel
	}
	req := s.cfg.requestsPerLevel
	if req == 0 {
		req = max(DefaultMinRequestsPerLevel, 4*c)
	}
	return max(c, int(math.Ceil(float64(req)/s.meanTurns())))
}

// positiveNormal draws from a normal truncated at zero by rejection, as
// AIPerf's sample_positive_normal does; sd 0 gives the mean.
func positiveNormal(rng *rand.Rand, mean, sd float64) float64 {
	if sd <= 0 {
		return max(mean, 0)
	}
	for range 10000 {
		if x := mean + sd*rng.NormFloat64(); x >= 0 {
			return x
		}
	}
	return max(mean, 0)
}

// Conversation decides session n of level l (the sweep is the load
// generator's ConversationSource): a dataset conversation in the pool's
// order, or turns generated from an RNG seeded by (seed, level, session),
// so a workload does not depend on timing. Think times come from that RNG
// too.
func (s *Sweep) Conversation(l loadgen.Level, n int, _ bool) loadgen.Conversation {
	ss := s.cfg.sessions
	li := l.Index
	rng := rand.New(rand.NewPCG(uint64(s.cfg.seed)^0xc0417e55, uint64(li)<<40|uint64(n)))
	c := loadgen.Conversation{
		ID:               fmt.Sprintf("%d-s%d", li, n),
		MaxContextTokens: s.maxModelLen,
		RequestID:        func(seq int) string { return rundir.RequestID(s.runID, li, seq) },
	}
	think := func() time.Duration {
		return time.Duration(positiveNormal(rng, float64(ss.ThinkMean), float64(ss.ThinkStddev)))
	}
	if len(s.dialogs) > 0 {
		for k, t := range s.dialogs[n%len(s.dialogs)] {
			out := t.answerTokens
			if d := s.cfg.datasetCfg.OutputTokens; d > 0 {
				out = d
			}
			if out == 0 {
				out = s.cfg.output.Sample(rng)
			}
			turn := loadgen.Turn{Text: t.text, TextTokens: t.textTokens, MaxTokens: out, Extra: s.extra}
			if k > 0 {
				turn.Think = think()
			}
			c.Turns = append(c.Turns, turn)
		}
		return c
	}
	turns := max(1, int(math.Round(ss.TurnsMean)))
	if ss.TurnsStddev > 0 {
		turns = max(1, int(math.Ceil(positiveNormal(rng, ss.TurnsMean, ss.TurnsStddev))))
	}
	if ss.MaxTurns > 0 {
		turns = min(turns, ss.MaxTurns)
	}
	turns = min(turns, maxSessionTurns)
	levels := uint64(max(len(s.cfg.levels), 1))
	if s.search != nil {
		levels = maxSearchLevels
	}
	for k := range turns {
		target := s.cfg.prompt.Sample(rng)
		// A prompt id unique to (level, session, turn): no two turns of the
		// run share text but by their history.
		id := (uint64(n)*maxSessionTurns+uint64(k))*levels + uint64(li)
		text, tokens := s.prompts.build(rng, target, id)
		turn := loadgen.Turn{Text: text, TextTokens: tokens, MaxTokens: s.cfg.output.Sample(rng), Extra: s.extra}
		if k > 0 {
			turn.Think = think()
		}
		c.Turns = append(c.Turns, turn)
	}
	return c
}
