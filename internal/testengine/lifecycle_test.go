package testengine

import (
	"testing"
	"time"
)

func TestPortWriter(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		want   int // 0: no port
	}{
		{"one line", []string{"listening port=4321 host=127.0.0.1\n"}, 4321},
		{"split writes", []string{"listen", "ing port=12", "345\nlater\n"}, 12345},
		{"after other output", []string{"warming up\nlistening port=80\n"}, 80},
		{"no newline yet", []string{"listening port=80"}, 0},
		{"not the line", []string{"listening port=abc\nlistening on 80\n"}, 0},
		{"port zero", []string{"listening port=0\n"}, 0},
		{"first one wins", []string{"listening port=1\nlistening port=2\n"}, 1},
	} {
		w := &portWriter{ports: make(chan int, 1)}
		for _, s := range tc.writes {
			if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
				t.Fatalf("%s: Write = %d, %v", tc.name, n, err)
			}
		}
		got := 0
		select {
		case got = <-w.ports:
		default:
		}
		if got != tc.want {
			t.Errorf("%s: port %d, want %d", tc.name, got, tc.want)
		}
	}
}

// The engine never outlives its test: cleanup stops it, and it exits by itself when the test
// process dies (its stdin, held by the test, ends).
func TestEngineLifetime(t *testing.T) {
	t.Parallel()
	var first *Engine
	t.Run("cleanup stops it", func(t *testing.T) {
		first = Start(t, Options{Sequences: 1, CtxPerSeq: 32})
	})
	select {
	case <-first.done:
	default:
		t.Error("the engine still runs after its test's cleanup")
	}

	e := Start(t, Options{Sequences: 1, CtxPerSeq: 32})
	if err := e.stdin.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.done:
		if e.cmd.ProcessState.ExitCode() != 0 {
			t.Errorf("exit code %d after stdin ended, want 0", e.cmd.ProcessState.ExitCode())
		}
	case <-time.After(10 * time.Second):
		t.Error("the engine did not exit within 10 s of its stdin ending")
	}
}
