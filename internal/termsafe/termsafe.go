// Package termsafe keeps text from outside (a server's error body, a log
// line, a label from a shared run) from acting on the terminal it is
// printed to: escape sequences can retitle the window, clear the screen,
// rewrite earlier lines or set the clipboard (OSC 52). Every control
// character is written visibly instead, as Go writes it in a quoted string.
package termsafe

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// Escape returns s with every control character except tab and newline
// written visibly: C0 (ESC as \x1b, CR as \r, BEL …), DEL and C1
// (U+0080–U+009F, which some terminals take as CSI and OSC too), and every
// invalid UTF-8 byte as \xNN.
func Escape(s string) string {
	if safe(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\t' || r == '\n':
			b.WriteRune(r)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r >= 0x80 && r < 0xa0:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// safe reports whether s has nothing to escape (the common case, no copy).
func safe(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && c != '\t' && c != '\n' || c == 0x7f || c >= 0x80 {
			if c >= 0x80 {
				return safeUTF8(s[i:])
			}
			return false
		}
	}
	return true
}

func safeUTF8(s string) bool {
	for _, r := range s {
		if r == utf8.RuneError || r < 0x20 && r != '\t' && r != '\n' || r == 0x7f || r >= 0x80 && r < 0xa0 {
			return false
		}
	}
	return true
}

// Writer escapes everything written through it (Escape). Each Write is
// escaped on its own: a program that writes whole lines loses nothing.
type Writer struct{ W io.Writer }

// Write escapes p and writes it; it reports len(p) written when the
// escaped text was.
func (w Writer) Write(p []byte) (int, error) {
	s := Escape(string(p))
	if _, err := io.WriteString(w.W, s); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Raw is the writer underneath, for a program's own control sequences (a
// progress line redrawn in place) and for telling a terminal from a pipe.
func Raw(w io.Writer) io.Writer {
	if sw, ok := w.(Writer); ok {
		return sw.W
	}
	return w
}
