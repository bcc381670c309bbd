package rundir

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	data, err := os.ReadFile(path)
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

// EncodeManifest renders a manifest as indented JSON, merging back any
// fields from m.Extra that the Manifest type does not know.
func EncodeManifest(m *Manifest) ([]byte, error) {
	known, err := toGeneric(m)
	if err != nil {
		return nil, err
	}
	if len(m.Extra) > 0 {
		var orig any
		dec := json.NewDecoder(bytes.NewReader(m.Extra))
		dec.UseNumber()
		if err := dec.Decode(&orig); err == nil {
			known = mergeUnknown(known, orig, reflect.TypeOf(*m))
		}
	}
	out, err := json.MarshalIndent(known, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
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

func toGeneric(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out any
	err = dec.Decode(&out)
	return out, err
}

// mergeUnknown copies into known every key of orig that the Go type t does
// not declare, recursing into nested structs. Keys t declares are taken from
// known only, so clearing a known field really clears it.
func mergeUnknown(known, orig any, t reflect.Type) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return known
	}
	origObj, ok := orig.(map[string]any)
	if !ok {
		return known
	}
	knownObj, ok := known.(map[string]any)
	if !ok {
		return known
	}
	fields := jsonFields(t)
	for k, ov := range origObj {
		ft, isKnown := fields[k]
		if !isKnown {
			knownObj[k] = ov
			continue
		}
		if kv, present := knownObj[k]; present {
			knownObj[k] = mergeUnknown(kv, ov, ft)
		}
	}
	return knownObj
}

// jsonFields maps the JSON names of a struct's exported fields to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := make(map[string]reflect.Type, t.NumField())
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
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
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
