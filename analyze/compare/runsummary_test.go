package compare

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/rundir"
)

// copyRuns copies the runs under root to a temporary directory (a test
// writes summaries into them) and returns the copy's runs.
func copyRuns(t *testing.T, root string) []rundir.Dir {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "runs")
	if err := os.CopyFS(dst, os.DirFS(root)); err != nil {
		t.Fatal(err)
	}
	return localDirs(t, dst)
}

// writeSummaries writes every run's own summary, as a sweep does when the
// run closes, and returns the runs that got one.
func writeSummaries(t *testing.T, dirs []rundir.Dir) []rundir.Dir {
	t.Helper()
	var with []rundir.Dir
	for _, d := range dirs {
		ok, err := WriteRunSummary(d.Name, analyze.Default())
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			with = append(with, d)
		}
	}
	return with
}

// A comparison read from the runs' own summaries is the comparison of the
// full path, byte for byte (comparison.json), on recorded runs (the three
// test-engine sweeps and the bundled examples: sweeps, probes, a probe-only
// run) and on a replayed archive, with and without an SLO; and the
// summaries are really what serves it.
func TestRunSummaryMatchesFullPath(t *testing.T) {
	archive := t.TempDir()
	replayArchive(t, archive, 8)
	recordedRoot := filepath.Dir(recorded[0])
	for _, tc := range []struct {
		name    string
		dirs    []rundir.Dir
		groupBy string
	}{
		{"recorded test-engine sweeps", copyRuns(t, recordedRoot), "dir"},
		{"example runs", copyRuns(t, filepath.Join("..", "..", "examples", "runs")), "dir"},
		{"replayed archive", localDirs(t, archive), "engine.version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := opts()
			o.GroupBy = tc.groupBy
			withSLO := o
			slo, err := analyze.ParseSLO("ttft_p99=2s")
			if err != nil {
				t.Fatal(err)
			}
			withSLO.Settings.SLO = slo
			full, fullSLO := comparisonJSON(t, tc.dirs, o), comparisonJSON(t, tc.dirs, withSLO)
			with := writeSummaries(t, tc.dirs)
			complete := 0
			for _, d := range tc.dirs {
				if m, err := rundir.ReadManifest(d.Name); err == nil && m.Complete {
					complete++
				}
			}
			if len(with) != complete || complete < len(tc.dirs)-2 {
				t.Fatalf("%d summaries written for %d complete runs of %d", len(with), complete, len(tc.dirs))
			}
			if got := comparisonJSON(t, tc.dirs, o); got != full {
				t.Fatalf("from the summaries the comparison differs:\n%s\nwant\n%s", got, full)
			}
			// Made without an SLO, the summaries do not serve one.
			if got := comparisonJSON(t, tc.dirs, withSLO); got != fullSLO {
				t.Fatalf("with an SLO the comparison differs:\n%s\nwant\n%s", got, fullSLO)
			}
			// They serve it: with every table gone, the comparison stands.
			for _, d := range with {
				for _, table := range rundir.AllTables {
					if err := os.RemoveAll(filepath.Join(d.Name, table)); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.Remove(filepath.Join(d.Name, rundir.ServerLogFile)); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
			}
			if got := comparisonJSON(t, tc.dirs, o); got != full {
				t.Fatalf("without the tables, from the summaries, the comparison differs")
			}
		})
	}
}

// A summary is trusted only for the manifest it was made from, and a run
// moved elsewhere keeps it (its name is the new one).
func TestRunSummaryFollowsTheManifest(t *testing.T) {
	archive := t.TempDir()
	replayArchive(t, archive, 3)
	dirs := localDirs(t, archive)
	if with := writeSummaries(t, dirs); len(with) != 3 {
		t.Fatalf("%d summaries for 3 runs", len(with))
	}
	moved := filepath.Join(t.TempDir(), "moved")
	if err := os.Rename(archive, moved); err != nil {
		t.Fatal(err)
	}
	dirs = localDirs(t, moved)
	o := opts()
	victim := dirs[1].Name
	set, err := settingsJSON(perRunSettings(o))
	if err != nil {
		t.Fatal(err)
	}
	_, m, sum, err := readRun(dirs[1], true, set, true)
	if err != nil {
		t.Fatal(err)
	}
	if sum == nil || sum.run(dirs[1], m).Dir != victim {
		t.Fatalf("the moved run's summary: %v, want one that holds, for %q", sum != nil, victim)
	}
	m.Tags = append(m.Tags, "edited=yes")
	if err := rundir.WriteManifest(victim, m); err != nil {
		t.Fatal(err)
	}
	// The edited run is analysed again: without its requests, it has no
	// numbers and is left out, where its stale summary would have had them.
	if err := os.RemoveAll(filepath.Join(victim, rundir.TableRequests)); err != nil {
		t.Fatal(err)
	}
	c, err := CompareDirs(context.Background(), dirs, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.LeftOut) != 1 || c.LeftOut[0].Dir != victim || len(c.Runs) != 2 {
		t.Fatalf("the edited run should be analysed again and left out: %d runs, left out %+v", len(c.Runs), c.LeftOut)
	}
	// A damaged summary is ignored, never an error.
	if err := os.WriteFile(filepath.Join(dirs[0].Name, rundir.SummaryFile), []byte("not a summary"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := CompareDirs(context.Background(), dirs, nil, o); err != nil {
		t.Fatal(err)
	}
}

// An index read from the runs' summaries holds the rows of one made
// without them.
func TestIndexWithRunSummariesMatches(t *testing.T) {
	archive := t.TempDir()
	replayArchive(t, archive, 6)
	dirs := localDirs(t, archive)
	set := opts().Settings
	plain, own := LocalDataset(t.TempDir()), LocalDataset(t.TempDir())
	if _, err := Index(context.Background(), dirs, plain, set); err != nil {
		t.Fatal(err)
	}
	writeSummaries(t, dirs)
	for _, d := range dirs {
		// Proof that the summaries serve it: the metrics are not read.
		if err := os.RemoveAll(filepath.Join(d.Name, rundir.TableServerMetrics)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Index(context.Background(), dirs, own, set); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{DatasetRuns, DatasetLevelSummary, DatasetLevels} {
		if got, want := tableJSON(t, own, table), tableJSON(t, plain, table); got != want {
			t.Fatalf("index from the summaries, table %s:\n%s\nwant\n%s", table, got, want)
		}
	}
}
