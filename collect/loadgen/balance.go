package loadgen

import (
	"fmt"
	"sync"
)

// Balance is how a generator with several targets (replicas of one model,
// Config.URLs) picks the target of each request.
type Balance string

// Balances.
const (
	// LeastOutstanding sends each request to the target with the fewest
	// requests in flight, ties going round the targets in turn (what
	// Envoy's and nginx's least-request balancers do): a slow replica gets
	// fewer requests, as behind a real load balancer.
	LeastOutstanding Balance = "least-outstanding"
	// RoundRobin sends request n to target n mod N, whatever is in flight.
	RoundRobin Balance = "round-robin"
)

// ParseBalance reads a Balance by name ("" is LeastOutstanding).
func ParseBalance(s string) (Balance, error) {
	switch Balance(s) {
	case "", LeastOutstanding:
		return LeastOutstanding, nil
	case RoundRobin:
		return RoundRobin, nil
	}
	return "", fmt.Errorf("balance %q: want %q or %q", s, LeastOutstanding, RoundRobin)
}

// balancer picks targets and counts what each has in flight.
type balancer struct {
	mode     Balance
	mu       sync.Mutex
	inflight []int
	next     int // where the next round starts
}

func newBalancer(mode Balance, n int) *balancer {
	if mode == "" {
		mode = LeastOutstanding
	}
	return &balancer{mode: mode, inflight: make([]int, max(n, 1))}
}

// acquire picks the target of a request about to be sent; release must
// follow when it ends.
func (b *balancer) acquire() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.inflight)
	best := b.next % n
	if b.mode == LeastOutstanding {
		for k := 1; k < n; k++ {
			if i := (b.next + k) % n; b.inflight[i] < b.inflight[best] {
				best = i
			}
		}
	}
	b.next = (best + 1) % n
	b.inflight[best]++
	return best
}

func (b *balancer) release(i int) {
	b.mu.Lock()
	b.inflight[i]--
	b.mu.Unlock()
}
