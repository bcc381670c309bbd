package analyze

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/analyze/serverlog"
	"github.com/headroom-llm/headroom/rundir"
)

// writeLogRun makes a run directory holding a vLLM log and a clock that
// received every line 1.5 s (line 1) and 2.5 s (line 2) after its stamp.
func writeLogRun(t *testing.T, clock []rundir.ServerLogLineRow) string {
	t.Helper()
	dir := t.TempDir()
	log, err := os.ReadFile("../testdata/serverlogs/vllm-0.6.3-swap-pending.log")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, rundir.ServerLogFile), log, 0o644); err != nil {
		t.Fatal(err)
	}
	m := &rundir.Manifest{FormatVersion: rundir.FormatVersion, Kinds: []string{rundir.KindSweep},
		StartTime: time.Date(2024, time.October, 28, 11, 0, 0, 0, time.UTC), Engine: &rundir.Engine{Name: "vllm"}}
	if err := rundir.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	if err := rundir.WriteTable(dir, rundir.TableServerLogLines, clock); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestInspectLogRunDir(t *testing.T) {
	at := func(sec int, after time.Duration) int64 {
		return time.Date(2024, 10, 28, 11, 16, sec, 0, time.UTC).Add(after).UnixNano()
	}
	dir := writeLogRun(t, []rundir.ServerLogLineRow{{Line: 1, RecvNS: at(34, 1500*time.Millisecond)}, {Line: 2, RecvNS: at(39, 2500*time.Millisecond)}})
	li, err := InspectLog(dir, serverlog.Options{Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	// The engine and the year come from the run, the clock from its table;
	// the median of two offsets is their mean.
	if li.Options.Engine != serverlog.EngineVLLM || li.Summary.First.Year() != 2024 || li.ClockLines != 2 || li.ClockOffset != 2*time.Second {
		t.Errorf("engine %q, first %v, clock %v over %d lines", li.Options.Engine, li.Summary.First, li.ClockOffset, li.ClockLines)
	}
	if li.File != filepath.Join(dir, rundir.ServerLogFile) {
		t.Errorf("file %s", li.File)
	}
}

func TestInspectLogErrors(t *testing.T) {
	dir := writeLogRun(t, []rundir.ServerLogLineRow{{Line: 1 << 40, RecvNS: 1}})
	if _, err := InspectLog(dir, serverlog.Options{}); err == nil || !strings.Contains(err.Error(), rundir.TableServerLogLines) {
		t.Errorf("corrupt clock: %v", err)
	}
	notes := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(notes, []byte("hello\nworld\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := InspectLog(notes, serverlog.Options{}); !errors.Is(err, ErrNoLogEvents) || !strings.Contains(err.Error(), notes) {
		t.Errorf("not a log: %v", err)
	}
}
