package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/headroom-llm/headroom/internal/workers"
	"github.com/headroom-llm/headroom/objstore"
	"github.com/headroom-llm/headroom/rundir"
)

// Where runs, reports and indexes are read and written: a local path, or
// an object-store location (s3://bucket/prefix, package objstore).

// runKey names a run once however it was given: a local run by its
// absolute path, a remote one by its URL.
func runKey(d rundir.Dir) string {
	if d.IsLocal() {
		if abs, err := filepath.Abs(d.Name); err == nil {
			return abs
		}
	}
	return d.Name
}

// findRunDirs returns arg itself when it is a run, else every run under
// it, for a local directory or an s3:// location alike.
func findRunDirs(ctx context.Context, arg string) ([]rundir.Dir, error) {
	if !objstore.IsURL(arg) {
		dirs, err := findRuns(arg)
		if err != nil {
			return nil, err
		}
		out := make([]rundir.Dir, len(dirs))
		for i, d := range dirs {
			out[i] = rundir.LocalDir(d)
		}
		return out, nil
	}
	loc, c, err := openLocation(ctx, arg)
	if err != nil {
		return nil, err
	}
	found, err := objstore.Find(ctx, c, loc, rundir.ManifestFile)
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("%s: no runs there (no manifest.json found)", loc)
	}
	out := make([]rundir.Dir, len(found))
	for i, f := range found {
		out[i] = rundir.RemoteDir(f.FS, f.Loc.String())
	}
	return out, nil
}

// openRunDir is the one run at arg.
func openRunDir(ctx context.Context, arg string) (rundir.Dir, error) {
	if !objstore.IsURL(arg) {
		return rundir.LocalDir(arg), nil
	}
	loc, c, err := openLocation(ctx, arg)
	if err != nil {
		return rundir.Dir{}, err
	}
	objs, err := c.List(ctx, loc.Bucket, loc.Key(""))
	if err != nil {
		return rundir.Dir{}, err
	}
	return rundir.RemoteDir(objstore.NewFS(ctx, c, loc, objs), loc.String()), nil
}

func openLocation(ctx context.Context, arg string) (objstore.Location, *objstore.Client, error) {
	loc, err := objstore.Parse(arg)
	if err != nil {
		return loc, nil, usageError{err}
	}
	c, err := objstore.Default(ctx)
	return loc, c, err
}

// writeTo runs write on a local directory for out: out itself, or, for an
// s3:// location, a temporary directory whose files are uploaded there
// afterwards. It returns where each written file is.
func writeTo(ctx context.Context, out string, write func(dir string) ([]string, error)) ([]string, error) {
	if !objstore.IsURL(out) {
		if err := os.MkdirAll(out, 0o755); err != nil {
			return nil, err
		}
		return write(out)
	}
	loc, c, err := openLocation(ctx, out)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "headroom-out-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	paths, err := write(tmp)
	if err != nil {
		return nil, err
	}
	urls := make([]string, 0, len(paths))
	for _, p := range paths {
		rel, err := filepath.Rel(tmp, p)
		if err != nil || strings.HasPrefix(rel, "..") {
			return nil, fmt.Errorf("%s: not under the output directory", p)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		name := filepath.ToSlash(rel)
		if err := c.Put(ctx, loc.Bucket, loc.Key(name), data); err != nil {
			return nil, err
		}
		urls = append(urls, loc.Join(name).String())
	}
	return urls, nil
}

// runOutput is where a collector writes a new run: out itself, or, for an
// s3:// location, a local staging directory mirrored there as the run is
// written (parts as they are committed, the manifest last; see
// rundir.Mirror). finish ends the mirror; for a local run it does nothing.
type runOutput struct {
	dir    string // the local directory the collector writes
	remote string // the s3:// location, "" for a local run
	mirror *rundir.Mirror
}

// uploadGrace bounds how long a finished sweep or probe waits for its last
// files to reach object storage before saying where the local copy is.
const uploadGrace = 2 * time.Minute

func newRunOutput(ctx context.Context, out string) (*runOutput, error) {
	if !objstore.IsURL(out) {
		return &runOutput{dir: out}, nil
	}
	loc, c, err := openLocation(ctx, out)
	if err != nil {
		return nil, err
	}
	empty, err := c.IsEmpty(ctx, loc.Bucket, loc.Key(""))
	if err != nil {
		return nil, err
	}
	if !empty {
		return nil, fmt.Errorf("%s: not empty; choose a new run location", loc)
	}
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	parent := filepath.Join(base, "headroom", "staging")
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(parent, strings.ReplaceAll(loc.Bucket+"-"+loc.Prefix, "/", "_")+"-")
	if err != nil {
		return nil, err
	}
	o := &runOutput{dir: dir, remote: loc.String()}
	o.mirror = rundir.MirrorTo(dir, objstore.Target{C: c, Loc: loc})
	return o, nil
}

// name is how the run is named to the user.
func (o *runOutput) name() string {
	if o.remote != "" {
		return o.remote
	}
	return o.dir
}

// finish waits for the mirror to upload everything (the manifest last),
// then removes the local staging copy; if the upload could not finish, the
// copy stays and the error says where it is.
func (o *runOutput) finish() error {
	if o.mirror == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), uploadGrace)
	defer cancel()
	if err := o.mirror.Close(ctx); err != nil {
		return fmt.Errorf("upload: %w: upload it later with `headroom upload %s %s`", err, o.dir, o.remote)
	}
	return os.RemoveAll(o.dir)
}

// uploadRun copies a finished local run to an object-store location: the
// parts first, the manifest last.
func uploadRun(ctx context.Context, dir, out string) error {
	loc, c, err := openLocation(ctx, out)
	if err != nil {
		return err
	}
	return uploadTo(ctx, c, dir, loc)
}

func uploadTo(ctx context.Context, c *objstore.Client, dir string, loc objstore.Location) error {
	if _, err := rundir.Open(dir); err != nil {
		return err
	}
	m := rundir.MirrorTo(dir, objstore.Target{C: c, Loc: loc})
	err := m.Close(ctx)
	if errors.Is(ctx.Err(), context.Canceled) {
		return ctx.Err()
	}
	return err
}

// uploadParallel is how many runs `headroom upload` of an archive copies at
// once: each run's files go up one after another (the manifest last), so
// runs side by side keep the connections busy.
const uploadParallel = 16

// uploadRuns copies every run under the local directory archive to out,
// each to the same path under out as under archive, uploadParallel at
// once, each within perRun. It returns how many went up; the error names
// the first run (in path order) that did not and how many others failed.
func uploadRuns(ctx context.Context, archive, out string, runs []string, perRun time.Duration) (int, error) {
	loc, c, err := openLocation(ctx, out)
	if err != nil {
		return 0, err
	}
	errs := make([]error, len(runs))
	err = workers.Each(ctx, uploadParallel, len(runs), func(i int) error {
		errs[i] = uploadOne(ctx, c, archive, runs[i], loc, perRun)
		return nil
	})
	if err != nil {
		return 0, err
	}
	var first error
	failed := 0
	for _, err := range errs {
		if err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	if first != nil {
		if failed > 1 {
			return len(runs) - failed, fmt.Errorf("%w (and %d other runs not uploaded)", first, failed-1)
		}
		return len(runs) - failed, first
	}
	return len(runs), nil
}

func uploadOne(ctx context.Context, c *objstore.Client, archive, run string, loc objstore.Location, perRun time.Duration) error {
	rel, err := filepath.Rel(archive, run)
	if err != nil || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("%s: not under %s", run, archive)
	}
	ctx, cancel := context.WithTimeout(ctx, perRun)
	defer cancel()
	return uploadTo(ctx, c, run, loc.Join(filepath.ToSlash(rel)))
}
