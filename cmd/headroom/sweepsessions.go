package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/headroom-llm/headroom/collect/sweep"
)

// sessionFlags are the multi-turn flags, named as AIPerf names them
// (--session-turns-mean, --session-turn-delay-mean) and, for the cap on
// turns, as vLLM's multi-turn benchmark does (--max-turns).
type sessionFlags struct {
	multiTurn              bool
	turnsMean, turnsStddev float64
	maxTurns, perLevel     int
	thinkMean, thinkStddev time.Duration
}

// AIPerf's other names for the same flags.
var sessionAliases = map[string]string{
	"conversation-turn-mean":         "session-turns-mean",
	"conversation-turn-stddev":       "session-turns-stddev",
	"conversation-turn-delay-mean":   "session-turn-delay-mean",
	"conversation-turn-delay-stddev": "session-turn-delay-stddev",
	"conversation-num":               "sessions-per-level",
	"num-conversations":              "sessions-per-level",
	"num-sessions":                   "sessions-per-level",
}

func (s *sessionFlags) define(fl *pflag.FlagSet) {
	fl.BoolVar(&s.multiTurn, "multi-turn", false, "send each --dataset conversation turn by turn, each turn with its history and the server's own answers (--concurrency: sessions in progress)")
	fl.Float64Var(&s.turnsMean, "session-turns-mean", 0, "generated multi-turn sessions: mean user turns per session (turns of --prompt-tokens and --output-tokens)")
	fl.Float64Var(&s.turnsStddev, "session-turns-stddev", 0, "standard deviation of the turns per generated session")
	fl.Var(&msDuration{&s.thinkMean}, "session-turn-delay-mean", "multi-turn: mean think time before each turn after the first (milliseconds, or a duration such as 2s)")
	fl.Var(&msDuration{&s.thinkStddev}, "session-turn-delay-stddev", "multi-turn: standard deviation of the think time (milliseconds, or a duration)")
	fl.IntVar(&s.maxTurns, "max-turns", 0, "multi-turn: send at most this many user turns of a session (0: all)")
	fl.IntVar(&s.perLevel, "sessions-per-level", 0, fmt.Sprintf("multi-turn: measured sessions per level (0: enough for 4 × concurrency requests, at least %d)", sweep.DefaultMinRequestsPerLevel))
}

// option is the sweep's sessions option, nil when no multi-turn flag was
// given.
func (s *sessionFlags) option(fl *pflag.FlagSet) (sweep.Option, error) {
	on := s.multiTurn || fl.Changed("session-turns-mean")
	if !on {
		for _, n := range []string{"session-turns-stddev", "session-turn-delay-mean", "session-turn-delay-stddev", "max-turns", "sessions-per-level"} {
			if fl.Changed(n) {
				return nil, usageError{fmt.Errorf("--%s is for multi-turn sessions: add --multi-turn (with --dataset) or --session-turns-mean N", n)}
			}
		}
		return nil, nil
	}
	return sweep.WithSessions(sweep.Sessions{TurnsMean: s.turnsMean, TurnsStddev: s.turnsStddev, MaxTurns: s.maxTurns,
		ThinkMean: s.thinkMean, ThinkStddev: s.thinkStddev, PerLevel: s.perLevel}), nil
}

// msDuration is a duration flag whose bare numbers are milliseconds, as
// AIPerf's delays are.
type msDuration struct{ d *time.Duration }

func (m *msDuration) String() string {
	if m.d == nil || *m.d == 0 {
		return "0"
	}
	return m.d.String()
}

func (m *msDuration) Type() string { return "ms" }

func (m *msDuration) Set(v string) error {
	v = strings.TrimSpace(v)
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if f < 0 || f > 1e9 {
			return errors.New("want 0 or more milliseconds")
		}
		*m.d = time.Duration(f * float64(time.Millisecond))
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return errors.New("want milliseconds (2000) or a duration (2s)")
	}
	*m.d = d
	return nil
}
