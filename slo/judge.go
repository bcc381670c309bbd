package slo

import (
	"math"
	"slices"

	"github.com/headroom-llm/headroom/rundir"
	"github.com/headroom-llm/headroom/stats"
)

// DefaultMaxErrorFraction is the largest share of a level's measured
// requests that may fail for the level to count as sustained (analysis
// setting max_error_fraction): a level that loses requests cannot be run at.
const DefaultMaxErrorFraction = 0.01

// Request is what an SLO judges of one measured request. TTFT and E2E are
// taken from the intended send time where the request has one (open
// loop), so a wait for a free slot counts against the SLO; in a closed
// loop the intended time is the send time.
type Request struct {
	OK    bool
	TTFTS float64   // NaN: no token arrived
	TPOTS float64   // NaN: fewer than two tokens
	E2ES  float64   // NaN for a failed request
	ITLS  []float64 // gaps between consecutive text chunks
}

// RequestOf derives a request's latencies from its row and its token rows
// (in any order). TPOT is (end − first token) / (tokens − 1), with the
// server's completion_tokens when it reported them, else the client's
// chunks.
func RequestOf(r *rundir.RequestRow, tokens []rundir.TokenRow) Request {
	q := Request{OK: r.Status == rundir.StatusOK, TTFTS: math.NaN(), TPOTS: math.NaN(), E2ES: math.NaN()}
	if !q.OK {
		return q
	}
	from := r.SendNS
	if r.IntendedSendNS != 0 && r.IntendedSendNS <= r.SendNS {
		from = r.IntendedSendNS
	}
	q.E2ES = float64(r.EndNS-from) / 1e9
	n := r.ClientChunks
	if r.ServerCompletionTokens != nil {
		n = *r.ServerCompletionTokens
	}
	if r.FirstTokenNS != nil {
		q.TTFTS = float64(*r.FirstTokenNS-from) / 1e9
		if n >= 2 {
			q.TPOTS = float64(r.EndNS-*r.FirstTokenNS) / 1e9 / float64(n-1)
		}
	}
	if len(tokens) > 1 {
		ts := slices.Clone(tokens)
		slices.SortFunc(ts, func(a, b rundir.TokenRow) int { return int(a.Index - b.Index) })
		for i := 1; i < len(ts); i++ {
			q.ITLS = append(q.ITLS, float64(ts[i].RecvNS-ts[i-1].RecvNS)/1e9)
		}
	}
	return q
}

// Level is what a level is judged on: its measured requests (failed ones
// included, warm-up not) and whether it ran to its end.
type Level struct {
	Requests []Request
	Complete bool
}

// Verdict is a level against an SLO.
type Verdict struct {
	Bounds []BoundResult `json:"bounds"`
	// Pass: every bound holds and the level is sustained.
	Pass bool `json:"pass"`
	// Known: every bound could be computed.
	Known bool `json:"known"`
	// Sustained: the level completed and at most the allowed share of its
	// measured requests failed.
	Sustained     bool    `json:"sustained"`
	Requests      int     `json:"requests"`
	Errors        int     `json:"errors"`
	ErrorFraction float64 `json:"error_fraction"`
}

// BoundResult is one bound at one level.
type BoundResult struct {
	Bound
	ValueS float64 `json:"value_s"` // the level's percentile; 0 when not known
	N      int     `json:"n"`       // values it rests on
	Known  bool    `json:"known"`
	// Reliable: N is at least stats.MinSamples(Percentile), so the value is
	// a tail estimate and not simply the largest value seen.
	Reliable bool `json:"reliable"`
	Pass     bool `json:"pass"`
}

// Reliable reports whether every bound's value rests on enough requests.
func (v Verdict) Reliable() bool {
	for _, b := range v.Bounds {
		if !b.Reliable {
			return false
		}
	}
	return true
}

// Latencies gathers the latencies of successful requests: TTFT and TPOT
// where known (not NaN), E2E, and every gap between chunks.
type Latencies struct{ TTFT, TPOT, E2E, ITL []float64 }

// Add adds one successful request's latencies.
func (l *Latencies) Add(ttft, tpot, e2e float64, itl []float64) {
	if !math.IsNaN(ttft) {
		l.TTFT = append(l.TTFT, ttft)
	}
	if !math.IsNaN(tpot) {
		l.TPOT = append(l.TPOT, tpot)
	}
	l.E2E = append(l.E2E, e2e)
	l.ITL = append(l.ITL, itl...)
}

// Judge judges a level: each bound's percentile (nearest rank, the
// stats package's) over the level's successful requests, ITL over every
// chunk gap of them; the level passes when every bound holds and the
// level is sustained (complete, failed share ≤ maxErrorFraction).
func (s *SLO) Judge(l Level, maxErrorFraction float64) Verdict {
	v := Verdict{Known: true, Pass: true, Requests: len(l.Requests)}
	var lat Latencies
	for _, r := range l.Requests {
		if !r.OK {
			v.Errors++
			continue
		}
		lat.Add(r.TTFTS, r.TPOTS, r.E2ES, r.ITLS)
	}
	if v.Requests > 0 {
		v.ErrorFraction = float64(v.Errors) / float64(v.Requests)
	}
	v.Sustained = l.Complete && v.ErrorFraction <= maxErrorFraction
	values := map[string][]float64{"ttft": lat.TTFT, "tpot": lat.TPOT, "e2e": lat.E2E, "itl": lat.ITL}
	for _, b := range s.Bounds {
		xs := values[b.Metric]
		br := BoundResult{Bound: b, N: len(xs), Known: len(xs) > 0}
		if br.Known {
			br.ValueS = stats.Of(xs, b.Percentile)[0]
			br.Reliable = br.N >= stats.MinSamples(b.Percentile)
			br.Pass = br.ValueS <= b.MaxS
		}
		v.Known = v.Known && br.Known
		v.Pass = v.Pass && br.Pass
		v.Bounds = append(v.Bounds, br)
	}
	v.Pass = v.Pass && v.Sustained
	return v
}

// Meets reports whether one request meets every bound with its own
// values: its TTFT, TPOT and E2E, and for an ITL bound the bound's
// percentile of its own chunk gaps (a request of one chunk has no gap to
// violate it). A value the request lacks fails the bound.
func (s *SLO) Meets(r Request) bool {
	if !r.OK {
		return false
	}
	for _, b := range s.Bounds {
		v := math.NaN()
		switch b.Metric {
		case "ttft":
			v = r.TTFTS
		case "tpot":
			v = r.TPOTS
		case "e2e":
			v = r.E2ES
		case "itl":
			v = 0
			if len(r.ITLS) > 0 {
				v = stats.Of(r.ITLS, b.Percentile)[0]
			}
		}
		if math.IsNaN(v) || v > b.MaxS {
			return false
		}
	}
	return true
}
