// Package sqlcheck holds tests that read run directories with DuckDB, the
// way users query them without headroom. It has no non-test code; it is a
// package of its own so that only these tests link DuckDB (cgo).
package sqlcheck
