package rundir

import (
	"bytes"
	"crypto/md5"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// Dir is a run directory to read: a local directory, or a run kept in
// object storage, seen as an fs.FS (package objstore makes those). Local
// sources read through the same functions as before (ReadManifest,
// ReadTable), so nothing changes for them.
type Dir struct {
	// Name is the directory's path or the run's URL (s3://bucket/prefix),
	// as messages and reports name the run.
	Name  string
	fsys  fs.FS // nil for a local directory
	local bool
}

// LocalDir is the run directory dir on this machine.
func LocalDir(dir string) Dir { return Dir{Name: dir, local: true} }

// RemoteDir is a run read through fsys, rooted at the run, named url.
func RemoteDir(fsys fs.FS, url string) Dir { return Dir{Name: url, fsys: fsys} }

// IsLocal reports whether the run is a local directory (Name is its path).
func (s Dir) IsLocal() bool { return s.local }

// Path names a file of the run, for messages and reports.
func (s Dir) Path(name string) string {
	if s.local {
		return filepath.Join(s.Name, filepath.FromSlash(name))
	}
	return s.Name + "/" + name
}

// Manifest reads and checks the run's manifest.
func (s Dir) Manifest() (*Manifest, error) {
	if s.local {
		r, err := Open(s.Name)
		if err != nil {
			return nil, err
		}
		return r.Manifest, nil
	}
	data, err := fs.ReadFile(s.fsys, ManifestFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", s.Name, ErrNotRun)
	}
	if err != nil {
		return nil, err
	}
	m, err := DecodeManifest(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Path(ManifestFile), err)
	}
	return m, nil
}

// Entries lists the names at the top of the run (tables, files).
func (s Dir) Entries() ([]string, error) {
	var entries []fs.DirEntry
	var err error
	if s.local {
		entries, err = os.ReadDir(s.Name)
	} else {
		entries, err = fs.ReadDir(s.fsys, ".")
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names, nil
}

// IsRegular reports whether name is a plain file of the run.
func (s Dir) IsRegular(name string) bool {
	var st fs.FileInfo
	var err error
	if s.local {
		st, err = os.Stat(s.Path(name))
	} else {
		st, err = fs.Stat(s.fsys, name)
	}
	return err == nil && st.Mode().IsRegular()
}

// ContentMD5 is the MD5 of the bytes of the run's file name when the store
// knows it without a read (an S3 listing's ETag of a plainly uploaded
// object), ok false otherwise: always for a local directory, where reading
// the file costs less than a request.
func (s Dir) ContentMD5(name string) (sum [md5.Size]byte, ok bool) {
	if h, is := s.fsys.(interface {
		ContentMD5(string) ([md5.Size]byte, bool)
	}); is {
		return h.ContentMD5(name)
	}
	return sum, false
}

// OpenFile opens a file of the run (name slash-separated) for reading.
func (s Dir) OpenFile(name string) (io.ReadCloser, error) {
	if s.local {
		return os.Open(s.Path(name))
	}
	f, err := s.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	return f, nil
}

// ReadFile reads a file of the run (name slash-separated) whole, refusing
// one larger than limit bytes; from a local directory, only a plain file,
// with one read of its size.
func (s Dir) ReadFile(name string, limit int64) ([]byte, error) {
	if s.local {
		return readRegular(s.Path(name), limit)
	}
	f, err := s.fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, tooLarge(s.Path(name), limit)
	}
	return data, nil
}

// Parts lists a table's part files in write order, as names relative to
// the run (slash-separated); a table that was never written has none.
func (s Dir) Parts(table string) ([]string, error) {
	if s.local {
		parts, err := TableParts(s.Name, table)
		for i, p := range parts {
			parts[i] = table + "/" + filepath.Base(p)
		}
		return parts, err
	}
	entries, err := fs.ReadDir(s.fsys, table)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names, err := partNames(entries, func(name string) string { return s.Path(path.Join(table, name)) })
	for i, n := range names {
		names[i] = path.Join(table, n)
	}
	return names, err
}

// ReadDirTable reads every part of a table of the run, in order, as
// ReadTable does for a local directory; errors name the part.
func ReadDirTable[T any](s Dir, table string) ([]T, error) {
	if s.local {
		return ReadTable[T](s.Name, table)
	}
	parts, err := s.Parts(table)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.Path(table), err)
	}
	var rows []T
	for _, p := range parts {
		data, err := fs.ReadFile(s.fsys, p)
		if err != nil {
			return nil, err
		}
		r, err := decodeParquet[T](bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Path(p), err)
		}
		rows = append(rows, r...)
	}
	return rows, nil
}

// DecodeParquet reads every row of one Parquet file held in memory, as
// ReadParquetFile does for a file on disk.
func DecodeParquet[T any](data []byte) ([]T, error) {
	return decodeParquet[T](bytes.NewReader(data))
}

// EncodeParquet encodes rows as one Parquet file, as WriteParquetFile
// writes it, for a caller that stores it elsewhere (object storage).
func EncodeParquet[T any](rows []T) ([]byte, error) {
	var buf bytes.Buffer
	if err := encodeParquet(&buf, rows, "", false); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// EncodeParquetParts is EncodeParquet of the rows of every part in turn,
// as one file: a caller that gathers rows from many sources (the dataset
// of `headroom index`, a run's rows at a time) need not copy them into one
// slice first.
func EncodeParquetParts[T any](parts [][]T) ([]byte, error) {
	var buf bytes.Buffer
	if err := encodeParquetParts(&buf, parts, "", false); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
