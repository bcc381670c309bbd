package analyze

import (
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/rundir"
)

func TestLogClock(t *testing.T) {
	// Out of order, line 2 missing, a row with an impossible line 0.
	c, err := logClock([]rundir.ServerLogLineRow{{Line: 3, RecvNS: 30}, {Line: 1, RecvNS: 10}, {Line: 0, RecvNS: 99}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		line int64
		ns   int64
		ok   bool
	}{{1, 10, true}, {2, 0, false}, {3, 30, true}, {0, 0, false}, {4, 0, false}, {-1, 0, false}} {
		if ns, ok := c.RecvTimeNS(tt.line); ns != tt.ns || ok != tt.ok {
			t.Errorf("line %d: %d, %v; want %d, %v", tt.line, ns, ok, tt.ns, tt.ok)
		}
	}
	if c, err := logClock(nil); err != nil || len(c) != 0 {
		t.Errorf("empty table: %v, %v", c, err)
	}
	// A corrupt line number is an error, not a huge allocation.
	_, err = logClock([]rundir.ServerLogLineRow{{Line: 1 << 40, RecvNS: 1}})
	if err == nil || !strings.Contains(err.Error(), rundir.TableServerLogLines) {
		t.Errorf("corrupt line: %v", err)
	}
}
