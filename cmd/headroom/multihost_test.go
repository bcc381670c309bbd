package main

import (
	"encoding/json"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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
		t.Logf("network namespaces cannot be made here (%s): the %d client hosts are processes on loopback instead", why, n)
		h.ns, h.server = make([]string, n), make([]string, n)
		for i := range n {
			h.server[i] = fmt.Sprintf("127.0.0.1:%d", port)
		}
	} else {
		t.Logf("%d client hosts in %d network namespaces (%s), each reaching the server over its own veth pair", n, n, strings.Join(h.ns, ", "))
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
	// A test binary killed (a timeout, SIGKILL) runs no cleanup: the server
	// goes with it instead of staying behind.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
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
	t.Parallel() // waits on binaries it runs: see TestMain
	if testing.Short() {
		t.Skip("runs three sweeps of two levels against a real server (about 45 s)")
	}
	bin := headroomBinary(t)
	port := startStreamServer(t, "-ttft", "150ms", "-itl", "15ms")
	const shards = 3
	// Host `shards` is the single-host run's client: a client host of its
	// own too, so that both runs see the server from elsewhere (on its own
	// host a sweep also samples the server's CPU, a client elsewhere cannot).
	hosts := newClientHosts(t, shards+1, port)
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
			c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
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
	var single, merged string
	for attempt := 1; ; attempt++ {
		single = filepath.Join(dir, fmt.Sprint("single-", attempt))
		merged = filepath.Join(dir, fmt.Sprint("merged-", attempt))
		m := mergeRun(sharded(fmt.Sprint("a", attempt), -1, func() {
			out, err := hosts.command(shards, bin, append([]string{"sweep", "--base-url", "http://" + hosts.server[shards], "-o", single}, multiHostPlan...)...).CombinedOutput()
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
		// A warning (a shard's level started late because the one before
		// ran past --level-every on the starved host, say) means the two
		// runs did not meet the same load: that attempt is a miss too, and
		// the report forms are compared only between runs without one.
		sm, err := rundir.ReadManifest(single)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range append(sm.Warnings, m.Warnings...) {
			timing = append(timing, "a run warns: "+w)
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
	// The merged run's report is a single host's in form.
	sameReportForm(t, bin, single, merged, shards)

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

// sameReportForm renders the reports of a single-host run and of the
// merged run of the same plan and compares their form: the Markdown's
// skeleton (headings, how-to-read lines, fact labels, table heads and
// alignments, the charts' captions), the HTML's element skeleton (page
// one's layout, sections, chart elements, tables' header cells) and the
// report model's fields (analysis.json), with numbers and run names masked.
// Only one thing may be added, and must be: the method's note that the run
// was merged from N shards and how their clocks were aligned, which a
// reader needs to judge the run (a single host's report has no
// counterpart to it); and the model's manifest block naming the shards.
func sameReportForm(t *testing.T, bin, single, merged string, shards int) {
	t.Helper()
	forms := map[string]reportForm{}
	for _, run := range []string{single, merged} {
		out := run + "-report"
		if o, err := exec.Command(bin, "report", run, "-o", out, "--format", "both").CombinedOutput(); err != nil {
			t.Fatalf("report %s: %v\n%s", filepath.Base(run), err, o)
		}
		forms[run] = readReportForm(t, out, run)
	}
	a, b := forms[single], forms[merged]
	for _, part := range []struct {
		what string
		x, y []string
	}{
		{"Markdown skeleton", a.markdown, b.markdown},
		{"HTML skeleton", a.html, b.html},
	} {
		if d := firstDifference(part.x, part.y); d != "" {
			t.Errorf("the merged run's report differs in form from the single host's: %s: %s", part.what, d)
		} else {
			t.Logf("%s: the same %d lines", part.what, len(part.x))
		}
	}
	if only, extra := setDifference(a.model, b.model), setDifference(b.model, a.model); len(only)+len(extra) > 0 {
		t.Errorf("the merged run's report model differs in its fields from the single host's: only the single host's has %q; only the merged run's has %q", only, extra)
	} else {
		t.Logf("report model: the same %d fields", len(a.model))
	}
	note := fmt.Sprintf("Merged from %d of %d shards", shards, shards)
	if !strings.Contains(b.method, note) || strings.Contains(a.method, "Merged from") {
		t.Errorf("the method section should say %q for the merged run only:\nsingle: %s\nmerged: %s", note, a.method, b.method)
	}
}

// reportForm is what sameReportForm compares of one report.
type reportForm struct {
	markdown, html, model []string
	method                string // the Methodology section's text
}

var (
	digits     = regexp.MustCompile(`[0-9]+([.,:][0-9]+)*`)
	mdFact     = regexp.MustCompile(`^- \*\*[^*]+:\*\*`)
	htmlTag    = regexp.MustCompile(`<(h[1-4]|header|nav|section|div|figure|table|th|details)\b([^>]*)>([^<]*)`)
	htmlAttr   = regexp.MustCompile(`\b(id|class)="([^"]*)"`)
	statusWord = regexp.MustCompile(`\bstatus-[a-z-]+`)
	scripts    = regexp.MustCompile(`(?s)<script.*?</script>`)
)

func readReportForm(t *testing.T, out, run string) reportForm {
	t.Helper()
	mask := func(s string) string {
		s = strings.ReplaceAll(s, run, "RUN")
		s = strings.ReplaceAll(s, filepath.Base(run), "RUN")
		return digits.ReplaceAllString(s, "N")
	}
	var f reportForm
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(md), "\n")
	inMethod := false
	for i, l := range lines {
		if strings.HasPrefix(l, "#") {
			inMethod = strings.HasPrefix(l, "### Methodology")
		} else if inMethod {
			f.method += l + "\n"
		}
		switch {
		case strings.HasPrefix(l, "#"), strings.HasPrefix(l, "Chart (in report.html):"), strings.HasPrefix(l, "*") && strings.HasSuffix(l, "*"):
			f.markdown = append(f.markdown, mask(l))
		case mdFact.MatchString(l):
			f.markdown = append(f.markdown, mask(mdFact.FindString(l)))
		case strings.HasPrefix(l, "|---") || strings.HasPrefix(l, "|:--") || strings.HasPrefix(l, "|--:"):
			f.markdown = append(f.markdown, mask(lines[i-1]), l) // the head and the columns' alignment
		}
	}
	h, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	body := scripts.ReplaceAllString(string(h), "")
	for _, m := range htmlTag.FindAllStringSubmatch(body, -1) {
		e := m[1]
		for _, a := range htmlAttr.FindAllStringSubmatch(m[2], -1) {
			// a check's result colours its box: content, not form
			e += " " + a[1] + "=" + strings.TrimSpace(statusWord.ReplaceAllString(a[2], ""))
		}
		if m[1] == "th" || strings.HasPrefix(m[1], "h") && m[1] != "header" {
			e += " " + mask(strings.TrimSpace(m[3]))
		}
		f.html = append(f.html, e)
	}
	j, err := os.ReadFile(filepath.Join(out, "analysis.json"))
	if err != nil {
		t.Fatal(err)
	}
	var model any
	if err := json.Unmarshal(j, &model); err != nil {
		t.Fatal(err)
	}
	paths := map[string]bool{}
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if path == ".runs[].manifest" && k == "merged" {
					continue // the shards the run was merged from
				}
				walk(x, path+"."+k)
			}
		case []any:
			for _, x := range v {
				walk(x, path+"[]")
			}
		case string:
			if strings.HasSuffix(path, ".timeline.series[].name") {
				path += "=" + v // the series the timeline draws
			}
		}
		paths[path] = true
	}
	walk(model, "")
	for p := range paths {
		f.model = append(f.model, p)
	}
	sort.Strings(f.model)
	return f
}

// firstDifference says where two skeletons first differ ("" when equal).
func firstDifference(a, b []string) string {
	for i := range max(len(a), len(b)) {
		x, y := "(nothing)", "(nothing)"
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("line %d: single host %q, merged %q", i+1, x, y)
		}
	}
	return ""
}

// setDifference is the elements of a not in b.
func setDifference(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
