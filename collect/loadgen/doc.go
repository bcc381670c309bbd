// Package loadgen is headroom's load generator, as a small library (in the
// manner of vegeta's attacker): it streams requests to an OpenAI-compatible
// server (/v1/completions or /v1/chat/completions) level by level and hands
// every request, with every streamed chunk and the time it was read, to a
// Sink. It knows nothing of run directories, server processes, logs,
// telemetry or signals: collect/sweep orchestrates those around it.
//
// A caller provides three things:
//   - a plan: []Level, each closed loop (Concurrency streams, each sending
//     its next request when the last ends) or open loop (a Schedule of
//     intended send times, Poisson or a trace's offsets, with at most
//     Concurrency requests in flight);
//   - a Source: the prompt, the lengths and any extra body fields of each
//     request, decided from (level, sequence number) when it is sent;
//   - a Sink: receives each request's row and token rows, the client's own
//     CPU and send-lag samples, and each level's row.
//
// For example:
//
//	g, err := loadgen.New(loadgen.DefaultConfig("http://127.0.0.1:8000/v1/completions"))
//	plan := []loadgen.Level{{Index: 0, Concurrency: 4, Requests: 32}}
//	res, err := g.Run(ctx, plan, src, sink)
//
// Run runs a fixed plan; RunLevel runs one level, for a caller that picks
// the next level from the last one's row (a search for the rate that meets
// an SLO).
//
// Timing: every timestamp is one wall-clock reading taken when the
// generator's Clock starts plus Go's monotonic clock, so differences are
// exact even if the system clock steps. A chunk's time is taken when the
// Read that completed its line returned. One goroutine reads each stream;
// chunks are decoded by a small allocation-free JSON walker that extracts
// only the fields needed (chunk.go). docs/sweep.md has the definitions
// (TTFT, ITL, TPOT) and the caveats.
package loadgen
