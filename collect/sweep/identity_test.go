package sweep

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// Issue 18's first problem: no table carried a run identifier, and request
// ids were "level-seq", so joining two runs' requests matched every pair of
// equal ids. Two sweeps now give disjoint request ids, and every part of
// every table names its run in a run_id column.
func TestRunIdentityAcrossRuns(t *testing.T) {
	f := newFakeServer(t, func(f *fakeServer) { f.tokenDelay = time.Millisecond })
	ids := map[string]string{} // request id -> run id
	runIDs := map[string]bool{}
	for _, name := range []string{"a", "b"} {
		dir := filepath.Join(t.TempDir(), name)
		s := mustNew(t, f.URL, WithLevels(1, 2), WithRequestsPerLevel(3), WithWarmup(1),
			WithPromptTokens(Fixed(20)), WithOutputTokens(Fixed(3)), WithMetricsInterval(50*time.Millisecond))
		run, err := s.Record(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		// Read from the file, as another tool would.
		var m struct {
			RunID string `json:"run_id"`
		}
		data, _ := os.ReadFile(filepath.Join(run.Dir, rundir.ManifestFile))
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		id := m.RunID
		if len(id) != 36 || runIDs[id] {
			t.Fatalf("run %s: run_id %q (seen before: %v)", name, id, runIDs[id])
		}
		runIDs[id] = true
		reqs, err := rundir.ReadTable[rundir.RequestRow](dir, rundir.TableRequests)
		if err != nil || len(reqs) != 8 {
			t.Fatalf("run %s: %d requests, %v", name, len(reqs), err)
		}
		for _, r := range reqs {
			if other, dup := ids[r.RequestID]; dup {
				t.Errorf("request id %q of run %s is also in run %s", r.RequestID, id, other)
			}
			ids[r.RequestID] = id
		}
		tables := 0
		for _, table := range rundir.AllTables {
			parts, _ := rundir.TableParts(dir, table)
			for _, p := range parts {
				rows, err := rundir.ReadParquetFile[struct {
					RunID string `parquet:"run_id"`
				}](p)
				if err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				for _, r := range rows {
					if r.RunID != id {
						t.Fatalf("%s: run_id %q, want the manifest's %q", p, r.RunID, id)
					}
				}
			}
			if len(parts) > 0 {
				tables++
			}
		}
		if tables < 5 {
			t.Errorf("run %s: only %d tables written", name, tables)
		}
	}
}
