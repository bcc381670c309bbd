package loadgen

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

func scanAll(r io.Reader, maxLine int) ([]string, error) {
	s := newLineScanner(r, 16, maxLine)
	var lines []string
	for {
		line, _, err := s.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return lines, nil
			}
			return lines, err
		}
		lines = append(lines, string(line))
	}
}

func TestLineScanner(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"data: a\n\ndata: b\n\n", []string{"data: a", "", "data: b", ""}},
		{"data: a\r\n\r\n", []string{"data: a", ""}},
		{"no newline at end", []string{"no newline at end"}},
		{strings.Repeat("x", 1000) + "\nshort\n", []string{strings.Repeat("x", 1000), "short"}},
		{"", nil},
	}
	for _, tt := range tests {
		// one byte per Read, to cross every buffer boundary
		got, err := scanAll(iotest.OneByteReader(strings.NewReader(tt.in)), 0)
		if err != nil || strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("%q: got %q, %v", tt.in, got, err)
		}
	}
	if _, err := scanAll(strings.NewReader(strings.Repeat("y", 100)+"\n"), 50); !errors.Is(err, errLineTooLong) {
		t.Errorf("long line: %v", err)
	}
	if _, err := scanAll(iotest.TimeoutReader(strings.NewReader("data: a\ndata: b\n")), 0); !errors.Is(err, iotest.ErrTimeout) {
		t.Errorf("read error: %v", err)
	}
}

func TestSSEField(t *testing.T) {
	for _, tt := range []struct{ in, field, value string }{
		{"data: {}", "data", "{}"}, {"data:{}", "data", "{}"}, {"data:  x", "data", " x"},
		{": keep-alive", "", ""}, {"event: error", "event", "error"}, {"data", "data", ""}, {"", "", ""},
	} {
		f, v := sseField([]byte(tt.in))
		if string(f) != tt.field || string(v) != tt.value {
			t.Errorf("%q: %q %q", tt.in, f, v)
		}
	}
}

// The scanner splits any input exactly as splitting on LF (and trimming CR) does.
func FuzzLineScanner(f *testing.F) {
	f.Add([]byte("data: a\r\n\r\ndata: [DONE]\n"), uint8(3))
	f.Add([]byte("x\n\n\ny"), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		r := &chunkReader{data: data, n: int(chunk%17) + 1}
		got, err := scanAll(r, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		if len(data) > 0 {
			parts := bytes.Split(data, []byte("\n"))
			if len(parts[len(parts)-1]) == 0 {
				parts = parts[:len(parts)-1]
			}
			for i, p := range parts {
				if i < len(parts)-1 || bytes.HasSuffix(data, []byte("\n")) {
					p = bytes.TrimSuffix(p, []byte("\r"))
				}
				want = append(want, string(p))
			}
		}
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
			t.Fatalf("%q: got %q, want %q", data, got, want)
		}
	})
}

type chunkReader struct {
	data []byte
	n    int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.n)], r.data)
	r.data = r.data[n:]
	return n, nil
}
