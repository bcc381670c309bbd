package probe

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/cuda"
	"github.com/headroom-llm/headroom/internal/fakecuda"
	"github.com/headroom-llm/headroom/rundir"
)

func TestRecordWritesACompleteRun(t *testing.T) {
	f := fakecuda.Build(t)
	dir := filepath.Join(t.TempDir(), "run")
	run, res, err := fakeProber(t, f).Record(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if run == nil || res == nil || run.Dir != dir {
		t.Fatalf("run %v, result %v", run, res)
	}
	back, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.Check(); err != nil {
		t.Error(err)
	}
	m := back.Manifest
	if !m.Complete || m.Stopped != nil || !m.HasKind(rundir.KindProbe) || m.HeadroomVersion == "" || m.Probe == nil || m.Probe.KneeBatch != 16 {
		t.Errorf("manifest %+v", m)
	}
	// The host is described as a sweep's is: CPU model and memory included.
	if m.Host.OS == "" || m.Host.CPUs < 1 || (m.Host.Kernel != "" && m.Host.MemoryBytes <= 0) {
		t.Errorf("host %+v", m.Host)
	}
	if !m.StartTime.Equal(res.Started.UTC()) {
		t.Errorf("start %v, probe started %v", m.StartTime, res.Started)
	}
}

func TestRecordInterruptedSaysWhere(t *testing.T) {
	f := fakecuda.Build(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen int
	p := fakeProber(t, f, WithProgress(func(pr Progress) {
		seen++ // the caller's progress still arrives
		if pr.Phase == "gemm" && pr.Batch == 4 {
			cancel()
		}
	}))
	dir := filepath.Join(t.TempDir(), "run")
	run, _, err := p.Record(ctx, dir)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if run == nil || seen == 0 {
		t.Fatalf("run %v, %d progress calls", run, seen)
	}
	m, err := rundir.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	st := m.Stopped
	if m.Complete || st == nil || st.Reason != "interrupted" || !strings.Contains(st.Phase, "probe GPU 0 solo: GEMM B=4 (point ") {
		t.Errorf("complete %v, stopped %+v", m.Complete, st)
	}
}

func TestRecordWithoutDriverWritesNothing(t *testing.T) {
	p, err := New(WithLibraryPaths(cuda.LibraryPaths{Driver: t.TempDir() + "/libcuda.so.1"}))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	run, _, err := p.Record(context.Background(), dir)
	if !errors.Is(err, cuda.ErrLibraryNotFound) || run != nil {
		t.Errorf("run %v, error %v; want no run and ErrLibraryNotFound", run, err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s was created: %v", dir, err)
	}
}

func TestProgressWhere(t *testing.T) {
	for _, tt := range []struct {
		p    Progress
		want string
	}{
		{Progress{}, "probe (before the first point)"},
		{Progress{Ordinal: 1, Mode: ModeSolo, Phase: "gemm", Batch: 64, Step: 9, Steps: 23}, "probe GPU 1 solo: GEMM B=64 (point 9 of 23)"},
		{Progress{Mode: ModeConcurrent, Phase: "bandwidth", Method: MethodMemcpy, BufferBytes: 256 << 20, Step: 2, Steps: 23}, "probe GPU 0 concurrent: bandwidth memcpy_dtod 256 MiB (point 2 of 23)"},
	} {
		if got := tt.p.Where(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.p, got, tt.want)
		}
	}
}
