// Package server deals with the inference server around a sweep: it starts
// one as a child process (--server-cmd) or follows its log file
// (--server-log), stores every log line with the time it arrived, waits for
// the server to answer, tells which engine and version it is, and records
// its command line with secrets redacted.
package server
