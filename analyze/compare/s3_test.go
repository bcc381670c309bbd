package compare

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/headroom-llm/headroom/internal/s3test"
	"github.com/headroom-llm/headroom/objstore"
	"github.com/headroom-llm/headroom/rundir"
)

// countingFS is a run's objstore.FS that counts the files read from it.
type countingFS struct {
	*objstore.FS
	mu    *sync.Mutex
	reads map[string]int // "run/file" -> reads
	run   string
}

func (c countingFS) count(name string) {
	c.mu.Lock()
	c.reads[c.run+"/"+name]++
	c.mu.Unlock()
}

func (c countingFS) Open(name string) (fs.File, error) {
	c.count(name)
	return c.FS.Open(name)
}

func (c countingFS) ReadFile(name string) ([]byte, error) {
	c.count(name)
	return c.FS.ReadFile(name)
}

// From a real S3 server (SeaweedFS on loopback), a run that holds its own
// summary costs one GET in a comparison, its summary, whose copy of the
// manifest stands for manifest.json while the listing's ETag (the MD5 of
// the uploaded manifest) agrees with it; the index reads the summary and
// the requests table, not the manifest nor the levels table. The numbers
// are those read from local disk. A manifest changed after the summary was
// written is read, and the run analysed again.
func TestS3ReadsTheSummaryAlone(t *testing.T) {
	ctx := context.Background()
	srv := s3test.Start(t, "arch")
	srv.Env(t)
	c, err := objstore.Default(ctx)
	if err != nil {
		t.Fatal(err)
	}
	archive := t.TempDir()
	replayArchive(t, archive, 3)
	local := localDirs(t, archive)
	if with := writeSummaries(t, local); len(with) != len(local) {
		t.Fatalf("%d summaries for %d runs", len(with), len(local))
	}
	err = filepath.WalkDir(archive, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(archive, p)
		return c.Put(ctx, "arch", "runs/"+filepath.ToSlash(rel), data)
	})
	if err != nil {
		t.Fatal(err)
	}
	reads := map[string]int{}
	var mu sync.Mutex
	remote := func() []rundir.Dir {
		found, err := objstore.Find(ctx, c, objstore.Location{Bucket: "arch", Prefix: "runs"}, rundir.ManifestFile)
		if err != nil {
			t.Fatal(err)
		}
		clear(reads)
		var dirs []rundir.Dir
		for _, f := range found {
			name := strings.TrimPrefix(f.Loc.Prefix, "runs/")
			dirs = append(dirs, rundir.RemoteDir(countingFS{FS: f.FS, mu: &mu, reads: reads, run: name}, f.Loc.String()))
		}
		return dirs
	}
	readsOf := func(run string) (names []string) {
		for k, n := range reads {
			if name, ok := strings.CutPrefix(k, run+"/"); ok {
				for range n {
					names = append(names, name)
				}
			}
		}
		slices.Sort(names)
		return names
	}
	runs := make([]string, len(local))
	for i, d := range local {
		rel, err := filepath.Rel(archive, d.Name)
		if err != nil {
			t.Fatal(err)
		}
		runs[i] = filepath.ToSlash(rel)
	}

	// compare: the summary alone, and the local comparison's numbers.
	dirs := remote()
	got, err := CompareDirs(ctx, dirs, nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		if names := readsOf(r); !slices.Equal(names, []string{rundir.SummaryFile}) {
			t.Errorf("compare from S3, run %s read %v, want its summary alone", r, names)
		}
	}
	want, err := CompareDirs(ctx, local, nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	if g, w := runsJSON(t, got), runsJSON(t, want); g != w {
		t.Errorf("compare from S3:\n%s\nwant (from local disk)\n%s", g, w)
	}

	// Other settings: the summaries do not hold, so every run is analysed
	// from its tables, but the copy of the manifest still saves its GET.
	other := opts()
	other.Settings.MaxErrorFraction /= 2
	if _, err := CompareDirs(ctx, remote(), nil, other); err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		names := readsOf(r)
		if slices.Contains(names, rundir.ManifestFile) || !slices.Contains(names, rundir.TableRequests+"/part-00000.parquet") {
			t.Errorf("compare from S3 with other settings, run %s read %v: want its tables, not its manifest", r, names)
		}
	}

	// index: the summary and the requests table.
	dirs = remote()
	fromS3, fromDisk := LocalDataset(t.TempDir()), LocalDataset(t.TempDir())
	if _, err := IndexWith(ctx, dirs, fromS3, opts().Settings, ""); err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		for _, name := range readsOf(r) {
			if name != rundir.SummaryFile && filepath.Dir(name) != rundir.TableRequests {
				t.Errorf("index from S3, run %s read %s: want its summary and requests only", r, name)
			}
		}
	}
	if _, err := Index(ctx, local, fromDisk, opts().Settings); err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{DatasetLevels, DatasetLevelSummary, DatasetRequests} {
		if g, w := tableJSON(t, fromS3, table), tableJSON(t, fromDisk, table); g != w {
			t.Errorf("index from S3, table %s:\n%s\nwant (from local disk)\n%s", table, g, w)
		}
	}

	// A manifest edited after its summary was written: read, and the run
	// analysed again (its tables read), its new tag in the comparison.
	m, err := rundir.DecodeManifest(s3Object(t, c, "arch", "runs/"+runs[1]+"/"+rundir.ManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	m.Tags = append(m.Tags, "edited=yes")
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Put(ctx, "arch", "runs/"+runs[1]+"/"+rundir.ManifestFile, raw); err != nil {
		t.Fatal(err)
	}
	dirs = remote()
	got, err = CompareDirs(ctx, dirs, nil, opts())
	if err != nil {
		t.Fatal(err)
	}
	names := readsOf(runs[1])
	if !slices.Contains(names, rundir.ManifestFile) || !slices.Contains(names, rundir.TableRequests+"/part-00000.parquet") {
		t.Errorf("the edited run read %v: want its manifest and its tables", names)
	}
	if !slices.Contains(got.Runs[1].Tags, "edited=yes") {
		t.Errorf("the edited run's tags in the comparison: %v", got.Runs[1].Tags)
	}
	if names := readsOf(runs[0]); !slices.Equal(names, []string{rundir.SummaryFile}) {
		t.Errorf("an unedited run read %v, want its summary alone", names)
	}
}

// runsJSON is a comparison's runs without where they were read from.
func runsJSON(tb testing.TB, c *Comparison) string {
	tb.Helper()
	runs := slices.Clone(c.Runs)
	for i := range runs {
		runs[i].Dir = ""
	}
	data, err := json.MarshalIndent(runs, "", " ")
	if err != nil {
		tb.Fatal(err)
	}
	return string(data)
}

func s3Object(tb testing.TB, c *objstore.Client, bucket, key string) []byte {
	tb.Helper()
	data, err := c.Get(context.Background(), bucket, key)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}
