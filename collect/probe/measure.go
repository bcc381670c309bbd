package probe

import (
	"context"
	"fmt"
	"math"

	"github.com/headroom-llm/headroom/cuda"
)

// timing is the outcome of timing one operation.
type timing struct {
	callsPerRepeat int
	// perCallMS has one entry per repeat: the window's device time divided
	// by callsPerRepeat.
	perCallMS  []float64
	totalCalls int // every call made, warm-up and calibration included
}

// timeCalls measures call, an operation that only queues device work:
//
//  1. warm-up: warmupCalls untimed calls, then a wait for the device;
//  2. calibration: one event pair around a few calls estimates the time per
//     call and sets callsPerRepeat so that a window lasts about cfg.window;
//  3. repeats: cfg.repeats windows, each one pair of events around
//     callsPerRepeat back-to-back calls; no synchronisation inside a window.
func timeCalls(ctx context.Context, c *cuda.Context, timer *cuda.Timer, cfg *config, call func() error) (timing, error) {
	var t timing
	queue := func(n int) func() error {
		return func() error {
			for i := 0; i < n; i++ {
				if err := call(); err != nil {
					return err
				}
			}
			t.totalCalls += n
			return nil
		}
	}
	if err := queue(cfg.warmupCalls)(); err != nil {
		return t, err
	}
	if err := c.Synchronize(); err != nil {
		return t, err
	}
	const calibrationCalls = 3
	ms, err := timer.Time(queue(calibrationCalls))
	if err != nil {
		return t, err
	}
	perCall := ms / calibrationCalls
	windowMS := float64(cfg.window.Microseconds()) / 1e3
	calls := cfg.maxCalls
	if perCall > 0 {
		calls = int(math.Ceil(windowMS / perCall))
	}
	t.callsPerRepeat = max(1, min(calls, cfg.maxCalls))
	for r := 0; r < cfg.repeats; r++ {
		if err := ctx.Err(); err != nil {
			return t, err
		}
		ms, err := timer.Time(queue(t.callsPerRepeat))
		if err != nil {
			return t, err
		}
		if ms <= 0 {
			return t, fmt.Errorf("a window of %d calls timed at %v ms", t.callsPerRepeat, ms)
		}
		t.perCallMS = append(t.perCallMS, ms/float64(t.callsPerRepeat))
	}
	return t, nil
}
