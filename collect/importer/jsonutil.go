package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
)

// pythonJSON rewrites the non-standard literals Python's json module writes
// by default (NaN, Infinity, -Infinity) as null, outside strings, so that
// encoding/json can read files written by Python tools. Everything else is
// left byte for byte.
func pythonJSON(data []byte) []byte {
	if !bytes.Contains(data, []byte("NaN")) && !bytes.Contains(data, []byte("Infinity")) {
		return data
	}
	out := make([]byte, 0, len(data))
	inString, escaped := false, false
	for i := 0; i < len(data); i++ {
		c := data[i]
		if inString {
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch {
		case c == '"':
			inString = true
		case bytes.HasPrefix(data[i:], []byte("NaN")):
			out = append(out, "null"...)
			i += len("NaN") - 1
			continue
		case bytes.HasPrefix(data[i:], []byte("-Infinity")):
			out = append(out, "null"...)
			i += len("-Infinity") - 1
			continue
		case bytes.HasPrefix(data[i:], []byte("Infinity")):
			out = append(out, "null"...)
			i += len("Infinity") - 1
			continue
		}
		out = append(out, c)
	}
	return out
}

// jsonValues splits data into its top-level JSON values: one for a JSON
// file, several for JSON Lines or for results appended one after another
// (vllm bench serve --append-result). Errors name the line.
func jsonValues(data []byte) ([]json.RawMessage, error) {
	data = pythonJSON(data)
	dec := json.NewDecoder(bytes.NewReader(data))
	var vals []json.RawMessage
	for {
		var v json.RawMessage
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, describeDecodeError(data, dec.InputOffset(), err)
		}
		vals = append(vals, v)
	}
	if len(vals) == 0 {
		return nil, errors.New("the file is empty")
	}
	return vals, nil
}

func describeDecodeError(data []byte, off int64, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		off = se.Offset
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("invalid JSON at line %d: the file ends inside a value (truncated?)", lineOf(data, int64(len(data))))
	}
	return fmt.Errorf("invalid JSON at line %d: %w", lineOf(data, off), err)
}

// decodeStrict decodes JSON and names the line of a syntax or type error.
func decodeStrict(data []byte, v any) error {
	data = pythonJSON(data)
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return fmt.Errorf("invalid JSON at line %d: %w", lineOf(data, se.Offset), err)
		case errors.As(err, &te):
			return fmt.Errorf("line %d: %q is %s where %s belongs", lineOf(data, te.Offset), te.Field, jsonArticle(te.Value), jsonKind(te.Type))
		}
		return fmt.Errorf("invalid JSON: %w", err)
	}
	return nil
}

// jsonKind names, in JSON's words, what a Go destination type holds.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return "an object"
}

// jsonArticle turns encoding/json's name of a JSON value ("string",
// "number 1.5", "array") into words ("a string", "the number 1.5", "a list").
func jsonArticle(v string) string {
	switch {
	case strings.HasPrefix(v, "number "):
		return "the " + v
	case v == "array":
		return "a list"
	case v == "object":
		return "an object"
	case v == "bool":
		return "true or false"
	case v == "":
		return "a value"
	}
	return "a " + v
}

func lineOf(data []byte, off int64) int {
	return bytes.Count(data[:min(max(int(off), 0), len(data))], []byte("\n")) + 1
}

// objectKeys returns the top-level keys of a JSON object (nil if v is not
// an object).
func objectKeys(v json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(v, &m) != nil {
		return nil
	}
	return m
}

func has(m map[string]json.RawMessage, keys ...string) bool {
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}

// isNull reports whether a raw value is absent or JSON null.
func isNull(v json.RawMessage) bool {
	return len(bytes.TrimSpace(v)) == 0 || string(bytes.TrimSpace(v)) == "null"
}
