// Package telemetry samples what a sweep's server exposes besides its
// responses: Prometheus /metrics (every sample, long format, for
// server_metrics) and GPU state through a GPUSource (for gpu_telemetry).
// Both are optional and never fatal: a sweep against a server without
// /metrics or on a host without a GPU still records everything else.
package telemetry
