package sweep

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/collect/server"
	"github.com/headroom-llm/headroom/internal/fakeserver"
	"github.com/headroom-llm/headroom/rundir"
)

// freeAddr is a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	addr, err := fakeserver.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

// serverCmdSweep is a short sweep that starts its server with cmd and
// sends its load to addr.
func serverCmdSweep(t *testing.T, addr, cmd string, opts ...Option) *Sweep {
	t.Helper()
	return mustNew(t, "http://"+addr, append([]Option{WithServerCmd(cmd, 20*time.Second), WithLevels(1, 2),
		WithRequestsPerLevel(6), WithWarmup(0), WithPromptTokens(Fixed(20)), WithOutputTokens(Fixed(4)),
		WithNoGPU(), WithMetricsInterval(0), WithMaxErrorRate(1)}, opts...)...)
}

// An old server already holds the port: the new one cannot bind it and
// exits, and the sweep must not measure the old one under the new one's
// flags. It fails before starting anything, naming the port; the old
// server receives no request.
func TestServerCmdPortTaken(t *testing.T) {
	stale := newFakeServer(t, nil)
	addr := strings.TrimPrefix(stale.URL, "http://")
	s := serverCmdSweep(t, addr, fakeserver.Command(fakeserver.Options{Addr: addr}))
	_, run, reqs, _, err := recordRun(t, s, context.Background())
	if err == nil || !strings.Contains(err.Error(), "already accepts connections") || !strings.Contains(err.Error(), addr) {
		t.Fatalf("err %v: want the port named as in use", err)
	}
	if n := stale.requests.Load(); n > 0 || len(reqs) > 0 {
		t.Errorf("the old server got %d generation requests, the run has %d rows", n, len(reqs))
	}
	if run.Manifest.Complete || run.Manifest.Stopped == nil || run.Manifest.Stopped.Phase != "start server" {
		t.Errorf("manifest: complete %v, stopped %+v", run.Manifest.Complete, run.Manifest.Stopped)
	}
}

// The process that answers must be the one started: a server command that
// never listens, while another process takes the port after headroom
// checked it was free, is refused rather than measured.
func TestServerCmdAnsweredByAnotherProcess(t *testing.T) {
	addr, err := fakeserver.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	other := newFakeServer(t, nil) // replaced by one on addr below
	other.Close()
	var impostor atomic.Int64
	logf := func(format string, args ...any) {
		if strings.HasPrefix(fmt.Sprintf(format, args...), "starting the server") {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				impostor.Add(1)
				other.handle(w, r)
			})}
			go srv.Serve(ln)
			t.Cleanup(func() { srv.Close() })
		}
	}
	s := serverCmdSweep(t, addr, "sleep 30", WithLogf(logf))
	_, _, reqs, _, err := recordRun(t, s, context.Background())
	if err == nil || !strings.Contains(err.Error(), "not the one headroom started") {
		t.Fatalf("err %v: want the listener named as another process", err)
	}
	if len(reqs) > 0 {
		t.Errorf("%d requests measured against another process", len(reqs))
	}
}

// The started server exits in the middle of the sweep: the sweep stops at
// once, as an error saying so, even though --max-error-rate 1 would have
// gone on recording connection errors.
func TestServerCmdExitsMidSweep(t *testing.T) {
	addr, err := fakeserver.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	// preparation sends 3 requests (a probe and two to size prompts), then
	// level 1's eight; the server exits during level 2
	cmd := fakeserver.Command(fakeserver.Options{Addr: addr, ExitAfter: 13, TokenDelay: 5 * time.Millisecond})
	s := serverCmdSweep(t, addr, cmd, WithLevels(1, 2, 4), WithRequestsPerLevel(8))
	_, run, _, levels, err := recordRun(t, s, context.Background())
	if err == nil || !strings.Contains(err.Error(), "the server headroom started exited") {
		t.Fatalf("err %v: want the server's exit", err)
	}
	st := run.Manifest.Stopped
	if run.Manifest.Complete || st == nil || st.Reason != "error" || st.Level == nil || *st.Level != 1 || !strings.Contains(st.Error, "exited") {
		t.Errorf("manifest: complete %v, stopped %+v", run.Manifest.Complete, st)
	}
	if len(levels) != 2 || !levels[0].Complete || levels[1].Complete {
		t.Errorf("levels %+v: want level 1 complete, level 2 cut", levels)
	}
}

// A sweep killed with kill -9 leaves its server's process group in
// server.pid; a resume stops that server before it starts its own, so the
// orphan is never measured.
func TestResumeStopsTheServerAKilledSweepLeft(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(t.TempDir(), "orphan.pid")
	addr, err := fakeserver.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	orphan, err := server.Start(fakeserver.Command(fakeserver.Options{Addr: addr, PIDFile: pidFile}), func([]byte, time.Time) {})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { orphan.Stop(time.Second) })
	if err := orphan.WritePIDFile(dir); err != nil {
		t.Fatal(err)
	}
	waitListening(t, addr)
	msg, err := server.KillLeftover(dir, 5*time.Second)
	if err != nil || !strings.Contains(msg, "stopped the server") {
		t.Fatalf("KillLeftover: %q, %v", msg, err)
	}
	select {
	case <-orphan.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("the orphan still runs")
	}
	if _, err := os.Stat(filepath.Join(dir, server.PIDFile)); !os.IsNotExist(err) {
		t.Errorf("server.pid left behind: %v", err)
	}
	if msg, err := server.KillLeftover(dir, time.Second); msg != "" || err != nil {
		t.Errorf("second KillLeftover: %q %v", msg, err)
	}
}

func waitListening(t *testing.T, addr string) {
	t.Helper()
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("nothing listens on %s", addr)
		}
	}
}

// The happy path: a server started by --server-cmd that listens itself is
// confirmed as the listener, measured, and stopped; server.pid is gone.
func TestServerCmdConfirmedAndStopped(t *testing.T) {
	addr, err := fakeserver.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	s := serverCmdSweep(t, addr, fakeserver.Command(fakeserver.Options{Addr: addr}))
	dir, run, reqs, _, err := recordRun(t, s, context.Background())
	if err != nil || !run.Manifest.Complete || len(reqs) != 12 {
		t.Fatalf("err %v, complete %v, %d requests", err, run.Manifest.Complete, len(reqs))
	}
	for _, n := range run.Manifest.Notes {
		if strings.Contains(n, "could not confirm") {
			t.Errorf("note: %s", n)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, server.PIDFile)); !os.IsNotExist(err) {
		t.Errorf("server.pid left after a clean stop: %v", err)
	}
	if _, err := rundir.Open(dir); err != nil {
		t.Fatal(err)
	}
}
