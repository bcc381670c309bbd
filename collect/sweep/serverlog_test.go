package sweep

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// --server-log pointing at a device or a pipe stops the sweep before it
// starts, with the reason, instead of following forever (and ignoring
// Ctrl-C).
func TestServerLogDeviceOrPipeRefused(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	f := newFakeServer(t, nil)
	for _, path := range []string{"/dev/zero", fifo} {
		s := mustNew(t, f.URL, WithServerLog(path), WithLevels(1), WithRequestsPerLevel(2), WithWarmup(0),
			WithPromptTokens(Fixed(20)), WithOutputTokens(Fixed(2)), WithNoGPU(), WithMetricsInterval(0))
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second) // Ctrl-C after 3 s
		done := make(chan error, 1)
		dir := filepath.Join(t.TempDir(), "run")
		go func() {
			_, err := s.Record(ctx, dir)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s: %v, want it refused", path, err)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("%s: the sweep still runs 12 s after its context ended", path)
		}
		cancel()
	}
}

// Following the server log runs on the client's cores: a log that keeps
// the follower busy during a level is named in the manifest's warnings,
// with the CPU it took.
func TestFollowerCPUInSelfCheck(t *testing.T) {
	f := newFakeServer(t, func(f *fakeServer) { f.tokenDelay = 10 * time.Millisecond })
	logFile := filepath.Join(t.TempDir(), "server.log")
	os.WriteFile(logFile, nil, 0o644)
	stop := make(chan struct{})
	go func() { // a server that logs hard: ~40 MB/s of short lines
		lf, _ := os.OpenFile(logFile, os.O_APPEND|os.O_WRONLY, 0)
		defer lf.Close()
		chunk := bytes.Repeat([]byte("INFO 11-30 12:00:00 [logger.py:1] a busy server line\n"), 8000)
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			lf.Write(chunk)
		}
	}()
	s := mustNew(t, f.URL, WithServerLog(logFile), WithLevels(2), WithRequestsPerLevel(20), WithWarmup(0),
		WithPromptTokens(Fixed(20)), WithOutputTokens(Fixed(20)), WithNoGPU(), WithMetricsInterval(0))
	_, run, _, _, err := recordRun(t, s, context.Background())
	close(stop)
	if err != nil {
		t.Fatal(err)
	}
	var found string
	for _, w := range run.Manifest.Warnings {
		if strings.Contains(w, "following the server log took") {
			found = w
		}
	}
	if found == "" {
		t.Fatalf("no warning about the follower's CPU: %q", run.Manifest.Warnings)
	}
	t.Log(found)
}
