package slo

import (
	"math"
	"testing"

	"github.com/headroom-llm/headroom/rundir"
)

func ptr[T any](v T) *T { return &v }

// A request's latencies by the definitions: TTFT and E2E from the intended
// send time when it is before the send (an open loop's wait counts), TPOT
// with the server's token count, ITL from the chunk gaps in index order.
func TestRequestOf(t *testing.T) {
	ms := int64(1e6)
	r := rundir.RequestRow{Status: rundir.StatusOK, IntendedSendNS: 100 * ms, SendNS: 150 * ms,
		FirstTokenNS: ptr(250 * ms), EndNS: 650 * ms, ClientChunks: 3, ServerCompletionTokens: ptr[int64](5)}
	toks := []rundir.TokenRow{{Index: 2, RecvNS: 650 * ms}, {Index: 0, RecvNS: 250 * ms}, {Index: 1, RecvNS: 400 * ms}}
	q := RequestOf(&r, toks)
	if !q.OK || q.TTFTS != 0.15 || q.E2ES != 0.55 || math.Abs(q.TPOTS-0.1) > 1e-12 ||
		len(q.ITLS) != 2 || q.ITLS[0] != 0.15 || q.ITLS[1] != 0.25 {
		t.Errorf("%+v", q)
	}
	// Closed loop (intended = send), no usage: the client's chunks count.
	r.IntendedSendNS, r.ServerCompletionTokens = r.SendNS, nil
	q = RequestOf(&r, nil)
	if q.TTFTS != 0.1 || q.E2ES != 0.5 || q.TPOTS != 0.2 || q.ITLS != nil {
		t.Errorf("%+v", q)
	}
	// One token: no TPOT. A failure: nothing but OK=false.
	r.ClientChunks = 1
	if q = RequestOf(&r, nil); !math.IsNaN(q.TPOTS) {
		t.Errorf("one token: TPOT %v", q.TPOTS)
	}
	r.Status = rundir.StatusTimeout
	if q = RequestOf(&r, nil); q.OK || !math.IsNaN(q.TTFTS) {
		t.Errorf("failed: %+v", q)
	}
}

// levelOf makes n successful requests whose TTFT is i ms (i = 1..n) and
// whose TPOT is tpot, and failed more.
func levelOf(n, failed int, tpot float64) Level {
	var l Level
	for i := 1; i <= n; i++ {
		l.Requests = append(l.Requests, Request{OK: true, TTFTS: float64(i) / 1000, TPOTS: tpot, E2ES: 1, ITLS: []float64{tpot}})
	}
	for range failed {
		l.Requests = append(l.Requests, Request{TTFTS: math.NaN(), TPOTS: math.NaN(), E2ES: math.NaN()})
	}
	l.Complete = true
	return l
}

// Judge against known answers: the nearest-rank p99 of TTFTs 1..200 ms is
// 198 ms; the bound passes at 198 ms and fails at 197 ms; 99 requests are
// too few for a reliable p99; a level losing more than 1 % fails whatever
// its latencies; an unfinished level fails.
func TestJudge(t *testing.T) {
	s, _ := Parse("ttft_p99=198ms,tpot_p50=10ms")
	v := s.Judge(levelOf(200, 0, 0.01), DefaultMaxErrorFraction)
	if !v.Pass || !v.Known || !v.Sustained || !v.Reliable() || v.Bounds[0].ValueS != 0.198 || v.Bounds[0].N != 200 {
		t.Errorf("pass expected: %+v", v)
	}
	s2, _ := Parse("ttft_p99=197ms")
	if v := s2.Judge(levelOf(200, 0, 0.01), DefaultMaxErrorFraction); v.Pass || v.Bounds[0].Pass {
		t.Errorf("197 ms bound passed: %+v", v)
	}
	if v := s.Judge(levelOf(99, 0, 0.01), DefaultMaxErrorFraction); v.Reliable() {
		t.Errorf("p99 of 99 requests called reliable: %+v", v)
	}
	if v := s.Judge(levelOf(200, 3, 0.01), DefaultMaxErrorFraction); v.Pass || v.Sustained || v.Errors != 3 {
		t.Errorf("3 of 203 failed, passed: %+v", v)
	}
	if v := s.Judge(levelOf(200, 2, 0.01), DefaultMaxErrorFraction); !v.Pass {
		t.Errorf("2 of 202 failed (< 1 %%), failed: %+v", v)
	}
	l := levelOf(200, 0, 0.01)
	l.Complete = false
	if v := s.Judge(l, DefaultMaxErrorFraction); v.Pass || v.Sustained {
		t.Errorf("incomplete level passed: %+v", v)
	}
	if v := s.Judge(Level{Complete: true}, DefaultMaxErrorFraction); v.Pass || v.Known {
		t.Errorf("empty level: %+v", v)
	}
	// Per request: its own values; ITL at the bound's percentile of its gaps.
	if !s.Meets(l.Requests[0]) || s.Meets(Request{OK: true, TTFTS: 0.001, TPOTS: 0.02}) || s.Meets(Request{TTFTS: 0.001, TPOTS: 0.001}) {
		t.Error("Meets: wrong verdicts")
	}
	itl, _ := Parse("itl_p50=5ms")
	if !itl.Meets(Request{OK: true, ITLS: []float64{0.001, 0.002, 0.5}}) || itl.Meets(Request{OK: true, ITLS: []float64{0.5, 0.5, 0.001}}) ||
		!itl.Meets(Request{OK: true}) {
		t.Error("Meets: wrong ITL verdicts")
	}
}
