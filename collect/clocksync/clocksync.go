// Package clocksync measures a host's clock against a reference that every
// host of a sweep shares, so that the times recorded on several hosts can
// be put on one time line (headroom merge).
//
// The reference is the server under test: every shard of a sweep reaches it
// by construction, whatever the network between the shards, with no
// privileges and no coordinator. Its HTTP Date header has a resolution of
// one second, but the moment the header's second changes can be found to
// within a round trip: the request before the change and the request after
// it bracket that moment on the local clock. ServerDate finds one change
// coarsely (a request every 25 ms), then waits for the next one and
// brackets it with back-to-back requests.
//
// The kernel's NTP state is read beside it (adjtimex, Linux): where every
// host's clock is synchronized to UTC within a bound, UTC is the better
// reference (a server behind a load balancer is several clocks).
package clocksync

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// Defaults of a measurement.
const (
	coarseGap  = 25 * time.Millisecond // between the requests looking for a change
	coarseSpan = 1500 * time.Millisecond
	fineLead   = 30 * time.Millisecond // how early the back-to-back requests start
	fineSpan   = 150 * time.Millisecond
	fineTries  = 3                    // edges tried for a tight bracket
	fineGood   = 2 * time.Millisecond // a bracket this tight ends the search
)

// reading is one request: when it was sent and its answer received on the
// local clock (ns), and the second its Date header named.
type reading struct {
	sendNS, recvNS int64
	date           int64 // Unix seconds
}

// ServerDate measures the local clock (now, Unix ns on the run's time base)
// against the Date header of the answers to GET url. It takes two to four
// seconds and a few hundred requests (back to back only around the
// changes). A server that sends no Date header, or that
// cannot be reached, gives Known false and the reason.
func ServerDate(ctx context.Context, client *http.Client, url string, header http.Header, now func() int64) rundir.ClockOffset {
	out := rundir.ClockOffset{Reference: rundir.ClockServerDate, NTP: KernelNTP()}
	var n int
	read := func() (reading, error) {
		n++
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return reading{}, err
		}
		for k, v := range header {
			req.Header[k] = v
		}
		send := now()
		resp, err := client.Do(req)
		recv := now()
		if err != nil {
			return reading{}, err
		}
		resp.Body.Close()
		d := resp.Header.Get("Date")
		if d == "" {
			return reading{}, fmt.Errorf("%s sends no Date header", url)
		}
		t, err := http.ParseTime(d)
		if err != nil {
			return reading{}, fmt.Errorf("%s sends an unreadable Date header %q", url, d)
		}
		return reading{send, recv, t.Unix()}, nil
	}
	edge, halfNS, err := findEdge(ctx, read, now)
	out.Samples = n
	if err != nil {
		out.Error = err.Error()
		return out
	}
	out.Known = true
	out.OffsetS = float64(edge) / 1e9
	out.UncertaintyS = float64(halfNS) / 1e9
	out.MeasuredAt = time.Unix(0, now()).UTC()
	return out
}

// findEdge returns the offset (local − reference, ns) and its half-width
// from the moment a Date second changes. read makes one request.
func findEdge(ctx context.Context, read func() (reading, error), now func() int64) (offsetNS, halfNS int64, err error) {
	prev, err := read()
	if err != nil {
		return 0, 0, err
	}
	deadline := now() + int64(coarseSpan)
	var coarse, coarseHalf int64
	found := false
	for !found {
		if now() > deadline {
			return 0, 0, fmt.Errorf("the server's Date header did not change within %v", coarseSpan)
		}
		if !sleep(ctx, coarseGap) {
			return 0, 0, ctx.Err()
		}
		cur, err := read()
		if err != nil {
			return 0, 0, err
		}
		if cur.date == prev.date+1 {
			coarse, coarseHalf = bracket(prev, cur)
			found = true
		}
		prev = cur
	}
	// The next change is one second after the one found: request back to
	// back around it for a bracket of about one round trip. A busy host may
	// wake too late for it (the change already passed): then the next one,
	// starting earlier, up to fineTries times.
	best, bestHalf := coarse, coarseHalf
	lead := max(int64(fineLead), 2*coarseHalf)
	edgeSec := prev.date + 1
	for range fineTries {
		nextEdge := best + edgeSec*int64(time.Second)
		if !sleep(ctx, time.Duration(nextEdge-lead-now())) {
			return 0, 0, ctx.Err()
		}
		off, half, ok := fineEdge(read, now, nextEdge+lead+int64(fineSpan))
		if ok && half < bestHalf {
			best, bestHalf = off, half
		}
		if bestHalf <= int64(fineGood) {
			break
		}
		lead *= 2
		edgeSec = (now()-best)/int64(time.Second) + 1
	}
	return best, bestHalf, nil
}

// fineEdge requests back to back until the Date second changes or stop
// (local ns) passes, and returns the bracket of the change.
func fineEdge(read func() (reading, error), now func() int64, stop int64) (offsetNS, halfNS int64, ok bool) {
	prev, err := read()
	if err != nil {
		return 0, 0, false
	}
	for now() < stop {
		cur, err := read()
		if err != nil {
			return 0, 0, false
		}
		if cur.date == prev.date+1 {
			off, half := bracket(prev, cur)
			return off, half, true
		}
		if cur.date != prev.date {
			return 0, 0, false
		}
		prev = cur
	}
	return 0, 0, false
}

// bracket is the offset (local − reference) and half-width from two
// readings between which the server's second changed: its clock passed
// b.date's second after a was sent and before b was received.
func bracket(a, b reading) (offsetNS, halfNS int64) {
	mid := (a.sendNS + b.recvNS) / 2
	return mid - b.date*int64(time.Second), (b.recvNS - a.sendNS + 1) / 2
}

// sleep waits d (nothing when d ≤ 0); false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
