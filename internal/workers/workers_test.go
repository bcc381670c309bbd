package workers

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
)

// Every index runs once, on no more goroutines than asked, and the error
// returned is the lowest index's, whichever finished first.
func TestEach(t *testing.T) {
	const n, limit = 200, 3
	var calls [n]atomic.Int32
	var running, most atomic.Int32
	err := Each(context.Background(), limit, n, func(i int) error {
		now := running.Add(1)
		defer running.Add(-1)
		for {
			m := most.Load()
			if now <= m || most.CompareAndSwap(m, now) {
				break
			}
		}
		calls[i].Add(1)
		if i == 150 || i == 40 {
			return fmt.Errorf("index %d", i)
		}
		return nil
	})
	if err == nil || err.Error() != "index 40" {
		t.Errorf("error %v, want index 40's", err)
	}
	for i := range calls {
		if c := calls[i].Load(); c != 1 {
			t.Errorf("index %d ran %d times", i, c)
		}
	}
	if m := most.Load(); m > limit || m < 1 {
		t.Errorf("%d at once, limit %d", m, limit)
	}
	if err := Each(context.Background(), 4, 0, func(int) error { return errors.New("called") }); err != nil {
		t.Errorf("no work: %v", err)
	}
}

// Once the context ends no new index starts, and its error is returned.
func TestEachCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var started atomic.Int32
	err := Each(ctx, 1, 100, func(i int) error {
		started.Add(1)
		if i == 4 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if s := started.Load(); s > 6 {
		t.Errorf("%d indexes started after the cancel at index 4", s)
	}
}
