// Package sweep is headroom's load generator: it streams requests to an
// OpenAI-compatible server (/v1/completions or /v1/chat/completions) at
// rising concurrency (closed loop) or Poisson arrival rates (open loop) and
// records every request and every streamed chunk with the time it was read.
//
// Use it without the CLI:
//
//	s, err := sweep.New("http://127.0.0.1:8000",
//		sweep.WithLevels(1, 2, 4, 8),
//		sweep.WithRequestsPerLevel(32),
//		sweep.WithOutputTokens(sweep.Fixed(128)))
//	run, err := s.Record(ctx, "runs/my-sweep") // a run directory (docs/run-format.md)
//
// or s.Run(ctx, recorder) to receive the rows yourself.
//
// Timing: every timestamp is one wall-clock reading taken when the sweep
// starts plus Go's monotonic clock, so differences are exact even if the
// system clock steps. A chunk's time is taken when the Read that completed
// its line returned. One goroutine reads each stream; chunks are decoded by
// a small allocation-free JSON walker that extracts only the fields a sweep
// needs (chunk.go). docs/sweep.md has the definitions (TTFT, ITL, TPOT) and
// the caveats.
package sweep
