// Package sweep is headroom's sweep: a workload (levels of rising
// concurrency or Poisson arrival rates; prompts and lengths seeded by level
// and sequence number) that it hands to the load generator
// (collect/loadgen), and the session around it that Record runs: the
// server process (--server-cmd), the log follower (--server-log), GPU
// telemetry, the /metrics scraper, the run directory and its manifest, and
// --resume.
//
// Use it without the CLI:
//
//	s, err := sweep.New("http://127.0.0.1:8000",
//		sweep.WithLevels(1, 2, 4, 8),
//		sweep.WithRequestsPerLevel(32),
//		sweep.WithOutputTokens(sweep.Fixed(128)))
//	run, err := s.Record(ctx, "runs/my-sweep") // a run directory (docs/run-format.md)
//
// or s.Run(ctx, recorder) to receive the rows yourself. A workload of its
// own (a trace, conversations) uses collect/loadgen directly with a Source;
// the session parts are in session.go.
//
// Every string the sweep writes or prints goes through one redaction pass
// (server.Secrets) fed by every secret it knows.
package sweep
