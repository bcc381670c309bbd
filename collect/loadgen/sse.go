package loadgen

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"time"
)

// DefaultMaxLineBytes bounds one line of a server-sent event stream. A chunk
// of an OpenAI-compatible stream is a few hundred bytes; a line past this is
// a broken server, not a long token.
const DefaultMaxLineBytes = 4 << 20

// errLineTooLong is returned when a line exceeds the scanner's limit.
var errLineTooLong = errors.New("sse: line longer than the limit")

// lineScanner splits a server-sent event stream into lines, with the time
// each line's last byte was read from the connection. It is a hand-rolled
// bufio: one buffer per stream, no allocation per line, and a clock reading
// only when a Read returns data (all lines completed by one Read arrived
// together, so they share its time).
type lineScanner struct {
	r          io.Reader
	buf        []byte
	start, end int       // unread bytes are buf[start:end]
	readAt     time.Time // when the last Read returned data
	maxLine    int
	err        error // sticky read error
}

func newLineScanner(r io.Reader, bufSize, maxLine int) *lineScanner {
	if maxLine <= 0 {
		maxLine = DefaultMaxLineBytes
	}
	return &lineScanner{r: r, buf: make([]byte, bufSize), maxLine: maxLine}
}

// next returns the next line without its terminator (LF or CRLF) and the
// time its end arrived. The line is valid until the next call. At the end of
// the stream it returns a final unterminated line, if any, and then the read
// error (io.EOF for a clean end).
func (s *lineScanner) next() ([]byte, time.Time, error) {
	for {
		if i := bytes.IndexByte(s.buf[s.start:s.end], '\n'); i >= 0 {
			line := s.buf[s.start : s.start+i]
			s.start += i + 1
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			return line, s.readAt, nil
		}
		if s.err != nil {
			if s.start < s.end { // unterminated last line
				line := s.buf[s.start:s.end]
				s.start = s.end
				return line, s.readAt, nil
			}
			return nil, s.readAt, s.err
		}
		if s.end-s.start >= s.maxLine {
			s.err = fmt.Errorf("%w (%d bytes)", errLineTooLong, s.maxLine)
			return nil, s.readAt, s.err
		}
		s.fill()
	}
}

// fill reads once into the free end of the buffer, first moving unread
// bytes to the front or growing the buffer for a long line.
func (s *lineScanner) fill() {
	if s.start > 0 && s.end == len(s.buf) {
		s.end = copy(s.buf, s.buf[s.start:s.end])
		s.start = 0
	} else if s.start == s.end {
		s.start, s.end = 0, 0
	}
	if s.end == len(s.buf) {
		grown := make([]byte, min(2*len(s.buf), s.maxLine+1))
		s.end = copy(grown, s.buf[s.start:s.end])
		s.start = 0
		s.buf = grown
	}
	n, err := s.r.Read(s.buf[s.end:])
	if n > 0 {
		s.readAt = time.Now()
		s.end += n
	}
	if err != nil {
		s.err = err
	}
}

// sseField splits an event stream line into field and value as the SSE
// specification does: "field: value", "field:value", or a lone field name.
// Comment lines (starting with ':') return an empty field.
func sseField(line []byte) (field, value []byte) {
	if len(line) == 0 || line[0] == ':' {
		return nil, nil
	}
	i := bytes.IndexByte(line, ':')
	if i < 0 {
		return line, nil
	}
	value = line[i+1:]
	if len(value) > 0 && value[0] == ' ' {
		value = value[1:]
	}
	return line[:i], value
}
