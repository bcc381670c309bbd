package objstore

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"io"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
	"time"
)

// FS is a read-only io/fs view of the objects under a location, from one
// listing made beforehand (so that reading a run costs one GET per file
// and no further listing). Open reads the whole object; the file it
// returns implements io.ReaderAt and io.Seeker, as Parquet readers need.
type FS struct {
	ctx   context.Context
	c     *Client
	loc   Location
	files map[string]int64           // name relative to loc -> size
	etags map[string]string          // name relative to loc -> the listing's ETag
	dirs  map[string]map[string]bool // directory -> its entries' names
}

// NewFS returns the view of objs (listed under loc) as files relative to
// loc. Keys outside loc are ignored.
func NewFS(ctx context.Context, c *Client, loc Location, objs []Object) *FS {
	f := &FS{ctx: ctx, c: c, loc: loc, files: map[string]int64{}, etags: map[string]string{}, dirs: map[string]map[string]bool{".": {}}}
	prefix := loc.Prefix + "/"
	if loc.Prefix == "" {
		prefix = ""
	}
	for _, o := range objs {
		name, ok := strings.CutPrefix(o.Key, prefix)
		if !ok || name == "" || strings.HasSuffix(name, "/") || !fs.ValidPath(name) {
			continue
		}
		f.files[name] = o.Size
		if o.ETag != "" {
			f.etags[name] = o.ETag
		}
		for child := name; ; {
			parent := path.Dir(child)
			kids, existed := f.dirs[parent]
			if !existed {
				kids = map[string]bool{}
				f.dirs[parent] = kids
			}
			kids[path.Base(child)] = true
			if existed {
				break // the parent is linked to its own parents already
			}
			child = parent
		}
	}
	return f
}

// Location is where the view is rooted.
func (f *FS) Location() Location { return f.loc }

// Open implements fs.FS.
func (f *FS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	if _, ok := f.dirs[name]; ok {
		entries, _ := f.ReadDir(name)
		return &dirFile{info: fileInfo{name: path.Base(name), dir: true}, entries: entries}, nil
	}
	if _, ok := f.files[name]; !ok {
		return nil, &fs.PathError{Op: "open", Path: f.loc.Key(name), Err: fs.ErrNotExist}
	}
	data, err := f.c.Get(f.ctx, f.loc.Bucket, f.loc.Key(name))
	if err != nil {
		return nil, err
	}
	return &memFile{Reader: bytes.NewReader(data), info: fileInfo{name: path.Base(name), size: int64(len(data))}}, nil
}

// ReadFile implements fs.ReadFileFS.
func (f *FS) ReadFile(name string) ([]byte, error) {
	if _, ok := f.files[name]; !ok || !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: f.loc.Key(name), Err: fs.ErrNotExist}
	}
	return f.c.Get(f.ctx, f.loc.Bucket, f.loc.Key(name))
}

// ContentMD5 is the MD5 of file name's bytes as the listing gave it, with
// no read: ok only where the object's ETag has the form of an MD5 (an
// object written by one plain PUT; not a multipart upload). A caller that
// holds bytes it believes to be the file's compares their MD5 with this
// instead of reading the file. Against a store whose ETags are not MD5s
// the comparison fails, and the caller reads the file.
func (f *FS) ContentMD5(name string) (sum [md5.Size]byte, ok bool) {
	tag := strings.Trim(f.etags[name], `"`)
	if len(tag) != 2*md5.Size {
		return sum, false
	}
	if _, err := hex.Decode(sum[:], []byte(tag)); err != nil {
		return sum, false
	}
	return sum, true
}

// Stat implements fs.StatFS.
func (f *FS) Stat(name string) (fs.FileInfo, error) {
	if _, ok := f.dirs[name]; ok {
		return fileInfo{name: path.Base(name), dir: true}, nil
	}
	if size, ok := f.files[name]; ok {
		return fileInfo{name: path.Base(name), size: size}, nil
	}
	return nil, &fs.PathError{Op: "stat", Path: f.loc.Key(name), Err: fs.ErrNotExist}
}

// ReadDir implements fs.ReadDirFS.
func (f *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	kids, ok := f.dirs[name]
	if !ok {
		return nil, &fs.PathError{Op: "readdir", Path: f.loc.Key(name), Err: fs.ErrNotExist}
	}
	out := make([]fs.DirEntry, 0, len(kids))
	for _, c := range slices.Sorted(maps.Keys(kids)) {
		full := path.Join(name, c)
		_, isDir := f.dirs[full]
		out = append(out, fs.FileInfoToDirEntry(fileInfo{name: c, dir: isDir, size: f.files[full]}))
	}
	return out, nil
}

type fileInfo struct {
	name string
	size int64
	dir  bool
}

func (i fileInfo) Name() string { return i.name }
func (i fileInfo) Size() int64  { return i.size }
func (i fileInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return i.dir }
func (i fileInfo) Sys() any           { return nil }

type memFile struct {
	*bytes.Reader
	info fileInfo
}

func (m *memFile) Stat() (fs.FileInfo, error) { return m.info, nil }
func (m *memFile) Close() error               { return nil }

type dirFile struct {
	info    fileInfo
	entries []fs.DirEntry
}

// ReadDir implements fs.ReadDirFile.
func (d *dirFile) ReadDir(n int) ([]fs.DirEntry, error) {
	if n <= 0 {
		out := d.entries
		d.entries = nil
		return out, nil
	}
	if len(d.entries) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(d.entries))
	out := d.entries[:n]
	d.entries = d.entries[n:]
	return out, nil
}

func (d *dirFile) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *dirFile) Read([]byte) (int, error)   { return 0, io.EOF }
func (d *dirFile) Close() error               { return nil }
