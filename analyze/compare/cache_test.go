package compare

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/rundir"
)

func localDirs(tb testing.TB, root string) []rundir.Dir {
	tb.Helper()
	dirs, err := rundir.FindRuns(root)
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]rundir.Dir, len(dirs))
	for i, d := range dirs {
		out[i] = rundir.LocalDir(d)
	}
	return out
}

func comparisonJSON(tb testing.TB, dirs []rundir.Dir, o Options) string {
	tb.Helper()
	c, err := CompareDirs(context.Background(), dirs, nil, o)
	if err != nil {
		tb.Fatal(err)
	}
	data, err := json.Marshal(c)
	if err != nil {
		tb.Fatal(err)
	}
	return string(data)
}

func cacheEntries(tb testing.TB, cache SummaryCache) int {
	tb.Helper()
	n := 0
	err := filepath.WalkDir(string(cache), func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".gob") {
			n++
		}
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// A comparison served from the summary cache is the comparison of a full
// analysis, byte for byte (comparison.json), on the replayed archive and on
// the bundled example runs (sweeps, probes, a probe-only run); and the
// cache is really what serves it.
func TestSummaryCacheMatchesFullAnalysis(t *testing.T) {
	archive := t.TempDir()
	replayArchive(t, archive, 12)
	for _, tc := range []struct {
		name, root, groupBy string
	}{
		{"replayed archive", archive, "engine.version"},
		{"example runs", filepath.Join("..", "..", "examples", "runs"), "dir"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dirs := localDirs(t, tc.root)
			o := opts()
			o.GroupBy = tc.groupBy
			full := comparisonJSON(t, dirs, o)
			o.Cache = SummaryCache(t.TempDir())
			if cold := comparisonJSON(t, dirs, o); cold != full {
				t.Fatalf("filling the cache changed the comparison:\n%s\nwant\n%s", cold, full)
			}
			complete := 0
			for _, d := range dirs {
				if m, err := rundir.ReadManifest(d.Name); err == nil && m.Complete {
					complete++
				}
			}
			if n := cacheEntries(t, o.Cache); n != complete || complete < len(dirs)-2 {
				t.Fatalf("%d cache entries for %d complete runs of %d", n, complete, len(dirs))
			}
			if warm := comparisonJSON(t, dirs, o); warm != full {
				t.Fatalf("the cached comparison differs:\n%s\nwant\n%s", warm, full)
			}
			// Other settings are another key: an SLO's goodput is computed,
			// not served from the entries made without one.
			withSLO := opts()
			withSLO.GroupBy = tc.groupBy
			slo, err := analyze.ParseSLO("ttft_p99=2s")
			if err != nil {
				t.Fatal(err)
			}
			withSLO.Settings.SLO = slo
			fullSLO := comparisonJSON(t, dirs, withSLO)
			withSLO.Cache = o.Cache
			if got := comparisonJSON(t, dirs, withSLO); got != fullSLO {
				t.Fatalf("with an SLO, the cached comparison differs:\n%s\nwant\n%s", got, fullSLO)
			}
			if n := cacheEntries(t, o.Cache); n != 2*complete {
				t.Fatalf("%d cache entries after two settings of %d complete runs", n, complete)
			}
		})
	}
}

// A hit reads no table: with a run's requests gone, the cached comparison
// still stands (the cache keys on the manifest, as documented), while an
// edited manifest is a miss.
func TestSummaryCacheKeysOnTheManifest(t *testing.T) {
	archive := t.TempDir()
	replayArchive(t, archive, 3)
	dirs := localDirs(t, archive)
	o := opts()
	o.Cache = SummaryCache(t.TempDir())
	full := comparisonJSON(t, dirs, o)
	victim := dirs[1].Name
	if err := os.RemoveAll(filepath.Join(victim, rundir.TableRequests)); err != nil {
		t.Fatal(err)
	}
	if got := comparisonJSON(t, dirs, o); got != full {
		t.Fatalf("a cache hit read the run's tables again")
	}
	m, err := rundir.ReadManifest(victim)
	if err != nil {
		t.Fatal(err)
	}
	m.Tags = append(m.Tags, "edited=yes")
	if err := rundir.WriteManifest(victim, m); err != nil {
		t.Fatal(err)
	}
	c, err := CompareDirs(context.Background(), dirs, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range c.Runs {
		if r.Dir == victim {
			t.Fatalf("an edited manifest was served from the cache: %+v", r.Sweep)
		}
	}
	if len(c.LeftOut) != 1 || c.LeftOut[0].Dir != victim {
		t.Fatalf("the run without requests, analysed again, should be left out: %+v", c.LeftOut)
	}
}

// Incomplete runs (interrupted, or still being written) are not cached.
func TestSummaryCacheSkipsIncompleteRuns(t *testing.T) {
	archive := t.TempDir()
	replayArchive(t, archive, 3)
	dirs := localDirs(t, archive)
	m, err := rundir.ReadManifest(dirs[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	m.Complete = false
	if err := rundir.WriteManifest(dirs[0].Name, m); err != nil {
		t.Fatal(err)
	}
	o := opts()
	o.Cache = SummaryCache(t.TempDir())
	comparisonJSON(t, dirs, o)
	if n := cacheEntries(t, o.Cache); n != 2 {
		t.Fatalf("%d cache entries, want the 2 complete runs", n)
	}
}

// An index made with the cache holds the rows of one made without it, and
// fills the cache for the next compare.
func TestIndexWithCacheMatches(t *testing.T) {
	archive := t.TempDir()
	replayArchive(t, archive, 6)
	dirs := localDirs(t, archive)
	set := opts().Settings
	cache := SummaryCache(t.TempDir())
	plain, cached := LocalDataset(t.TempDir()), LocalDataset(t.TempDir())
	if _, err := Index(context.Background(), dirs, plain, set); err != nil {
		t.Fatal(err)
	}
	// Twice with the cache: filled by the first index, served to the second.
	for i, st := range []LocalDataset{cached, LocalDataset(t.TempDir())} {
		if _, err := IndexWith(context.Background(), dirs, st, set, cache); err != nil {
			t.Fatal(err)
		}
		for _, table := range []string{DatasetRuns, DatasetLevelSummary, DatasetLevels} {
			if got, want := tableJSON(t, st, table), tableJSON(t, plain, table); got != want {
				t.Fatalf("index %d with the cache, table %s:\n%s\nwant\n%s", i, table, got, want)
			}
		}
	}
	if n := cacheEntries(t, cache); n != len(dirs) {
		t.Fatalf("%d cache entries after index, want %d", n, len(dirs))
	}
}

// tableJSON is a dataset table's rows (every part), sorted, as JSON lines.
func tableJSON(tb testing.TB, st LocalDataset, table string) string {
	tb.Helper()
	names, err := st.List(table)
	if err != nil {
		tb.Fatal(err)
	}
	var lines []string
	for _, n := range names {
		data, err := st.Read(n)
		if err != nil {
			tb.Fatal(err)
		}
		var rows []any
		switch table {
		case DatasetRuns:
			rows = decodeAll[DatasetRun](tb, data)
		case DatasetLevelSummary:
			rows = decodeAll[DatasetSummary](tb, data)
		case DatasetLevels:
			rows = decodeAll[DatasetLevel](tb, data)
		}
		for _, r := range rows {
			b, _ := json.Marshal(r)
			lines = append(lines, string(b))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

func decodeAll[T any](tb testing.TB, data []byte) []any {
	rows, err := rundir.DecodeParquet[T](data)
	if err != nil {
		tb.Fatal(err)
	}
	out := make([]any, len(rows))
	for i, r := range rows {
		out[i] = r
	}
	return out
}
