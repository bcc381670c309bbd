// Package workers runs an indexed piece of work on a bounded number of
// goroutines.
package workers

import (
	"context"
	"sync"
)

// Each calls f(0..n-1) on at most workers goroutines and returns the first
// error by index, or the context's once it ends (no new index starts then).
func Each(ctx context.Context, workers, n int, f func(int) error) error {
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, max(n, 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = f(i)
			}
		}()
	}
feed:
	for i := 0; i < n; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
