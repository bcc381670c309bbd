package serverlog

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"time"
)

const fixtureDir = "../../testdata/serverlogs"

// scanFile scans a fixture and returns every event, keyed by line.
func scanFile(t *testing.T, name string, opts Options) (map[int64]Event, *Scanner) {
	t.Helper()
	f, err := os.Open(filepath.Join(fixtureDir, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	opts.File = name
	s := NewScanner(f, opts)
	evs := map[int64]Event{}
	for s.Scan() {
		ev := *s.Event()
		evs[ev.Line] = ev
	}
	if err := s.Err(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return evs, s
}

// fixtures lists every fixture file, so that tests over all of them (fuzz
// seeds, no-bad-lines) pick up new ones.
func fixtures(t testing.TB) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(fixtureDir, "*.log"))
	if err != nil || len(m) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	sort.Strings(m)
	return m
}

func wantEvent(t *testing.T, evs map[int64]Event, line int64, kind Kind) Event {
	t.Helper()
	ev, ok := evs[line]
	if !ok {
		t.Fatalf("line %d: no event (want %s)", line, kind)
	}
	if ev.Kind != kind {
		t.Fatalf("line %d: kind %s, want %s (%+v)", line, ev.Kind, kind, ev)
	}
	return ev
}

func checkStats(t *testing.T, evs map[int64]Event, line int64, want Stats) {
	t.Helper()
	ev := wantEvent(t, evs, line, KindStats)
	if !reflect.DeepEqual(ev.Stats, want) {
		t.Errorf("line %d stats:\n got %+v\nwant %+v", line, ev.Stats, want)
	}
}

func checkFacts(t *testing.T, evs map[int64]Event, line int64, want map[string]string) {
	t.Helper()
	ev := wantEvent(t, evs, line, KindConfig)
	got := map[string]string{}
	for _, f := range ev.Facts {
		if len(f.Key) > 4 && f.Key[:4] == "arg." {
			continue
		}
		got[f.Key] = f.Value
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("line %d facts:\n got %v\nwant %v", line, got, want)
	}
}

func nonDefaultArgs(ev Event) map[string]string {
	m := map[string]string{}
	for _, f := range ev.Facts {
		if f.NonDefault {
			m[f.Key] = f.Value
		}
	}
	return m
}

func checkTime(t *testing.T, ev Event, want time.Time, q TimeQuality) {
	t.Helper()
	if !ev.Time.Equal(want) || ev.TimeQuality != q {
		t.Errorf("line %d time %s (%s), want %s (%s)", ev.Line, ev.Time, ev.TimeQuality, want, q)
	}
}

func checkCounts(t *testing.T, s *Scanner, want Counts) {
	t.Helper()
	if got := s.Counts(); got != want {
		t.Errorf("counts:\n got %+v\nwant %+v", got, want)
	}
}

func utc(y int, mon time.Month, d, h, m, s, ns int) time.Time {
	return time.Date(y, mon, d, h, m, s, ns, time.UTC)
}
