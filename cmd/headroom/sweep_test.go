package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/internal/fakeserver"
	"github.com/headroom-llm/headroom/rundir"
)

// tinyServer streams "a" tokens for any completion request.
func tinyServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(fakeserver.Handler("tiny", func(w http.ResponseWriter, r *http.Request, _ fakeserver.Completion) {
		fakeserver.Stream(w, r, fakeserver.Reply{Tokens: 3, PromptTokens: 10})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestSweepCommand(t *testing.T) {
	srv := tinyServer(t)
	dir := filepath.Join(t.TempDir(), "run")
	code, out, errs := headroom(t, "sweep", "--base-url", srv.URL, "--concurrency", "1,2", "--requests-per-level", "2",
		"--warmup", "0", "--output-tokens", "3", "--prompt-tokens", "20", "--metrics-interval", "0", "--no-gpu", "-o", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, dir) || !strings.Contains(out, "complete run") {
		t.Errorf("stdout %q", out)
	}
	if !strings.Contains(errs, "level 2/2 c=2") {
		t.Errorf("no progress on stderr: %q", errs)
	}
	run, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	reqs, _ := rundir.ReadTable[rundir.RequestRow](dir, rundir.TableRequests)
	if !run.Manifest.Complete || len(reqs) != 4 || run.Manifest.Engine.Name != "vllm" {
		t.Errorf("complete %v, %d requests, engine %+v", run.Manifest.Complete, len(reqs), run.Manifest.Engine)
	}
}

func TestSweepUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"sweep", "--endpoint", "bogus"},
		{"sweep", "--concurrency", "1,x"},
		{"sweep", "--rate", "1,2", "--concurrency", "1,2"},
		{"sweep", "--prompt-dist", "zipf"},
		{"sweep", "--server-log", "a", "--server-cmd", "b"},
	} {
		code, _, errs := headroom(t, args...)
		if code != 2 || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line", args, code, errs)
		}
	}
}

func TestSweepServerDown(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	code, out, errs := headroom(t, "sweep", "--base-url", "http://127.0.0.1:1", "--no-gpu", "-o", dir)
	if code != 1 || !strings.Contains(errs, "127.0.0.1:1") {
		t.Errorf("exit %d, stderr %q", code, errs)
	}
	// a failed start measured nothing: it says so, suggests no --resume,
	// and leaves nothing behind (issue 21 item 11)
	if !strings.Contains(errs, "nothing was measured") || strings.Contains(out+errs, "--resume") {
		t.Errorf("stdout %q stderr %q", out, errs)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s was left behind (%v)", dir, err)
	}

	// a started server that failed says why in its log: that is kept
	addr, err := fakeserver.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(t.TempDir(), "run")
	code, out, errs = headroom(t, "sweep", "--base-url", "http://"+addr, "--server-cmd", "sh -c 'echo bind: address already in use; exit 1'",
		"--no-gpu", "-o", dir)
	if code != 1 || !strings.Contains(errs, "nothing was measured") || !strings.Contains(errs, "server.log") || strings.Contains(out+errs, "--resume") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errs)
	}
	if log, err := os.ReadFile(filepath.Join(dir, rundir.ServerLogFile)); !strings.Contains(string(log), "address already in use") {
		t.Errorf("server.log %q (%v)", log, err)
	}
}
