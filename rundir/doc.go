// Package rundir is the run directory format: the contract between the
// collectors (probe, sweep, imports) and the analyzer.
//
// A run directory holds manifest.json, one folder per table of Parquet part
// files (<table>/part-NNNNN.parquet), and for sweeps the raw server.log. Every
// part file is written to a temporary name and renamed into place, so a
// reader never sees half a file and a killed collector loses at most the
// rows it had not flushed yet. docs/run-format.md documents the format for
// people who read it without headroom (DuckDB, pandas, Polars).
//
// The package is the only one imported by both collect/... and analyze/...;
// it knows nothing about how rows are measured or what they mean.
package rundir

// FormatVersion is the version of the run directory format written by this
// package. Readers refuse runs with a newer major version than they know.
// Bump it when a change would make an older reader misread a run.
//
// Version 2 added run identity: manifest.json's run_id, a run_id column in
// every table part, and request ids that are unique across runs. Version 1
// runs still read (their id is derived, see derivedRunID).
const FormatVersion = 2
