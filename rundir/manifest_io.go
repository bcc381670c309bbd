package rundir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
)

// ErrNotRun is returned (wrapped) when a directory holds no manifest.
var ErrNotRun = errors.New("not a headroom run directory (no manifest.json)")

// ReadManifest reads and checks dir/manifest.json.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	data, err := readRegular(path, MaxManifestBytes)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w", dir, ErrNotRun)
		}
		return nil, err
	}
	m, err := DecodeManifest(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// DecodeManifest parses a manifest and keeps its raw JSON in Extra so that
// unknown fields survive a rewrite.
func DecodeManifest(data []byte) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("invalid manifest JSON: %w", describeJSONError(data, err))
	}
	if dec.More() {
		return nil, errors.New("invalid manifest JSON: trailing data after the object")
	}
	switch {
	case m.FormatVersion == 0:
		return nil, errors.New("not a headroom manifest: format_version is missing")
	case m.FormatVersion > FormatVersion:
		return nil, fmt.Errorf("run format version %d is newer than this headroom understands (%d): upgrade headroom",
			m.FormatVersion, FormatVersion)
	case m.FormatVersion < 0:
		return nil, fmt.Errorf("invalid format_version %d", m.FormatVersion)
	}
	if m.RunID == "" {
		m.RunID = derivedRunID(&m)
	}
	m.Extra = append(json.RawMessage(nil), data...)
	return &m, nil
}

// describeJSONError adds the line and column to a JSON syntax error.
func describeJSONError(data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var off int64
	switch {
	case errors.As(err, &se):
		off = se.Offset
	case errors.As(err, &te):
		off = te.Offset
	case errors.Is(err, io.EOF):
		return errors.New("the file is empty")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("truncated: the file ends before the JSON object does")
	default:
		return err
	}
	line, col := 1, 1
	for _, b := range data[:min(int(off), len(data))] {
		if b == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return fmt.Errorf("line %d, column %d: %w", line, col, err)
}

// EncodeManifest renders a manifest as indented JSON in field order,
// followed by any fields from m.Extra that the Manifest type does not know.
func EncodeManifest(m *Manifest) ([]byte, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	known, err := decodeOrdered(data)
	if err != nil {
		return nil, err
	}
	if len(m.Extra) > 0 {
		if orig, err := decodeOrdered(m.Extra); err == nil {
			known = mergeUnknown(known, orig, reflect.TypeOf(*m))
		}
	}
	compact, err := json.Marshal(known)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, compact, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// WriteManifest writes dir/manifest.json atomically (temporary file, then
// rename), so a crash never leaves a half-written manifest.
func WriteManifest(dir string, m *Manifest) error {
	data, err := EncodeManifest(m)
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	return writeFileAtomic(filepath.Join(dir, ManifestFile), data)
}

// object is a JSON object that keeps its keys in order.
type object []member

type member struct {
	key string
	val any // object, []any, or json.RawMessage for scalars
}

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(m.key)
		b.Write(k)
		b.WriteByte(':')
		v, err := json.Marshal(m.val)
		if err != nil {
			return nil, err
		}
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// decodeOrdered parses JSON keeping object key order and numbers verbatim.
func decodeOrdered(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return decodeValue(dec)
}

func decodeValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			var o object
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				o = append(o, member{kt.(string), v})
			}
			_, err := dec.Token() // '}'
			return o, err
		case '[':
			a := []any{}
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			_, err := dec.Token() // ']'
			return a, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		raw, err := json.Marshal(t)
		return json.RawMessage(raw), err
	}
}

// mergeUnknown appends to known every key of orig that the Go type t does
// not declare, recursing into nested structs. Keys t declares are taken from
// known only, so clearing a known field really clears it.
func mergeUnknown(known, orig any, t reflect.Type) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	ko, ok1 := known.(object)
	oo, ok2 := orig.(object)
	if t.Kind() != reflect.Struct || !ok1 || !ok2 {
		return known
	}
	fields := jsonFields(t)
	for _, om := range oo {
		ft, isKnown := fields[om.key]
		if !isKnown {
			ko = append(ko, om)
			continue
		}
		for i := range ko {
			if ko[i].key == om.key {
				ko[i].val = mergeUnknown(ko[i].val, om.val, ft)
			}
		}
	}
	return ko
}

// jsonFields maps the JSON names of a struct's exported fields to their
// types; an embedded struct without a JSON name gives its own fields, as
// encoding/json writes them.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := make(map[string]reflect.Type, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			maps.Copy(out, jsonFields(f.Type))
			continue
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// ErrSymlink is returned (wrapped) when an output's path is a symbolic link.
var ErrSymlink = errors.New("is a symbolic link: refusing to write through it")

// WriteOutput writes a file that headroom produces into a directory it may
// not own (a report into a shared run directory): never through a symbolic
// link or into anything but a regular file planted at path, always as a
// new file (a temporary one, created exclusively, then renamed into place:
// a rename replaces the name, it does not follow it).
func WriteOutput(path string, data []byte) error {
	if st, err := os.Lstat(path); err == nil {
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s %w", path, ErrSymlink)
		case !st.Mode().IsRegular():
			return fmt.Errorf("%s: not a regular file (%v): refusing to replace it", path, st.Mode().Type())
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return writeFileAtomic(path, data)
}

// writeFileAtomic writes data to a temporary file beside path, syncs it and
// renames it into place.
func writeFileAtomic(path string, data []byte) error {
	dir, base := filepath.Split(path)
	f, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	// CreateTemp makes the file private (0600); run data is meant to be shared.
	merr := f.Chmod(0o644)
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(merr, werr, serr, cerr); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	committed(path) // a mirror to object storage uploads it (mirror.go)
	return nil
}
