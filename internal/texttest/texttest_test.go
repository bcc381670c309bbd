package texttest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps what Contains says.
type recorder struct {
	testing.TB
	errors, logs []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

func TestContains(t *testing.T) {
	r := &recorder{TB: t}
	Contains(r, "report.md", "the KV-cache wall from c=64", "KV-cache wall", "c=64")
	if len(r.errors) != 0 || len(r.logs) != 0 {
		t.Fatalf("all there: errors %q, logs %q", r.errors, r.logs)
	}
	Contains(r, "report.md", "the KV-cache wall from c=64", "KV-cache wall", "c=128", "TTFT")
	if !slices.Equal(r.errors, []string{`report.md lacks "c=128"`, `report.md lacks "TTFT"`}) {
		t.Errorf("errors %q", r.errors)
	}
	if !slices.Equal(r.logs, []string{"report.md:\nthe KV-cache wall from c=64"}) {
		t.Errorf("logs %q", r.logs)
	}
	long := &recorder{TB: t}
	Contains(long, "report.html", strings.Repeat("x", shown+1), "y")
	if len(long.errors) != 1 || len(long.logs) != 0 {
		t.Errorf("a long text is not printed: errors %q, logs %d", long.errors, len(long.logs))
	}
}
