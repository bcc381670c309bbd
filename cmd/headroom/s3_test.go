package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/internal/s3test"
	"github.com/headroom-llm/headroom/objstore"
	"github.com/headroom-llm/headroom/rundir"
)

func s3Get(t *testing.T, url string) []byte {
	t.Helper()
	loc, err := objstore.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	c, err := objstore.Default(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	data, err := c.Get(context.Background(), loc.Bucket, loc.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func s3Keys(t *testing.T, bucket, prefix string) []string {
	t.Helper()
	c, _ := objstore.Default(context.Background())
	objs, err := c.List(context.Background(), bucket, prefix)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	return keys
}

func sweepArgs(url, out, label string) []string {
	return []string{"sweep", "--base-url", url, "-o", out, "--label", label, "--no-gpu", "--concurrency", "1,2",
		"--requests-per-level", "6", "--warmup", "1", "--prompt-tokens", "16", "--output-tokens", "8"}
}

// Issue 18's fourth problem: runs could only be read from and written to
// local disk. Against a real S3 server (SeaweedFS on loopback): two sweeps
// write to s3://, index reads them from there into a dataset there, and
// compare and report read them from there too; nothing is left on disk.
func TestS3RoundTrip(t *testing.T) {
	srv := s3test.Start(t, "bench")
	srv.Env(t)
	cache := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", cache)
	llm := faultyServer(t, "", func(int64) bool { return false })
	for _, label := range []string{"a", "b"} {
		code, stdout, errs := headroom(t, sweepArgs(llm.URL, "s3://bench/runs/"+label, label)...)
		if code != 0 || !strings.Contains(stdout, "wrote s3://bench/runs/"+label+": complete run") {
			t.Fatalf("sweep %s: exit %d\n%s%s", label, code, stdout, errs)
		}
	}
	var m rundir.Manifest
	if err := json.Unmarshal(s3Get(t, "s3://bench/runs/a/manifest.json"), &m); err != nil || !m.Complete || m.RunID == "" {
		t.Fatalf("manifest in S3: %+v %v", m, err)
	}
	keys := strings.Join(s3Keys(t, "bench", "runs/a/"), " ")
	for _, want := range []string{"runs/a/levels/part-00000.parquet", "runs/a/requests/part-00001.parquet", "runs/a/tokens/part-00000.parquet", "runs/a/client_samples/", "runs/a/" + rundir.SummaryFile} {
		if !strings.Contains(keys, want) {
			t.Errorf("S3 lacks %s: %s", want, keys)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(cache, "headroom", "staging", "*")); len(left) != 0 {
		t.Errorf("staging copies left after a complete upload: %v", left)
	}
	// A sweep never writes over a run.
	if code, _, errs := headroom(t, sweepArgs(llm.URL, "s3://bench/runs/a", "again")...); code == 0 || !strings.Contains(errs, "not empty") {
		t.Errorf("sweep into an existing run: exit %d, %s", code, errs)
	}

	code, stdout, errs := headroom(t, "index", "s3://bench/runs", "-o", "s3://bench/index")
	if code != 0 || !strings.HasPrefix(stdout, "indexed 2 new runs") {
		t.Fatalf("index: exit %d\n%s%s", code, stdout, errs)
	}
	if code, stdout, _ = headroom(t, "index", "s3://bench/runs", "-o", "s3://bench/index"); code != 0 || !strings.HasPrefix(stdout, "indexed 0 new runs") {
		t.Errorf("re-index: %s", stdout)
	}
	runsKeys := s3Keys(t, "bench", "index/runs/day=")
	if len(runsKeys) != 1 {
		t.Fatalf("index runs files: %v", runsKeys)
	}
	rows, err := rundir.DecodeParquet[struct {
		RunID    string `parquet:"run_id"`
		Path     string `parquet:"path"`
		Requests int64  `parquet:"requests"`
	}](s3Get(t, "s3://bench/"+runsKeys[0]))
	if err != nil || len(rows) != 2 || !strings.HasPrefix(rows[0].Path, "s3://bench/runs/") || rows[0].Requests != 12 {
		t.Fatalf("index runs rows %+v %v", rows, err)
	}

	code, stdout, errs = headroom(t, "compare", "s3://bench/runs", "-o", "s3://bench/cmp", "--format", "md", "--index", "s3://bench/cmp/runs.parquet")
	if code != 0 || !strings.HasPrefix(stdout, "compared 2 runs in 2 groups") || !strings.Contains(stdout, "wrote s3://bench/cmp/compare.md") {
		t.Fatalf("compare: exit %d\n%s%s", code, stdout, errs)
	}
	var cmp comparisonJSON
	if err := json.Unmarshal(s3Get(t, "s3://bench/cmp/comparison.json"), &cmp); err != nil || len(cmp.Runs) != 2 || cmp.Runs[0].Dir != "s3://bench/runs/a" {
		t.Fatalf("comparison.json in S3: %+v %v", cmp, err)
	}
	if len(s3Get(t, "s3://bench/cmp/runs.parquet")) == 0 {
		t.Error("no runs.parquet in S3")
	}
	out := t.TempDir()
	if code, _, errs = headroom(t, "report", "s3://bench/runs/a", "-o", out, "--format", "md"); code != 0 {
		t.Fatalf("report: exit %d: %s", code, errs)
	}
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	if !strings.Contains(string(md), "s3://bench/runs/a") {
		t.Errorf("report.md does not name the run's location")
	}
	// No credential reaches a run, an index or a report.
	for _, k := range append(s3Keys(t, "bench", ""), "") {
		if k == "" || strings.HasSuffix(k, ".parquet") {
			continue
		}
		if strings.Contains(string(s3Get(t, "s3://bench/"+k)), "headroom-test-secret") {
			t.Errorf("%s holds the secret key", k)
		}
	}
}

// proxy forwards TCP connections to target; while down it drops every
// connection, open or new: a network fault.
type proxy struct {
	ln      net.Listener
	target  string
	down    atomic.Bool
	dropped atomic.Int64
	mu      sync.Mutex
	conns   []net.Conn
}

func newProxy(t *testing.T, target string) *proxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if p.down.Load() {
				p.dropped.Add(1)
				c.Close()
				continue
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
	t.Cleanup(func() { ln.Close(); p.setDown(true) })
	return p
}

func (p *proxy) setDown(down bool) {
	p.down.Store(down)
	if down {
		p.mu.Lock()
		for _, c := range p.conns {
			c.Close()
		}
		p.conns = nil
		p.mu.Unlock()
	}
}

// A sweep writing to S3 loses nothing when the network to the store fails
// for a while: parts wait in the local copy and go up when it is back, the
// manifest after them.
func TestS3SweepSurvivesANetworkFault(t *testing.T) {
	srv := s3test.Start(t, "bench")
	srv.Env(t)
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	direct, err := objstore.Default(context.Background()) // to the store itself, past the proxy
	if err != nil {
		t.Fatal(err)
	}
	p := newProxy(t, strings.TrimPrefix(srv.Endpoint, "http://"))
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://"+p.ln.Addr().String())
	t.Setenv("AWS_MAX_ATTEMPTS", "1")
	llm := faultyServer(t, "", func(int64) bool { return false })
	go func() {
		// The fault starts once the run's first manifest is up (the sweep has
		// checked the prefix and started), not after a fixed time that a
		// loaded machine can outlast.
		for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, err := direct.Get(context.Background(), "bench", "runs/fault/manifest.json"); err == nil {
				break
			}
		}
		p.setDown(true)
		time.Sleep(3 * time.Second)
		p.setDown(false)
	}()
	args := append(sweepArgs(llm.URL, "s3://bench/runs/fault", "fault"), "--concurrency", "1,2,4")
	code, stdout, errs := headroom(t, args...)
	if code != 0 || !strings.Contains(stdout, "wrote s3://bench/runs/fault: complete run") {
		t.Fatalf("sweep: exit %d\n%s%s", code, stdout, errs)
	}
	if p.dropped.Load() == 0 {
		t.Fatal("the fault did not hit any upload")
	}
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.Endpoint)
	var m rundir.Manifest
	if err := json.Unmarshal(s3Get(t, "s3://bench/runs/fault/manifest.json"), &m); err != nil || !m.Complete {
		t.Fatalf("manifest: %+v %v", m, err)
	}
	dirs, err := findRunDirs(context.Background(), "s3://bench/runs/fault")
	if err != nil {
		t.Fatal(err)
	}
	reqs, err := rundir.ReadDirTable[rundir.RequestRow](dirs[0], rundir.TableRequests)
	levels, _ := rundir.ReadDirTable[rundir.LevelRow](dirs[0], rundir.TableLevels)
	if err != nil || len(levels) != 3 || len(reqs) != 3*(6+1) {
		t.Fatalf("%d levels, %d requests in S3 (%v)", len(levels), len(reqs), err)
	}
}

// Issue 18: an archive of thousands of runs went up one `headroom upload`
// at a time. One upload of the directory copies every run under it to the
// same path under the location, each file byte for byte, and names a run
// it could not copy without stopping the others; run again, it finishes.
func TestUploadArchive(t *testing.T) {
	srv := s3test.Start(t, "bench")
	srv.Env(t)
	archive := t.TempDir()
	if err := os.CopyFS(archive, os.DirFS("../../examples/runs")); err != nil {
		t.Fatal(err)
	}
	local, err := findRuns(archive)
	if err != nil || len(local) < 5 {
		t.Fatalf("%d runs in the copied examples (%v)", len(local), err)
	}
	broken := filepath.Join(archive, "h200-probe", rundir.ManifestFile)
	good, err := os.ReadFile(broken)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(broken, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := headroom(t, "upload", archive, "s3://bench/arch")
	if want := fmt.Sprintf("uploaded %d of %d runs", len(local)-1, len(local)); code == 0 || !strings.Contains(errs, want) || !strings.Contains(errs, "h200-probe") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Fatalf("upload with one broken run: exit %d, want one line with %q and the run's name: %s", code, want, errs)
	}
	if keys := s3Keys(t, "bench", "arch/h200-probe/"); len(keys) != 0 {
		t.Errorf("the broken run was uploaded: %v", keys)
	}
	if err := os.WriteFile(broken, good, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, errs := headroom(t, "upload", archive, "s3://bench/arch")
	if want := fmt.Sprintf("uploaded %d runs from %s to s3://bench/arch\n", len(local), archive); code != 0 || stdout != want {
		t.Fatalf("upload: exit %d, %q (want %q) %s", code, stdout, want, errs)
	}
	remote, err := findRunDirs(context.Background(), "s3://bench/arch")
	if err != nil || len(remote) != len(local) {
		t.Fatalf("%d runs in S3, %d local (%v)", len(remote), len(local), err)
	}
	inS3 := map[string]bool{}
	for _, d := range remote {
		inS3[d.Name] = true
	}
	for _, run := range local {
		rel, _ := filepath.Rel(archive, run)
		url := "s3://bench/arch/" + filepath.ToSlash(rel)
		if !inS3[url] {
			t.Errorf("%s: not found in S3", url)
			continue
		}
		// Every table part, the manifest and the log are there, as they are locally.
		var names []string
		for _, tbl := range rundir.AllTables {
			parts, _ := rundir.TableParts(run, tbl)
			for _, p := range parts {
				names = append(names, tbl+"/"+filepath.Base(p))
			}
		}
		names = append(names, rundir.ManifestFile)
		if _, err := os.Stat(filepath.Join(run, rundir.ServerLogFile)); err == nil {
			names = append(names, rundir.ServerLogFile)
		}
		for _, name := range names {
			want, err := os.ReadFile(filepath.Join(run, filepath.FromSlash(name)))
			if err != nil {
				t.Fatal(err)
			}
			if got := s3Get(t, url+"/"+name); !bytes.Equal(got, want) {
				t.Errorf("%s/%s: %d bytes in S3, %d local", url, name, len(got), len(want))
			}
		}
	}
	if code, _, errs := headroom(t, "upload", filepath.Join(archive, "none"), "s3://bench/arch"); code == 0 || !strings.Contains(errs, "none") {
		t.Errorf("upload of a missing directory: exit %d, %s", code, errs)
	}
}
