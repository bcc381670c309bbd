package sweep

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/rundir"
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

// Following the server log runs on the client's cores: a level during
// which the follower took 10% of a core or more is named in the manifest's
// warnings, with the CPU it took; less is not. (collect/server
// TestFollowerCountsItsCPU checks the follower's measure.)
func TestFollowerCPUInSelfCheck(t *testing.T) {
	s := mustNew(t, "http://127.0.0.1:1")
	var cpu time.Duration
	ss := &session{s: s, followerCPUOf: func() time.Duration { return cpu }}
	level := func(i int32, wall time.Duration) rundir.LevelRow {
		return rundir.LevelRow{LevelIndex: i, StartNS: 1e9, EndNS: 1e9 + int64(wall)}
	}
	cpu = 50 * time.Millisecond // 5% of a core over 1 s
	ss.checkFollowerCPU(level(0, time.Second))
	cpu += 300 * time.Millisecond // 15% over 2 s
	ss.checkFollowerCPU(level(1, 2*time.Second))
	w := s.Warnings(nil)
	if len(w) != 1 || !strings.Contains(w[0], "took 0.30 s of CPU during level 1 (15% of one core)") {
		t.Errorf("warnings %q: want level 1's alone", w)
	}
}
