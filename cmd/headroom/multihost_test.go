package main

import (
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/collect/merge"
	"github.com/headroom-llm/headroom/internal/runtest"
	"github.com/headroom-llm/headroom/rundir"
)

// clientHosts are the test's client hosts: one network namespace each
// (ip netns, a veth pair to the host's namespace, where the server
// listens), or, where namespaces cannot be made, processes on loopback.
type clientHosts struct {
	ns     []string // "" on loopback
	server []string // the server's address as each host reaches it
}

// newClientHosts makes n client hosts for a server listening on port of
// every address of this namespace.
func newClientHosts(t *testing.T, n, port int) *clientHosts {
	h := &clientHosts{}
	if why := h.makeNamespaces(t, n, port); why != "" {
		t.Logf("network namespaces cannot be made here (%s): the %d shards run as processes on loopback instead", why, n)
		h.ns, h.server = make([]string, n), make([]string, n)
		for i := range n {
			h.server[i] = fmt.Sprintf("127.0.0.1:%d", port)
		}
	} else {
		t.Logf("%d shards in %d network namespaces (%s), each reaching the server over its own veth pair", n, n, strings.Join(h.ns, ", "))
	}
	return h
}

func (h *clientHosts) makeNamespaces(t *testing.T, n, port int) string {
	if os.Geteuid() != 0 {
		return "not root"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "no ip command (Debian package iproute2)"
	}
	tag := os.Getpid() % 100000
	octet := 100 + os.Getpid()%150
	run := func(args ...string) error {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
		return nil
	}
	for i := range n {
		ns := fmt.Sprintf("hr%d-%d", tag, i)
		host, peer := fmt.Sprintf("h%dv%dh", tag, i), fmt.Sprintf("h%dv%dn", tag, i)
		hostIP, nsIP := fmt.Sprintf("10.%d.%d.1", octet, i), fmt.Sprintf("10.%d.%d.2", octet, i)
		if err := run("netns", "add", ns); err != nil {
			return err.Error()
		}
		t.Cleanup(func() { run("netns", "del", ns) })
		for _, args := range [][]string{
			{"link", "add", host, "type", "veth", "peer", "name", peer},
			{"link", "set", peer, "netns", ns},
			{"addr", "add", hostIP + "/30", "dev", host},
			{"link", "set", host, "up"},
			{"-n", ns, "addr", "add", nsIP + "/30", "dev", peer},
			{"-n", ns, "link", "set", peer, "up"},
			{"-n", ns, "link", "set", "lo", "up"},
		} {
			if err := run(args...); err != nil {
				return err.Error()
			}
			if args[0] == "link" && args[1] == "add" {
				t.Cleanup(func() { run("link", "del", host) })
			}
		}
		h.ns = append(h.ns, ns)
		h.server = append(h.server, fmt.Sprintf("%s:%d", hostIP, port))
	}
	return ""
}

// command runs bin with args on client host i.
func (h *clientHosts) command(i int, bin string, args ...string) *exec.Cmd {
	if h.ns[i] == "" {
		return exec.Command(bin, args...)
	}
	return exec.Command("ip", append([]string{"netns", "exec", h.ns[i], bin}, args...)...)
}

// startStreamServer runs bench/streamserver on every address of this host.
func startStreamServer(t *testing.T, args ...string) int {
	bin := filepath.Join(t.TempDir(), "streamserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../../bench/streamserver").CombinedOutput(); err != nil {
		t.Fatalf("go build bench/streamserver: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(bin, append([]string{"-addr", fmt.Sprintf("0.0.0.0:%d", port)}, args...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitFor(t, "the stream server", 10*time.Second, func() bool {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return port
}

// The plan of the multi-host test: two closed-loop levels, short requests
// against a server with a fixed 150 ms to the first token and 15 ms
// between tokens, so that client-side noise is a small share of each time.
var multiHostPlan = []string{"--concurrency", "4,8", "--requests-per-level", "24", "--prompt-tokens", "16", "--output-tokens", "8",
	"--no-gpu", "--metrics-interval", "0", "--seed", "7"}

// TestShardsFromManyHostsMergeLikeOneHost runs a plan from one process and
// as three shards from three network namespaces against one server, merges
// the shards, and compares: the same requests per level, exactly; the same
// peak of requests in flight (the shards ran their levels at the same
// time, their streams adding up to the plan's); TTFT and TPOT p50 within
// 5 % (the two run at the same time, so they meet the same load on this
// shared machine). Then it runs the shards again and kills one with SIGKILL after its
// first level: the merged run names it, and its second level is partial.
func TestShardsFromManyHostsMergeLikeOneHost(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three sweeps of two levels against a real server (about 45 s)")
	}
	bin := headroomBinary(t)
	port := startStreamServer(t, "-ttft", "150ms", "-itl", "15ms")
	const shards = 3
	hosts := newClientHosts(t, shards, port)
	dir := t.TempDir()

	// sharded runs the plan as shards; alongside, once they start, it runs
	// also (the single-host run, so both meet the same load on this shared
	// machine).
	sharded := func(name string, kill int, also func()) []string {
		startT := time.Now().Add(8 * time.Second)
		start := startT.UTC().Format(time.RFC3339Nano)
		var dirs []string
		var cmds []*exec.Cmd
		for i := range shards {
			d := filepath.Join(dir, fmt.Sprintf("%s-shard-%d", name, i))
			dirs = append(dirs, d)
			c := hosts.command(i, bin, append([]string{"sweep", "--base-url", "http://" + hosts.server[i], "-o", d,
				"--shard", fmt.Sprintf("%d/%d", i, shards), "--start-at", start, "--level-every", "5s"}, multiHostPlan...)...)
			logf, err := os.Create(d + ".log")
			if err != nil {
				t.Fatal(err)
			}
			defer logf.Close()
			c.Stdout, c.Stderr = logf, logf
			c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			cmds = append(cmds, c)
		}
		if also != nil {
			time.Sleep(time.Until(startT))
			also()
		}
		if kill >= 0 {
			// after its first level is on disk, before its second ends
			waitFor(t, "shard's first level", 30*time.Second, func() bool {
				parts, _ := rundir.TableParts(dirs[kill], rundir.TableLevels)
				return len(parts) > 0
			})
			syscall.Kill(-cmds[kill].Process.Pid, syscall.SIGKILL) // ip netns exec and headroom
		}
		for i, c := range cmds {
			err := c.Wait()
			if i != kill && err != nil {
				log, _ := os.ReadFile(dirs[i] + ".log")
				t.Fatalf("shard %d: %v\n%s", i, err, log)
			}
		}
		return dirs
	}
	mergeRun := func(dirs []string, out string) *rundir.Manifest {
		o, err := exec.Command(bin, append([]string{"merge", "-o", out}, dirs...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("merge: %v\n%s", err, o)
		}
		t.Logf("headroom merge:\n%s", o)
		m, err := rundir.ReadManifest(out)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}

	// The timing comparison is repeated (at most three times) when it
	// misses: the client's times on this shared 2-core machine are noisy.
	// Counts, the peak in flight and the clocks are checked every time.
	var merged string
	for attempt := 1; ; attempt++ {
		single := filepath.Join(dir, fmt.Sprint("single-", attempt))
		merged = filepath.Join(dir, fmt.Sprint("merged-", attempt))
		m := mergeRun(sharded(fmt.Sprint("a", attempt), -1, func() {
			out, err := exec.Command(bin, append([]string{"sweep", "--base-url", fmt.Sprintf("http://127.0.0.1:%d", port), "-o", single}, multiHostPlan...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("single-host sweep: %v\n%s", err, out)
			}
		}), merged)
		if !m.Complete || m.Merged == nil || len(m.Merged.Shards) != shards {
			t.Fatalf("merged run: complete %v, merged %+v", m.Complete, m.Merged)
		}
		for _, s := range m.Merged.Shards {
			t.Logf("shard %d: clock %+.2f ms ± %.2f ms (flagged above the bound: %v)", s.Index, s.OffsetS*1e3, s.UncertaintyS*1e3, s.ClockFlagged)
			// One kernel clock for every namespace: the true offset is 0, and
			// must lie within the stated uncertainty.
			if math.Abs(s.OffsetS) > s.UncertaintyS+0.002 {
				t.Errorf("shard %d: clock offset %+.2f ms ± %.2f ms; the namespaces share one clock (0)", s.Index, s.OffsetS*1e3, s.UncertaintyS*1e3)
			}
		}
		a, b := levelFacts(t, single), levelFacts(t, merged)
		if len(a) != 2 || len(b) != 2 {
			t.Fatalf("levels: %d single, %d merged", len(a), len(b))
		}
		var timing []string
		for i := range a {
			x, y := a[i], b[i]
			t.Logf("attempt %d, level %d: single %d requests, peak %d in flight, TTFT p50 %.1f ms, TPOT p50 %.2f ms; merged %d, peak %d, %.1f ms, %.2f ms",
				attempt, i, x.sum.Requests, x.peak, x.sum.TTFTP50S*1e3, x.sum.TPOTP50S*1e3, y.sum.Requests, y.peak, y.sum.TTFTP50S*1e3, y.sum.TPOTP50S*1e3)
			if x.sum.Requests != y.sum.Requests || x.row.Requests != y.row.Requests || x.sum.OK != y.sum.OK {
				t.Errorf("level %d: %d requests (%d ok, level row %d) from one host, %d (%d ok, %d) merged",
					i, x.sum.Requests, x.sum.OK, x.row.Requests, y.sum.Requests, y.sum.OK, y.row.Requests)
			}
			if x.row.Concurrency != y.row.Concurrency || y.peak != int(y.row.Concurrency) || x.peak != y.peak {
				t.Errorf("level %d: concurrency %d, peak in flight %d from one host; %d and %d merged", i, x.row.Concurrency, x.peak, y.row.Concurrency, y.peak)
			}
			for _, v := range []struct {
				what string
				x, y float64
			}{{"TTFT", x.sum.TTFTP50S, y.sum.TTFTP50S}, {"TPOT", x.sum.TPOTP50S, y.sum.TPOTP50S}} {
				if math.Abs(v.y-v.x) > 0.05*v.x {
					timing = append(timing, fmt.Sprintf("level %d: %s p50 %.2f ms merged vs %.2f ms from one host: more than 5 %% apart", i, v.what, v.y*1e3, v.x*1e3))
				}
			}
		}
		if len(timing) == 0 {
			break
		}
		if attempt == 3 {
			t.Errorf("three attempts, the last: %s", strings.Join(timing, "; "))
			break
		}
		t.Logf("attempt %d missed (%s): again", attempt, strings.Join(timing, "; "))
	}
	// The merged run reads as any run does.
	if o, err := exec.Command(bin, "report", merged, "-o", filepath.Join(dir, "report")).CombinedOutput(); err != nil {
		t.Fatalf("report on the merged run: %v\n%s", err, o)
	}

	killed := mergeRun(sharded("b", 2, nil), filepath.Join(dir, "merged-killed"))
	if killed.Complete || killed.Merged == nil {
		t.Fatalf("a merge with a killed shard is complete: %+v", killed.Merged)
	}
	if got := killed.Merged.PartialLevels; len(got) != 1 || got[0] != 1 {
		t.Errorf("partial levels %v, want [1] (shard 2 was killed after level 0)", got)
	}
	if s := killed.Merged.Shards[2]; s.Complete || len(s.Levels) != 1 {
		t.Errorf("shard 2 in the manifest: %+v; want incomplete with level 0 only", s)
	}
	if !strings.Contains(strings.Join(killed.Warnings, "\n"), "shard 2 was killed") {
		t.Errorf("warnings do not name the killed shard: %q", killed.Warnings)
	}
}

// levelFact is what the test compares of one level.
type levelFact struct {
	row  rundir.LevelRow
	sum  merge.LevelSummary
	peak int // most measured requests in flight at once
}

func levelFacts(t *testing.T, dir string) []levelFact {
	t.Helper()
	levels := runtest.Table[rundir.LevelRow](t, dir, rundir.TableLevels)
	reqs := runtest.Table[rundir.RequestRow](t, dir, rundir.TableRequests)
	sums := merge.Summarize(reqs)
	var out []levelFact
	for i, l := range levels {
		f := levelFact{row: l}
		if i < len(sums) {
			f.sum = sums[i]
		}
		type ev struct {
			t int64
			d int
		}
		var evs []ev
		for _, r := range reqs {
			if r.LevelIndex == l.LevelIndex {
				evs = append(evs, ev{r.SendNS, 1}, ev{r.EndNS, -1})
			}
		}
		sort.Slice(evs, func(i, j int) bool { return evs[i].t < evs[j].t || evs[i].t == evs[j].t && evs[i].d < evs[j].d })
		n := 0
		for _, e := range evs {
			n += e.d
			f.peak = max(f.peak, n)
		}
		out = append(out, f)
	}
	return out
}
