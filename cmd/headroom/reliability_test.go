package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/analyze"
	"github.com/headroom-llm/headroom/cuda"
	"github.com/headroom-llm/headroom/internal/fakecuda"
	"github.com/headroom-llm/headroom/internal/fakeserver"
	"github.com/headroom-llm/headroom/internal/runtest"
	"github.com/headroom-llm/headroom/rundir"
)

// faultyServer streams 5 tokens per request (1 ms apart) and answers 503
// to the generation requests for which fail(n) is true, n counting from 1.
func faultyServer(t *testing.T, key string, fail func(n int64) bool) *httptest.Server {
	var n atomic.Int64
	complete := fakeserver.Handler("faulty", func(w http.ResponseWriter, r *http.Request, body fakeserver.Completion) {
		if fail(n.Add(1)) {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, `{"error":{"message":"overloaded; your credentials were %s"}}`, r.Header.Get("Authorization"))
			return
		}
		fakeserver.Stream(w, r, fakeserver.Reply{Tokens: body.MaxTokens, PromptTokens: len(strings.Fields(body.Prompt)), Delay: time.Millisecond})
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if key != "" && r.Header.Get("Authorization") != "Bearer "+key {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		if r.URL.Path == "/version" {
			// a careless server that reports its own key
			fmt.Fprintf(w, `{"engine":"faulty","version":"1.0","api_key":%q}`, key)
			return
		}
		complete(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A sweep with failures: every request has a row, the report shows each
// level's errors by class, a level over the error limit is marked as not
// sustained (table, chart, analysis.json) and cannot be the peak, and the
// peak's own failures are named in the headline.
func TestFailuresAreVisibleInTheReport(t *testing.T) {
	// Preparing takes 3 requests (a probe and two calibrations); level 0
	// (c=1) is requests 4..103 with one failure (1%, within the limit),
	// level 1 (c=2) is 104..203 with every fifth failing (20%).
	srv := faultyServer(t, "", func(n int64) bool { return n == 50 || n > 103 && n%5 == 0 })
	dir := filepath.Join(t.TempDir(), "run")
	code, out, errs := headroom(t, "sweep", "--base-url", srv.URL, "--concurrency", "1,2", "--requests-per-level", "100", "--warmup", "0",
		"--prompt-tokens", "20", "--output-tokens", "5", "--max-error-rate", "1", "--no-gpu", "--metrics-interval", "0", "-o", dir)
	if code != 0 || !strings.Contains(errs, "errors 20") {
		t.Fatalf("sweep: exit %d\n%s\n%s", code, out, errs)
	}
	if code, _, errs := headroom(t, "report", dir); code != 0 {
		t.Fatalf("report: exit %d: %s", code, errs)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{
		"| 1 | 100 | 1 (1.0%: http\\_error 1) |",
		"| 2 (not sustained: 20% failed) | 100 | 20 (20%: http\\_error 20) |",
		"at concurrency 1; 1 of 100 requests failed",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	html, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	if !bytes.Contains(html, []byte("not sustained: 20% failed")) || !bytes.Contains(html, []byte("Red triangles")) {
		t.Error("report.html does not mark the unsustained level")
	}
	var rep analyze.Report
	data, _ := os.ReadFile(filepath.Join(dir, "analysis.json"))
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	sw := rep.Runs[0].Sweep
	if len(sw.Levels) != 2 || !sw.Levels[0].Sustained || sw.Levels[1].Sustained || sw.Knees.PeakConcurrency != 1 ||
		sw.Levels[1].ErrorsByClass["http_error"] != 20 {
		t.Errorf("analysis: levels %+v, peak at c=%d", sw.Levels, sw.Knees.PeakConcurrency)
	}
	reqs, _ := rundir.ReadTable[rundir.RequestRow](dir, rundir.TableRequests)
	for _, r := range reqs {
		if r.Status == "" || r.Status != rundir.StatusOK && (r.HTTPStatus != 503 || !strings.Contains(r.Error, "Retry-After: 0")) {
			t.Errorf("%s: status %q HTTP %d error %q", r.RequestID, r.Status, r.HTTPStatus, r.Error)
		}
	}
	if len(reqs) != 200 {
		t.Errorf("%d request rows, want 200", len(reqs))
	}
}

// Every secret a sweep knows stays out of every byte it writes and prints,
// the report's included: the base URL's user, password and query secret
// (which connection errors, preparation errors and the server's access log
// echo, and its Basic authorization, which the server echoes), database and
// cache secrets given to the server as variables, flags and headers; on a
// run whose started server exits mid-sweep, one whose server goes away and
// leaves connection errors, one that cannot prepare, and one whose base URL
// is refused.
func TestSecretsInEveryByte(t *testing.T) {
	const (
		user, pass = "alice", "pa55wordQ7"
		query      = "QSECRETq8z"
		pg, my     = "pgSecret11", "mySecret22"
		db, redis  = "dbSecret33", "redisSecret44"
		psw, hdr   = "pswSecret55", "hdrSecret66"
	)
	basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + pass))
	secrets := []string{"//" + user, user + ":", pass, query, basic, pg, my, db, redis, psw, hdr}
	grep := func(what string, texts map[string]string) {
		t.Helper()
		for where, text := range texts {
			for _, s := range secrets {
				if strings.Contains(text, s) {
					t.Errorf("%s: %s contains %q", what, where, s)
				}
			}
		}
	}
	baseURL := func(addr string) string { return "http://" + user + ":" + pass + "@" + addr + "/?api_key=" + query }
	sweep := func(addr string, extra ...string) (dir string, code int, output string) {
		dir = filepath.Join(t.TempDir(), "run")
		code, out, errs := headroom(t, append([]string{"sweep", "--base-url", baseURL(addr), "--concurrency", "1,2,4",
			"--requests-per-level", "8", "--warmup", "0", "--prompt-tokens", "20", "--output-tokens", "4", "--max-error-rate", "1",
			"--no-gpu", "--metrics-interval", "100ms", "-o", dir}, extra...)...)
		return dir, code, out + errs
	}
	report := func(dir string) string {
		code, out, errs := headroom(t, "report", dir)
		if code != 0 {
			t.Fatalf("report: exit %d: %s", code, errs)
		}
		return out + errs
	}

	// 1. --server-cmd: the server prints its arguments and every request
	// (URI and authorization), echoes them in every third error and in a
	// /metrics label, and exits during the second level.
	addr, err := fakeserver.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	serverCmd := "PGPASSWORD=" + pg + " MYSQL_PWD=" + my + " DB_PASS=" + db + " REDIS_AUTH=" + redis + " " +
		fakeserver.Command(fakeserver.Options{Addr: addr, EchoEvery: 3, ExitAfter: 16, TokenDelay: time.Millisecond},
			"-psw", psw, "--header", "X-Api-Key:", hdr)
	dir, code, out := sweep(addr, "--server-cmd", serverCmd)
	if code != 1 || !strings.Contains(out, "exited") {
		t.Fatalf("sweep: exit %d, want 1 for the server's exit\n%s", code, out)
	}
	out += report(dir)
	texts := runtest.Text(t, dir)
	texts["output"] = out
	grep("a run whose started server exits", texts)
	log := texts[filepath.Join(dir, rundir.ServerLogFile)]
	if !strings.Contains(log, "-psw <redacted> --header X-Api-Key: <redacted>") || !strings.Contains(log, "api_key=xxxxx") ||
		!strings.Contains(log, "Basic <redacted>") {
		t.Errorf("server.log does not show the redacted arguments and requests:\n%s", log)
	}
	if !strings.Contains(texts[filepath.Join(dir, rundir.TableRequests)], "bad credentials: Basic <redacted> for /v1/completions?api_key=xxxxx") {
		t.Errorf("no echoed credentials in the requests: the test does not test what it means to")
	}

	// 2. A server that goes away mid-sweep, its log followed: connection
	// errors name the URL.
	addr, err = fakeserver.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	logFile := filepath.Join(t.TempDir(), "server.log")
	lf, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	srv := fakeserver.Cmd(fakeserver.Options{Addr: addr, EchoEvery: 3, ExitAfter: 14})
	srv.Stdout, srv.Stderr = lf, lf
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	waitFor(t, "the server to listen", 10*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	dir, code, out = sweep(addr, "--server-log", logFile)
	if code != 0 {
		t.Fatalf("sweep: exit %d\n%s", code, out)
	}
	out += report(dir)
	texts = runtest.Text(t, dir)
	texts["output"] = out
	grep("a run whose server goes away", texts)
	if !strings.Contains(texts[filepath.Join(dir, rundir.TableRequests)], "connect_error") || !strings.Contains(texts[filepath.Join(dir, rundir.TableRequests)], "//xxxxx:***@") {
		t.Errorf("no connection error naming the URL: the test does not test what it means to")
	}

	// 3. Preparation fails: nothing answers at the address.
	down, err := fakeserver.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	dir, code, out = sweep(down)
	if code != 1 {
		t.Fatalf("sweep against nothing: exit %d\n%s", code, out)
	}
	texts = runtest.Text(t, dir)
	texts["output"] = out
	grep("a run that cannot prepare", texts)

	// 4. A base URL that is not one: the usage error names it, redacted.
	code, outs, errs := headroom(t, "sweep", "--base-url", "ftp://"+user+":"+pass+"@"+down+"/?api_key="+query, "-o", filepath.Join(t.TempDir(), "x"))
	if code != 2 {
		t.Fatalf("sweep with an ftp URL: exit %d\n%s", code, errs)
	}
	grep("a refused base URL", map[string]string{"output": outs + errs})
}

// Broken run directories give one line naming the file and exit non-zero
// from every command that reads them, and never a panic.
func TestBrokenRunsEveryCommand(t *testing.T) {
	srv := newPacedServer(t, 5*time.Millisecond) // slow enough for the log to be followed
	good := filepath.Join(t.TempDir(), "good")
	logFile := filepath.Join(t.TempDir(), "server.log")
	os.WriteFile(logFile, nil, 0o644)
	stop := make(chan struct{})
	go func() { // the server writes its log while the sweep runs
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			lf, _ := os.OpenFile(logFile, os.O_APPEND|os.O_WRONLY, 0)
			fmt.Fprintf(lf, "INFO 11-30 12:00:%02d engine.py:267] Avg prompt throughput: 1.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%%\n", i%60)
			lf.Close()
		}
	}()
	code, _, errs := headroom(t, "sweep", "--base-url", srv.URL, "--concurrency", "1,2", "--requests-per-level", "30", "--warmup", "0",
		"--output-tokens", "3", "--prompt-tokens", "20", "--metrics-interval", "0", "--no-gpu", "--server-log", logFile, "-o", good)
	close(stop)
	if code != 0 {
		t.Fatalf("sweep: %s", errs)
	}
	// An interrupted run, so that --resume reads its tables.
	m, _ := rundir.ReadManifest(good)
	m.Complete = false
	rundir.WriteManifest(good, m)
	manifest, _ := os.ReadFile(filepath.Join(good, rundir.ManifestFile))
	part := func(dir, table string) string {
		parts, _ := rundir.TableParts(dir, table)
		if len(parts) == 0 {
			t.Fatalf("%s has no %s", dir, table)
		}
		return parts[0]
	}
	truncate := func(path string) {
		data, _ := os.ReadFile(path)
		os.WriteFile(path, data[:len(data)/2], 0o644)
	}
	const (
		report  = "report"
		compare = "compare"
		inspect = "inspect-log"
		resume  = "resume"
	)
	cases := []struct {
		name     string
		breakRun func(dir string) string // returns the file the error must name
		want     string
		commands []string // the commands that read it
	}{
		{"truncated manifest", func(d string) string {
			p := filepath.Join(d, rundir.ManifestFile)
			os.WriteFile(p, manifest[:len(manifest)/2], 0o644)
			return p
		}, "truncated", []string{report, compare, inspect, resume}},
		{"manifest not JSON", func(d string) string {
			p := filepath.Join(d, rundir.ManifestFile)
			os.WriteFile(p, []byte("\x00\x01binary"), 0o644)
			return p
		}, "invalid manifest JSON", []string{report, compare, inspect, resume}},
		{"newer format version", func(d string) string {
			p := filepath.Join(d, rundir.ManifestFile)
			os.WriteFile(p, bytes.Replace(manifest, []byte(`"format_version": `), []byte(`"format_version": 99`), 1), 0o644)
			return p
		}, "upgrade headroom", []string{report, compare, inspect, resume}},
		{"not a run", func(d string) string {
			os.Remove(filepath.Join(d, rundir.ManifestFile))
			return d
		}, "no manifest.json", []string{report, compare, inspect, resume}},
		{"truncated requests part", func(d string) string {
			p := part(d, rundir.TableRequests)
			truncate(p)
			return p
		}, "Parquet", []string{report, compare, resume}},
		{"empty levels part", func(d string) string {
			p := part(d, rundir.TableLevels)
			os.WriteFile(p, nil, 0o644)
			return p
		}, "Parquet", []string{report, compare, resume}},
		{"garbage log-line times", func(d string) string {
			p := part(d, rundir.TableServerLogLines)
			os.WriteFile(p, []byte("PAR1 this is not parquet PAR1"), 0o644)
			return p
		}, "Parquet", []string{report, inspect}}, // compare does not read log-line times
	}
	for _, c := range cases {
		for _, command := range c.commands {
			t.Run(c.name+"/"+command, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "run")
				if err := os.CopyFS(dir, os.DirFS(good)); err != nil {
					t.Fatal(err)
				}
				file := c.breakRun(dir)
				var args []string
				switch command {
				case compare:
					args = []string{"compare", dir, good, "-o", t.TempDir()}
				case resume:
					args = []string{"sweep", "--resume", dir, "--base-url", srv.URL, "--no-gpu"}
				default:
					args = []string{command, dir}
				}
				code, _, errs := headroom(t, args...)
				lines := strings.Split(strings.TrimSpace(errs), "\n")
				if code == 0 || len(lines) != 1 || !strings.Contains(errs, file) || !strings.Contains(errs, c.want) {
					t.Errorf("%v: exit %d, stderr %q; want a non-zero exit and one line naming %s and saying %q", args, code, errs, file, c.want)
				}
			})
		}
	}
}

// --resume takes the workload from the manifest: workload flags beside it
// are a usage error, and a complete run has nothing to resume.
func TestResumeCommandLine(t *testing.T) {
	srv := tinyServer(t)
	dir := filepath.Join(t.TempDir(), "run")
	if code, _, errs := headroom(t, "sweep", "--base-url", srv.URL, "--concurrency", "1", "--requests-per-level", "2", "--warmup", "0",
		"--output-tokens", "3", "--prompt-tokens", "20", "--metrics-interval", "0", "--no-gpu", "-o", dir); code != 0 {
		t.Fatal(errs)
	}
	code, _, errs := headroom(t, "sweep", "--resume", dir, "--concurrency", "4", "--seed", "9")
	if code != 2 || !strings.Contains(errs, "--concurrency, --seed: a resumed sweep sends the workload recorded in") || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
		t.Errorf("workload flags with --resume: exit %d, %q", code, errs)
	}
	code, _, errs = headroom(t, "sweep", "--resume", dir, "--base-url", srv.URL)
	if code != 1 || !strings.Contains(errs, "the run is complete: nothing to resume") {
		t.Errorf("resuming a complete run: exit %d, %q", code, errs)
	}
	// A server behind a password: the manifest keeps it masked, so the
	// address must be given again rather than sent with "xxxxx".
	m, _ := rundir.ReadManifest(dir)
	m.Complete = false
	m.Engine.BaseURL = "http://user:xxxxx@127.0.0.1:9"
	rundir.WriteManifest(dir, m)
	code, _, errs = headroom(t, "sweep", "--resume", dir)
	if code != 2 || !strings.Contains(errs, "was recorded with credentials, which the run does not keep: give --base-url again") {
		t.Errorf("resuming a run recorded with a password: exit %d, %q", code, errs)
	}
}

// A probe of a GPU that another process uses is flagged in the manifest,
// on the command's output and in the report.
func TestBusyGPUProbeFlagged(t *testing.T) {
	f := fakecuda.Build(t)
	f.SetRoofline(0.5, 50)
	f.SetBandwidth(2, 5, 7)
	f.SetNVMLProcesses(uint32(os.Getpid()), 4242)
	t.Setenv(cuda.EnvLibCUDA, f.DriverPath)
	t.Setenv(cuda.EnvCUBLAS, f.CUBLASPath)
	t.Setenv("HEADROOM_LIBNVML", f.NVMLPath)
	dir := filepath.Join(t.TempDir(), "run")
	code, out, errs := headroom(t, "probe", "--out", dir, "--k", "128", "--n", "128", "--batches", "1,16", "--buffers", "1", "--window", "200us", "--repeats", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "warning: GPU 0 (solo) was busy while probed: NVML listed 1 other compute process(es) on it (PID 4242)") {
		t.Errorf("stdout does not warn:\n%s", out)
	}
	m, err := rundir.ReadManifest(dir)
	if err != nil || !m.Probe.Busy || m.Probe.ClocksBelowBase {
		t.Fatalf("manifest probe %+v (%v)", m.Probe, err)
	}
	if code, _, errs := headroom(t, "report", dir); code != 0 {
		t.Fatal(errs)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	if !strings.Contains(string(md), "Other processes were using the GPU during the probe") {
		t.Error("report.md does not flag the busy GPU")
	}
}

// hostileText holds what a terminal would act on: a window title (OSC 0),
// clear screen, a clipboard write (OSC 52), a carriage return that hides
// what came before, and a C1 CSI.
const hostileText = "\x1b]0;pwned\x07\x1b[2J\x1b]52;c;ZWNobyBwd25lZA==\x07hidden\roverwritten \u009b31m"

// Text from outside (a server's error body, its log lines) is printed with
// its control characters escaped, by every command.
func TestNoTerminalEscapesFromOutside(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"data":[{"id":"m"}]}`)
			return
		}
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, hostileText)
	}))
	defer srv.Close()
	_, out, errs := headroom(t, "sweep", "--base-url", srv.URL, "--no-gpu", "--metrics-interval", "0", "-o", filepath.Join(t.TempDir(), "run"))
	texts := map[string]string{"sweep": out + errs}
	log := filepath.Join(t.TempDir(), "server.log")
	os.WriteFile(log, []byte("INFO 11-30 12:00:00 [api_server.py:1] vLLM API server version 0.6.3\n"+
		"ERROR 11-30 12:00:01 [engine.py:1] RuntimeError: "+strings.ReplaceAll(hostileText, "\r", " ")+"\n"), 0o644)
	_, out, errs = headroom(t, "inspect-log", "--year", "2026", log)
	texts["inspect-log"] = out + errs
	for what, text := range texts {
		for _, c := range []string{"\x1b", "\x07", "\r", "\u009b"} {
			if strings.Contains(text, c) {
				t.Errorf("%s printed %q raw:\n%q", what, c, text)
			}
		}
	}
	for what, text := range texts {
		if !strings.Contains(text, `\x1b]0;pwned\x07`) {
			t.Errorf("%s does not show the text, escaped:\n%s", what, text)
		}
	}
}

// More streams than the open-files limit allows: the streams that cannot
// connect are recorded as connection errors, and the level's rows and the
// manifest are still written (the idle connections are closed and a few
// descriptors kept for the writes); what the output says was written is
// what is on disk.
func TestOpenFilesLimitLosesNoLevel(t *testing.T) {
	t.Parallel() // waits on binaries it runs: see TestMain
	bin := headroomBinary(t)
	srv := newPacedServer(t, time.Millisecond)
	dir := filepath.Join(t.TempDir(), "run")
	// ulimit -n sets the hard limit too: Go cannot raise it
	cmd := exec.Command("/bin/sh", "-c", `ulimit -n 128 && exec "$0" "$@"`, bin, "sweep", "--base-url", srv.URL,
		"--concurrency", "300", "--requests-per-level", "300", "--warmup", "0", "--prompt-tokens", "8", "--output-tokens", "5",
		"--max-error-rate", "1", "--no-gpu", "--metrics-interval", "0", "-o", dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sweep: %v\n%s", err, out)
	}
	reqs := runtest.Table[rundir.RequestRow](t, dir, rundir.TableRequests)
	levels, _ := rundir.ReadTable[rundir.LevelRow](dir, rundir.TableLevels)
	var emfile int
	for _, r := range reqs {
		if r.Status == rundir.StatusConnect && strings.Contains(r.Error, "too many open files") {
			emfile++
		}
	}
	t.Logf("%d requests written, %d of them refused a descriptor", len(reqs), emfile)
	if len(reqs) != 300 || len(levels) != 1 || !levels[0].Complete || emfile == 0 {
		t.Errorf("%d request rows (want 300), levels %+v, %d connection errors for lack of descriptors (want some)", len(reqs), levels, emfile)
	}
	m, err := rundir.ReadManifest(dir)
	if err != nil || !m.Complete {
		t.Errorf("manifest on disk: %v, complete %v", err, m != nil && m.Complete)
	}
	if !strings.Contains(string(out), "wrote "+dir+": complete run") {
		t.Errorf("output:\n%s", out)
	}
}

// The output says what is on disk: a run whose last writes failed is not
// announced as written.
func TestSweepEndSaysWhatIsOnDisk(t *testing.T) {
	srv := newPacedServer(t, time.Millisecond)
	dir := filepath.Join(t.TempDir(), "run")
	code, _, errs := headroom(t, "sweep", "--base-url", srv.URL, "--concurrency", "1", "--requests-per-level", "4", "--warmup", "0",
		"--prompt-tokens", "8", "--output-tokens", "3", "--no-gpu", "--metrics-interval", "0", "-o", dir)
	if code != 0 {
		t.Fatal(errs)
	}
	run, err := rundir.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	printSweepEnd(&stdout, io.Discard, run, onDisk(run))
	if !strings.Contains(stdout.String(), "wrote "+dir+": complete run") {
		t.Errorf("a whole run: %q", stdout.String())
	}
	// the sweep ended stopped, but the manifest on disk could not be rewritten
	run.Manifest.Complete, run.Manifest.Stopped = false, &rundir.Stopped{Reason: "error", Phase: "write"}
	stdout.Reset()
	printSweepEnd(&stdout, io.Discard, run, onDisk(run))
	if s := stdout.String(); strings.Contains(s, "wrote ") || !strings.Contains(s, "not all of it could be written") || !strings.Contains(s, "1 complete levels, 4 measured requests") {
		t.Errorf("a run whose manifest is stale: %q", s)
	}
}

// A low soft open-files limit under a higher hard one does not bind: the
// soft limit is raised to the hard one at start (Go's runtime does it on
// Linux), so 200 streams under a soft limit of 64 all connect.
func TestSoftOpenFilesLimitRaised(t *testing.T) {
	t.Parallel() // waits on binaries it runs: see TestMain
	bin := headroomBinary(t)
	srv := newPacedServer(t, time.Millisecond)
	dir := filepath.Join(t.TempDir(), "run")
	cmd := exec.Command("/bin/sh", "-c", `ulimit -S -n 64 && exec "$0" "$@"`, bin, "sweep", "--base-url", srv.URL,
		"--concurrency", "200", "--requests-per-level", "200", "--warmup", "0", "--prompt-tokens", "8", "--output-tokens", "5",
		"--no-gpu", "--metrics-interval", "0", "-o", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("sweep: %v\n%s", err, out)
	}
	reqs, _ := rundir.ReadTable[rundir.RequestRow](dir, rundir.TableRequests)
	ok := 0
	for _, r := range reqs {
		if r.Status == rundir.StatusOK {
			ok++
		}
	}
	if ok != 200 {
		t.Errorf("%d of %d requests ok, want all 200", ok, len(reqs))
	}
}

// A shared run directory may hold symbolic links where the report goes:
// report writes through none of them (a crafted run cannot overwrite a
// file of the user's), and says why it stopped.
func TestReportRefusesSymlinks(t *testing.T) {
	for _, name := range []string{"report.html", "report.md", "analysis.json"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			if code, _, errs := headroom(t, "import", seedRoofline, "-o", dir, "--date", "2026-11-29"); code != 0 {
				t.Fatal(errs)
			}
			victim := filepath.Join(t.TempDir(), "bashrc")
			os.WriteFile(victim, []byte("the user's file\n"), 0o644)
			if err := os.Symlink(victim, filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			code, _, errs := headroom(t, "report", dir)
			if data, _ := os.ReadFile(victim); string(data) != "the user's file\n" {
				t.Errorf("report wrote through %s into %s: %q", name, victim, data)
			}
			if code == 0 || !strings.Contains(errs, "symbolic link") || !strings.Contains(errs, name) {
				t.Errorf("exit %d: %s", code, errs)
			}
		})
	}
}
