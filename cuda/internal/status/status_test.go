package status

import (
	"errors"
	"testing"
)

type code int32

func TestCodes(t *testing.T) {
	c := &Codes[code]{Library: "lib", Unnamed: "LIB_ERROR_", Names: map[code]string{1: "LIB_ERROR_ONE", 2: "LIB_ERROR_TWO"}, Hints: map[code]string{2: "do this"}}
	for _, tt := range []struct {
		c          code
		name, want string
	}{
		{1, "LIB_ERROR_ONE", "lib: f: LIB_ERROR_ONE (1)"},
		{2, "LIB_ERROR_TWO", "lib: f: LIB_ERROR_TWO (2): do this"},
		{77, "LIB_ERROR_77", "lib: f: LIB_ERROR_77 (77)"},
	} {
		if got := c.Name(tt.c); got != tt.name {
			t.Errorf("Name(%d) = %q", tt.c, got)
		}
		if got := c.Message("f", tt.c); got != tt.want {
			t.Errorf("Message(%d) = %q, want %q", tt.c, got, tt.want)
		}
	}
}

func TestCheck(t *testing.T) {
	sentinel := errors.New("not supported")
	c := &Codes[code]{Library: "lib", Unnamed: "E_", Names: map[code]string{3: "E_NOT_SUPPORTED"}, Sentinels: map[code]error{3: sentinel}}
	if err := c.Check("f", 0); err != nil {
		t.Errorf("success: %v", err)
	}
	err := c.Check("f(x)", 3)
	var e *Error[code]
	if !errors.As(err, &e) || e.Code != 3 || e.Call != "f(x)" || err.Error() != "lib: f(x): E_NOT_SUPPORTED (3)" || !errors.Is(err, sentinel) {
		t.Errorf("%v (%#v)", err, e)
	}
	if errors.Is(c.Check("f", 4), sentinel) {
		t.Error("code 4 matched code 3's sentinel")
	}
}
