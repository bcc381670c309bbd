// Package servermetrics turns the Prometheus /metrics samples of an LLM
// serving engine into time series of the quantities headroom reasons
// about: running and waiting requests, KV cache usage (fraction 0..1),
// preemptions, token rates, and per-interval latency quantiles from
// histograms.
//
// Engines name the same quantity differently (vLLM V0 and V1, SGLang,
// llama.cpp, the project's test engine); the mapping is a data table,
// Engines, so that another engine is one more row.
//
// Input is long-format samples (Sample): the rows of the run directory's
// server_metrics table as the sweep's scraper records them with package
// promtext (which also reads a saved text dump of /metrics).
package servermetrics

import "github.com/headroom-llm/headroom/promtext"

// Sample is one scraped value in long format (time, name, labels, value),
// as promtext parses it and the server_metrics table stores it; a
// rundir.ServerMetricRow converts to it: Sample(row).
type Sample = promtext.Sample

// withoutLabel returns the canonical label string without one label, and
// that label's value.
func withoutLabel(labels, name string) (rest, value string) {
	if labels == "" {
		return "", ""
	}
	m, err := promtext.ParseLabels(labels)
	if err != nil {
		return labels, ""
	}
	value = m[name]
	delete(m, name)
	return promtext.CanonicalLabels(m), value
}
