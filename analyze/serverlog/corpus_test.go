package serverlog

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/headroom-llm/headroom/internal/labels"
)

// summaryValue gives the value of a label key that the Summary carries;
// ok is false for keys it does not (the wall, checked by the verdict's
// own test).
func summaryValue(s *Summary, key string) (string, bool) {
	switch key {
	case "engine":
		return string(s.Engine), true
	case "gen":
		return s.Generation, true
	case "stats":
		return strconv.Itoa(s.StatsLines), true
	case "preempt":
		return strconv.Itoa(s.Preemptions), true
	case "running_max":
		return strconv.Itoa(s.RunningMax), true
	case "waiting_max":
		return strconv.Itoa(s.WaitingMax), true
	case "kv_max":
		return strconv.FormatFloat(s.KVUsageMax, 'f', -1, 64), true
	case "crash":
		return s.Crash, true
	case "slots_launched":
		return strconv.Itoa(s.SlotLaunches), true
	case "kv_full":
		return strconv.Itoa(s.KVFull), true
	case "kv_evict":
		return strconv.Itoa(s.KVEvictions), true
	case "timeouts":
		return strconv.Itoa(s.Errors[ProblemTimeout]), true
	case "version":
		return s.Version, true
	case "prompt_cache":
		return strconv.Itoa(s.Warnings[ProblemPromptCache]), true
	case "aborts":
		return strconv.Itoa(s.Errors[ProblemAbort]), true
	}
	return "", false
}

func sameValue(key, got, want string) bool {
	if key == "kv_max" {
		g, err1 := strconv.ParseFloat(got, 64)
		w, err2 := strconv.ParseFloat(want, 64)
		return err1 == nil && err2 == nil && math.Abs(g-w) < 1e-9
	}
	return got == want
}

// TestCorpusCounts checks every labelled fixture's key counts: engine,
// generation, stats records, preemptions, maxima, the crash class.
func TestCorpusCounts(t *testing.T) {
	corpus, err := labels.Read(filepath.Join(fixtureDir, "labels.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var bad []string
	for _, l := range corpus {
		seen[l.File] = true
		f, err := os.Open(filepath.Join(fixtureDir, l.File))
		if err != nil {
			t.Fatal(err)
		}
		sum, err := ScanSummary(f, Options{File: l.File})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for k, want := range l.Want {
			got, ok := summaryValue(&sum, k)
			if !ok {
				continue
			}
			if !sameValue(k, got, want) {
				bad = append(bad, fmt.Sprintf("%s: %s = %q, want %q", l.File, k, got, want))
			}
		}
	}
	for _, path := range fixtures(t) {
		if !seen[filepath.Base(path)] {
			bad = append(bad, filepath.Base(path)+": no label in labels.tsv")
		}
	}
	for _, b := range bad {
		t.Error(b)
	}
	t.Logf("%d labelled fixtures, %d mismatching values", len(corpus), len(bad))
}
