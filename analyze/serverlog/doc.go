// Package serverlog turns the log of an LLM serving engine into typed,
// timestamped events: periodic scheduler statistics, preemptions and
// retractions, start-up facts, errors, and llama.cpp slot activity.
//
// It reads vLLM (V0 and V1), SGLang, llama.cpp's llama-server and the
// project's own test engine (node-llama-cpp), through the wrappers that
// deployments add around lines: Docker/Kubernetes JSON lines, kubectl
// --timestamps and CRI prefixes, journald short and ISO output, docker
// compose service prefixes and ANSI colour codes.
//
// The parser is a streaming scanner in the style of
// golang.org/x/perf/benchfmt:
//
//	s := serverlog.NewScanner(r, serverlog.Options{})
//	for s.Scan() {
//		ev := s.Event()
//		...
//	}
//	if err := s.Err(); err != nil { ... }
//
// Lines it does not understand are counted, never fatal; a line that looks
// like a known record but cannot be read is kept as a *SyntaxError; only an
// error from the reader stops the scan. Memory is bounded by the longest
// line (Options.MaxLineBytes), not by the size of the log.
//
// See docs/serverlogs.md for what is extracted per engine.
package serverlog
