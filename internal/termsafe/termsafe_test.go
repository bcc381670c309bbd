package termsafe

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain text, tabs\tand\nnewlines; ünïcode ✓", "plain text, tabs\tand\nnewlines; ünïcode ✓"},
		{"\x1b]0;pwned\x07title", `\x1b]0;pwned\x07title`},                   // OSC window title
		{"\x1b[2J\x1b[Hclear", `\x1b[2J\x1b[Hclear`},                         // clear screen
		{"\x1b]52;c;ZWNobyBwd25lZA==\x07", `\x1b]52;c;ZWNobyBwd25lZA==\x07`}, // OSC 52 clipboard
		{"over\rwrite", `over\rwrite`},
		{"c1 \u009b31m csi", `c1 \u009b31m csi`},
		{"bad \xff\xfe utf8", `bad \xff\xfe utf8`},
		{"del\x7f", `del\x7f`},
	} {
		if got := Escape(tt.in); got != tt.want {
			t.Errorf("Escape(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// FuzzEscape: whatever comes in, nothing a terminal acts on comes out, and
// text without control characters is unchanged.
func FuzzEscape(f *testing.F) {
	f.Add("\x1b]0;x\x07")
	f.Add("ok\n")
	f.Add("\u009b\xc2")
	f.Fuzz(func(t *testing.T, s string) {
		out := Escape(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Escape(%q) = %q: invalid UTF-8", s, out)
		}
		for _, r := range out {
			if r < 0x20 && r != '\t' && r != '\n' || r == 0x7f || r >= 0x80 && r < 0xa0 {
				t.Fatalf("Escape(%q) = %q keeps %U", s, out, r)
			}
		}
		if safe(s) && out != s {
			t.Fatalf("safe %q changed to %q", s, out)
		}
	})
}

func TestWriter(t *testing.T) {
	var b bytes.Buffer
	w := Writer{&b}
	n, err := w.Write([]byte("x\x1b[2Jy\n"))
	if err != nil || n != 7 || b.String() != `x\x1b[2Jy`+"\n" || Raw(w) != &b || Raw(&b) != &b {
		t.Errorf("%d %v %q", n, err, b.String())
	}
	if strings.Contains(b.String(), "\x1b") {
		t.Error("escape written")
	}
}
