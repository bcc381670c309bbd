package sweep

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// Two `sweep --resume` of one run at once took no lock, and neither did a
// resume of a sweep still recording (issue 21 item 11): both wrote the same
// tables. The second is now refused at once, before it reads the manifest
// or stops any server, and the first finishes as if alone.
func TestResumeWhileTheRunIsBeingRecorded(t *testing.T) {
	opts := []Option{WithLevels(1, 2), WithRequestsPerLevel(4), WithWarmup(0), WithPromptTokens(Fixed(20)), WithOutputTokens(Fixed(5)),
		WithNoGPU(), WithMetricsInterval(0)}
	f := newFakeServer(t, func(f *fakeServer) { f.tokenDelay = 5 * time.Millisecond })
	dir := filepath.Join(t.TempDir(), "run")
	inLevel := make(chan struct{})
	release := make(chan struct{})
	s := mustNew(t, f.URL, append(opts, WithProgress(func(p Progress) {
		if p.LevelIndex == 0 && p.Done == 1 {
			select {
			case <-inLevel:
			default:
				close(inLevel)
				<-release // hold the sweep mid-level while the resume is tried
			}
		}
	}))...)
	done := make(chan error, 1)
	go func() { _, err := s.Record(context.Background(), dir); done <- err }()
	<-inLevel

	m, err := rundir.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	ropts, err := ResumeOptions(m)
	if err != nil {
		t.Fatal(err)
	}
	_, err = mustNew(t, f.URL, append(ropts, WithNoGPU(), WithMetricsInterval(0))...).Resume(context.Background(), dir)
	close(release)
	if !errors.Is(err, rundir.ErrRunBusy) {
		t.Errorf("resume of a sweep still recording: %v, want %v", err, rundir.ErrRunBusy)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	run, err := rundir.Open(dir)
	if err != nil || !run.Manifest.Complete || len(run.Manifest.Resumed) != 0 {
		t.Fatalf("the recording sweep's run: %v %+v", err, run)
	}
	if reqs, _ := rundir.ReadTable[rundir.RequestRow](dir, rundir.TableRequests); len(reqs) != 8 {
		t.Errorf("%d requests, want 8", len(reqs))
	}

	// the lock goes with its holder
	unlock, err := rundir.Lock(dir)
	if err != nil {
		t.Fatalf("after the sweep ended: %v", err)
	}
	if _, err := rundir.Lock(dir); !errors.Is(err, rundir.ErrRunBusy) {
		t.Errorf("second lock: %v", err)
	}
	unlock()
}
