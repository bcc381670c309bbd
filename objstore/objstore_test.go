package objstore

import (
	"context"
	"crypto/md5"
	"errors"
	"io/fs"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"

	"github.com/headroom-llm/headroom/internal/cputime"
	"github.com/headroom-llm/headroom/internal/s3test"
	"github.com/headroom-llm/headroom/internal/workers"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]Location{
		"s3://b":            {"b", ""},
		"s3://b/":           {"b", ""},
		"s3://b/runs/a/":    {"b", "runs/a"},
		"s3://b//runs//a/.": {"b", "runs/a"},
	} {
		if got, err := Parse(in); err != nil || got != want {
			t.Errorf("%s: %+v %v", in, got, err)
		}
	}
	for _, bad := range []string{"s3://", "gs://b/x", "/local", "s3:///x"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// Against a real S3 server: put, list, get, a missing key, and the io/fs
// view of a listing (fstest checks it behaves as an fs.FS should).
func TestAgainstSeaweedFS(t *testing.T) {
	ctx := context.Background()
	c := seaweedWith(t, nil)
	files := map[string]string{"runs/a/manifest.json": "{}", "runs/a/requests/part-00000.parquet": "P",
		"runs/b/manifest.json": "{}", "runs/b/superseded/x/manifest.json": "{}", "other.txt": "o"}
	for k, v := range files {
		if err := c.Put(ctx, "tst", k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	if empty, err := c.IsEmpty(ctx, "tst", "runs/"); empty || err != nil {
		t.Fatalf("IsEmpty: %v %v", empty, err)
	}
	if _, err := c.Get(ctx, "tst", "runs/none"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing key: %v", err)
	}
	found, err := Find(ctx, c, Location{Bucket: "tst", Prefix: "runs"}, "manifest.json")
	if err != nil || len(found) != 2 || found[0].Loc.String() != "s3://tst/runs/a" || found[1].Loc.String() != "s3://tst/runs/b" {
		t.Fatalf("Find: %+v %v", found, err)
	}
	if err := fstest.TestFS(found[0].FS, "manifest.json", "requests/part-00000.parquet"); err != nil {
		t.Fatal(err)
	}
	data, err := fs.ReadFile(found[0].FS, "requests/part-00000.parquet")
	if err != nil || string(data) != "P" {
		t.Fatalf("%q %v", data, err)
	}
	// The listing's ETag of an object written by one PUT is its MD5.
	if sum, ok := found[0].FS.ContentMD5("manifest.json"); !ok || sum != md5.Sum([]byte("{}")) {
		t.Errorf("ContentMD5 of manifest.json: %x %v, want %x", sum, ok, md5.Sum([]byte("{}")))
	}
	if _, ok := found[0].FS.ContentMD5("none"); ok {
		t.Error("ContentMD5 of a missing file: ok")
	}
}

// Requests in flight side by side reuse the connections of the requests
// before them: the SDK's default kept 10 idle connections per host, so with
// more at once (runs load 16 at a time) every burst dialled the rest again.
// Each round starts MaxParallel/2 GETs together; over six rounds a client
// that keeps its connections dials about one round's worth (the transport
// may dial a spare while a connection frees up), one that keeps 10 dials
// again in every round.
func TestConnectionsReused(t *testing.T) {
	c := seaweedWith(t, map[string][]byte{"k": []byte("v")})
	var dials, gets atomic.Int64
	ctx := httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
		gets.Add(1)
		if !i.Reused {
			dials.Add(1)
		}
	}})
	const parallel, rounds = MaxParallel / 2, 6
	for range rounds {
		var start, done sync.WaitGroup
		start.Add(1)
		errs := make([]error, parallel)
		for i := range parallel {
			done.Add(1)
			go func() {
				defer done.Done()
				start.Wait()
				_, errs[i] = c.Get(ctx, "tst", "k")
			}()
		}
		start.Done()
		done.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	}
	if gets.Load() != parallel*rounds {
		t.Fatalf("%d connections taken for %d GETs: the trace does not see the requests", gets.Load(), parallel*rounds)
	}
	t.Logf("%d connections dialled for %d GETs", dials.Load(), gets.Load())
	if d := dials.Load(); d > 2*parallel {
		t.Errorf("%d connections dialled for %d rounds of %d GETs at once: want at most %d", d, rounds, parallel, 2*parallel)
	}
}

// BenchmarkGetSmall times GETs of a 2 KB object (a manifest's size), 16 at
// once as runs load, against SeaweedFS on loopback; cpu-ms/get is this
// process's CPU per GET (the client's share; the server's is its own).
func BenchmarkGetSmall(b *testing.B) {
	ctx := context.Background()
	c := seaweedWith(b, map[string][]byte{"m.json": make([]byte, 2048)})
	const perOp = 1000
	before := cputime.Total()
	for b.Loop() {
		if err := workers.Each(ctx, 16, perOp, func(int) error {
			_, err := c.Get(ctx, "tst", "m.json")
			return err
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((cputime.Total()-before).Microseconds())/1000/float64(b.N*perOp), "cpu-ms/get")
}

// seaweedWith starts SeaweedFS with a bucket "tst" holding objects and
// returns the default client, pointed at it.
func seaweedWith(tb testing.TB, objects map[string][]byte) *Client {
	tb.Helper()
	srv := s3test.Start(tb, "tst")
	srv.Env(tb)
	c, err := Default(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	for k, v := range objects {
		if err := c.Put(context.Background(), "tst", k, v); err != nil {
			tb.Fatal(err)
		}
	}
	return c
}
