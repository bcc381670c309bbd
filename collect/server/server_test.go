package server

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/internal/cputime"
	"github.com/headroom-llm/headroom/rundir"
)

func TestSplitCommand(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{`vllm serve m --port 8000`, []string{"vllm", "serve", "m", "--port", "8000"}},
		{`  a   b  `, []string{"a", "b"}},
		{`a 'b c' "d \"e\" $x" f\ g`, []string{"a", "b c", `d "e" $x`, "f g"}},
		{`--x='' ""`, []string{"--x=", ""}},
		{"a \\\n b", []string{"a", "b"}},
		{`unterminated 'quote`, []string{"unterminated", "quote"}},
		{``, nil},
	}
	for _, tt := range tests {
		if got := SplitCommand(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("SplitCommand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func FuzzSplitCommand(f *testing.F) {
	for _, s := range []string{`a 'b c' "d"`, `x\ y`, `"a\"b"`, `'`, `"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words := SplitCommand(s)
		// Quoting each word again and splitting gives the words back.
		var quoted []string
		for _, w := range words {
			quoted = append(quoted, "'"+strings.ReplaceAll(w, "'", `'\''`)+"'")
		}
		if again := SplitCommand(strings.Join(quoted, " ")); len(words) > 0 && !reflect.DeepEqual(again, words) {
			t.Fatalf("%q: %q, requoted %q", s, words, again)
		}
	})
}

func TestRedactFlags(t *testing.T) {
	argv := []string{"HF_TOKEN=hf_abcdefgh", "vllm", "serve", "m", "--api-key", "k1", "--port", "8000",
		"--max-num-batched-tokens", "8192", "--hf-token=xyz", "--tokenizer", "tok", "--x", "sk-abcdefghijk",
		"--header", "Bearer mysecret", "--download-dir", "/data"}
	got := RedactFlags(argv, "mysecret")
	want := []string{"HF_TOKEN=<redacted>", "vllm", "serve", "m", "--api-key", Redacted, "--port", "8000",
		"--max-num-batched-tokens", "8192", "--hf-token=<redacted>", "--tokenizer", "tok", "--x", Redacted,
		"--header", "Bearer <redacted>", "--download-dir", "/data"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %q\nwant %q", got, want)
	}
}

func TestFollow(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "server.log")
	old := "old line before the sweep\n"
	os.WriteFile(path, []byte(old), 0o644)
	var mu sync.Mutex
	var got []string
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		// From the old content's end, as Follow starts at the end it finds:
		// where the goroutine opens the file late, it must not matter.
		done <- FollowFrom(ctx, path, int64(len(old)), 10*time.Millisecond, func(b []byte, _ time.Time) {
			mu.Lock()
			got = append(got, string(b))
			mu.Unlock()
		})
	}()
	waitFor := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
			mu.Lock()
			l := len(got)
			mu.Unlock()
			if l >= n {
				return
			}
		}
		t.Fatalf("timed out waiting for %d lines, have %q", n, got)
	}
	time.Sleep(50 * time.Millisecond)
	appendTo := func(s string) {
		f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		f.WriteString(s)
		f.Close()
	}
	appendTo("one\ntw")
	waitFor(1)
	appendTo("o\n")
	waitFor(2)
	// rotation: the file is renamed and a new one created
	os.Rename(path, path+".1")
	os.WriteFile(path, []byte("three\n"), 0o644)
	waitFor(3)
	// truncation
	os.WriteFile(path, []byte("four\n"), 0o644)
	waitFor(4)
	appendTo("tail without newline")
	time.Sleep(50 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	want := []string{"one", "two", "three", "four", "tail without newline"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestProcessCaptureReadyStop(t *testing.T) {
	dir := t.TempDir()
	start := time.Now()
	capture, err := NewLogCapture(dir, func(t time.Time) int64 { return t.UnixNano() })
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" {
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	// The child ignores nothing: SIGTERM to its group ends both shell and sleep.
	var seen atomic.Int32
	p, err := Start(`echo "INFO starting"; echo "WARN to stderr" >&2; sleep 30 & wait`, func(line []byte, at time.Time) {
		capture.Line(line, at)
		seen.Add(1)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.WaitReady(context.Background(), srv.Client(), srv.URL, 5*time.Second, nil); err != nil {
		t.Fatal(err)
	}
	// The health check answers at once, so the shell may not have printed
	// yet (a loaded CI machine took over 100 ms): stop once both lines are in.
	waitUntil(t, 10*time.Second, func() bool { return seen.Load() >= 2 })
	stopping := time.Now()
	if err := p.Stop(2 * time.Second); err != nil {
		t.Fatal(err)
	}
	// SIGTERM ends the group; the 30 s sleep must not be waited for.
	if took := time.Since(stopping); took > 5*time.Second {
		t.Errorf("stop took %v", took)
	}
	if err := capture.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, rundir.ServerLogFile))
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) != 2 || !strings.Contains(string(data), "INFO starting") || !strings.Contains(string(data), "WARN to stderr") {
		t.Errorf("server.log %q", data)
	}
	rows, err := rundir.ReadTable[rundir.ServerLogLineRow](dir, rundir.TableServerLogLines)
	if err != nil || len(rows) != 2 || rows[0].Line != 1 || rows[1].Line != 2 || rows[0].RecvNS < start.UnixNano() {
		t.Errorf("rows %+v err %v", rows, err)
	}
}

func TestWaitReadyFailsWhenServerExits(t *testing.T) {
	p, err := Start(`echo "fatal: no GPU"; exit 3`, func([]byte, time.Time) {})
	if err != nil {
		t.Fatal(err)
	}
	err = p.WaitReady(context.Background(), http.DefaultClient, "http://127.0.0.1:1", 5*time.Second, nil)
	if err == nil || !strings.Contains(err.Error(), "fatal: no GPU") || !strings.Contains(err.Error(), "exited") {
		t.Errorf("err %v", err)
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		name    string
		routes  map[string]string
		log     []string
		want    string
		version string
	}{
		{"vllm", map[string]string{"/version": `{"version":"0.6.3"}`, "/v1/models": `{"data":[{"id":"m","owned_by":"vllm","max_model_len":4096}]}`}, nil, "vllm", "0.6.3"},
		{"test engine", map[string]string{"/version": `{"engine":"node-llama-cpp","version":"3.21.1","llama_cpp":"b1"}`}, nil, "node-llama-cpp", "3.21.1"},
		{"sglang", map[string]string{"/v1/models": `{"data":[{"id":"m","owned_by":"sglang"}]}`, "/get_server_info": `{"version":"0.4.1"}`}, nil, "sglang", "0.4.1"},
		{"llama.cpp", map[string]string{"/v1/models": `{"data":[{"id":"m","owned_by":"llamacpp"}]}`, "/props": `{"build_info":"b4000-abc"}`}, nil, "llama.cpp", "b4000-abc"},
		{"ollama", map[string]string{"/v1/models": `{"data":[{"id":"m","owned_by":"library"}]}`, "/api/version": `{"version":"0.5.1"}`}, nil, "ollama", "0.5.1"},
		{"tgi", map[string]string{"/info": `{"model_id":"m","version":"2.4.0"}`}, nil, "tgi", "2.4.0"},
		{"alias from /version", map[string]string{"/version": `{"engine":"LlamaCpp","version":"b1"}`}, nil, "llama.cpp", "b1"},
		{"from log", nil, []string{"INFO 11-30 12:00:00 api_server.py:1 vLLM API server version 0.7.0"}, "vllm", "0.7.0"},
		{"unknown", nil, nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if body, ok := tt.routes[r.URL.Path]; ok {
					fmt.Fprint(w, body)
					return
				}
				http.NotFound(w, r)
			}))
			defer srv.Close()
			e := Detect(context.Background(), srv.Client(), srv.URL, nil, tt.log)
			if e.Name != tt.want || e.Version != tt.version {
				t.Errorf("got %q %q (%s), want %q %q", e.Name, e.Version, e.Source, tt.want, tt.version)
			}
		})
	}
}

// Values that look like credentials are redacted whatever flag they follow;
// model names, paths, numbers and git commits are kept.
func TestLooksLikeToken(t *testing.T) {
	for _, tt := range []struct {
		v    string
		want bool
	}{
		{"sk-proj-abcdefgh", true},
		{"hf_AbCdEfGhIjKlMnOp", true},
		{"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", true},
		{"AKIAIOSFODNN7EXAMPLE", true},
		{"Xq3vK9mZ2pL8rT5wY1nB7cD4fG6hJ0sA", true},                         // 32 random base64url characters
		{"3f2a9c4e5b6d7a8f9e0d1c2b3a4f5e6d7c8b9a0f1e2d3c4b5a6f7e8d", true}, // 56 hex digits
		{"3f2a9c4e5b6d7a8f9e0d1c2b3a4f5e6d7c8b9a0f", false},                // a 40-digit git commit
		{"meta-llama/Meta-Llama-3.1-70B-Instruct", false},
		{"Meta-Llama-3-70B-Instruct-Turbo-Q4-AWQ", false},
		{"/data/models/Llama3Instruct70BWeightsV2", false},
		{"TheBloke/Llama-2-70B-Chat-AWQ", false},
		{"8192", false},
		{"sk-", false},
		{"--max-num-batched-tokens", false},
		{"abcdefghijklmnopqrstuvwxyzabcdefghij", false}, // one case, no digits: a word, not a token
	} {
		if got := LooksLikeToken(tt.v); got != tt.want {
			t.Errorf("LooksLikeToken(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
	argv := []string{"vllm", "serve", "meta-llama/Meta-Llama-3.1-70B-Instruct", "--revision", "3f2a9c4e5b6d7a8f9e0d1c2b3a4f5e6d7c8b9a0f",
		"--served-model-name=Xq3vK9mZ2pL8rT5wY1nB7cD4fG6hJ0sA", "--hf-token", "hf_secretvalue1", "--api-key", "short"}
	got := RedactFlags(argv)
	want := []string{"vllm", "serve", "meta-llama/Meta-Llama-3.1-70B-Instruct", "--revision", "3f2a9c4e5b6d7a8f9e0d1c2b3a4f5e6d7c8b9a0f",
		"--served-model-name=<redacted>", "--hf-token", Redacted, "--api-key", Redacted}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("\n got %q\nwant %q", got, want)
	}
	// What the server itself may print: every hidden value of 8 bytes or more.
	if sv := SecretValues(argv); !reflect.DeepEqual(sv, []string{"Xq3vK9mZ2pL8rT5wY1nB7cD4fG6hJ0sA", "hf_secretvalue1"}) {
		t.Errorf("SecretValues %q", sv)
	}
}

// FuzzRedactFlags: whatever the command line, a given secret never
// survives redaction (a placeholder shorter than MinSecretBytes: not as a
// whole word), nor does a value that looks like a token, and every
// argument keeps its place.
func FuzzRedactFlags(f *testing.F) {
	f.Add("vllm serve m --api-key k1 --hf-token=xyz HF_TOKEN=hf_abcdefgh", "k1secret")
	f.Add("x --header 'Bearer mysecret' --x sk-abcdefghijk", "mysecret")
	f.Add("--a=b=c -- --token", "zz9")
	f.Fuzz(func(t *testing.T, cmd, secret string) {
		argv := SplitCommand(cmd)
		out := RedactFlags(argv, secret)
		if len(out) != len(argv) {
			t.Fatalf("%d words in, %d out", len(argv), len(out))
		}
		alnum := secret != ""
		for _, r := range secret {
			alnum = alnum && (r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
		}
		for i, w := range out {
			survives := strings.Contains(w, secret)
			if len(secret) < MinSecretBytes {
				survives = w == secret
			}
			if alnum && !strings.Contains(Redacted, secret) && survives {
				t.Fatalf("secret %q survives in %q (from %q)", secret, w, argv[i])
			}
			if LooksLikeToken(argv[i]) && w != Redacted {
				t.Fatalf("token-like %q kept as %q", argv[i], w)
			}
		}
		for _, v := range SecretValues(argv, secret) {
			if len(v) < MinSecretBytes {
				t.Fatalf("SecretValues returned %q, shorter than %d bytes", v, MinSecretBytes)
			}
		}
	})
}

// A header on a command line (curl's -H, AIPerf's --header) keeps its name
// and loses its value.
func TestRedactAuthorizationHeader(t *testing.T) {
	argv := SplitCommand(`aiperf profile -m m --header "Authorization: Bearer abc123short" -H 'authorization:xyz' --url localhost:9000`)
	got := strings.Join(RedactFlags(argv), " ")
	if want := "aiperf profile -m m --header Authorization: <redacted> -H authorization: <redacted> --url localhost:9000"; got != want {
		t.Errorf("\n got %q\nwant %q", got, want)
	}
	if sv := SecretValues(argv); !reflect.DeepEqual(sv, []string{"abc123short"}) { // "xyz" is under 8 bytes
		t.Errorf("SecretValues %q", sv)
	}
}

// A server line longer than the read buffer is one stored line, redacted
// whole before it is cut: a secret across a buffer boundary or across the
// stored length's cut never reaches server.log, not even in part.
func TestLongLineRedactedWhole(t *testing.T) {
	const secret = "sk-long-line-secret-0123456789"
	dir := t.TempDir()
	capture, err := NewLogCapture(dir, func(t time.Time) int64 { return t.UnixNano() })
	if err != nil {
		t.Fatal(err)
	}
	sec := &Secrets{}
	sec.Add(secret)
	capture.Redact(sec)
	script := filepath.Join(t.TempDir(), "long.sh")
	// a secret across the 16 KiB read buffer, one across the 64 KiB stored
	// length, then a short line
	line := strings.Repeat("x", 16<<10-10) + secret + strings.Repeat("y", 48<<10-30) + secret + strings.Repeat("z", 100<<10)
	os.WriteFile(script, []byte("printf '%s\\nshort line\\n' '"+line+"'\n"), 0o755)
	p, err := Start("sh "+script, capture.Line)
	if err != nil {
		t.Fatal(err)
	}
	<-p.Exited()
	capture.Close()
	data, _ := os.ReadFile(filepath.Join(dir, rundir.ServerLogFile))
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2 || lines[1] != "short line" {
		t.Fatalf("%d lines stored, want the long one and the short one", len(lines))
	}
	for n := 8; n <= len(secret); n++ {
		if strings.Contains(lines[0], secret[:n]) {
			t.Fatalf("server.log holds %q of the secret", secret[:n])
		}
	}
	if !strings.HasPrefix(lines[0], strings.Repeat("x", 16<<10-10)+Redacted) || !strings.HasSuffix(lines[0], "[line cut by headroom]") {
		t.Errorf("long line stored as %q…%q", lines[0][:40], lines[0][len(lines[0])-40:])
	}
}

func TestRedactURL(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"http://127.0.0.1:8000", "http://127.0.0.1:8000"},
		{"http://user:pw@host:8000/v1", "http://xxxxx@host:8000/v1"},
		{"https://ghp_abcdefghijklmnop1234@host/", "https://xxxxx@host/"},
		{"http://host/v1?api_key=abc&model=llama", "http://host/v1?api_key=xxxxx&model=llama"},
		{"http://host/v1?model=llama", "http://host/v1?model=llama"},
		{"http://host/?x=" + "Zq8vK1mX2pL7rT4wY9nB3cD6fG5hJ0sQ", "http://host/?x=xxxxx"},
	} {
		if got := RedactURL(tt.in); got != tt.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A credential the server prints that headroom was not told about (vLLM
// logs its non-default arguments) is hidden too; the rest of the line stays.
func TestCapturedLogHidesTokens(t *testing.T) {
	dir := t.TempDir()
	capture, err := NewLogCapture(dir, func(t time.Time) int64 { return t.UnixNano() })
	if err != nil {
		t.Fatal(err)
	}
	capture.Line([]byte("INFO 11-30 04:00:00 [utils.py:326] non-default args: {'model': 'meta-llama/Llama-3.1-8B', 'hf_token': 'hf_SecretTokenValue123', 'max_num_seqs': 8}\n"), time.Now())
	capture.Close()
	data, _ := os.ReadFile(filepath.Join(dir, rundir.ServerLogFile))
	want := "INFO 11-30 04:00:00 [utils.py:326] non-default args: {'model': 'meta-llama/Llama-3.1-8B', 'hf_token': '<redacted>', 'max_num_seqs': 8}\n"
	if string(data) != want {
		t.Errorf("server.log:\n%s\nwant\n%s", data, want)
	}
}

// ReadHead then FollowFrom: the start-up lines of a log the server already
// wrote, then what it appends, with no line lost or repeated; a large log
// is followed from its end after its head.
func TestReadHeadThenFollow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.log")
	os.WriteFile(path, []byte("start 1\nstart 2\npart"), 0o644)
	lines, next, whole, err := ReadHead(path, 1<<10)
	if err != nil || len(lines) != 2 || string(lines[1]) != "start 2" || next != 16 || !whole {
		t.Fatalf("head %q next %d whole %v err %v", lines, next, whole, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	var got []string
	done := make(chan error, 1)
	go func() {
		done <- FollowFrom(ctx, path, next, 5*time.Millisecond, func(b []byte, _ time.Time) {
			mu.Lock()
			got = append(got, string(b))
			mu.Unlock()
		})
	}()
	time.Sleep(30 * time.Millisecond)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("ial\nlater\n")
	f.Close()
	time.Sleep(60 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != "partial|later" {
		t.Errorf("followed %q, want the line in progress and the next one", got)
	}

	big := filepath.Join(t.TempDir(), "big.log")
	os.WriteFile(big, []byte(strings.Repeat("line of a long-running server\n", 100)), 0o644)
	lines, _, whole, _ = ReadHead(big, 100)
	if len(lines) != 3 || whole {
		t.Errorf("head of a large log: %d lines, whole %v; want the 3 complete lines of its first 100 bytes", len(lines), whole)
	}
}

// A simple command is exec'd by the shell (so the server is headroom's
// child and dies with it); anything else is left to the shell as written.
func TestExecSimple(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"vllm serve m --port 8000", "exec vllm serve m --port 8000"},
		{"  HF_TOKEN=x CUDA_VISIBLE_DEVICES=0,1 vllm serve m", "  HF_TOKEN=x CUDA_VISIBLE_DEVICES=0,1 exec vllm serve m"},
		{`A='x;y' B="p q" server --template '{% if a; %}'`, `A='x;y' B="p q" exec server --template '{% if a; %}'`},
		{"cd /srv && vllm serve m", "cd /srv && vllm serve m"},
		{"vllm serve m; echo done", "vllm serve m; echo done"},
		{"vllm serve m > log 2>&1", "vllm serve m > log 2>&1"},
		{"server --x \"$(cat key)\"", "server --x \"$(cat key)\""},
		{"exec server", "exec server"},
		{"while true; do server; done", "while true; do server; done"},
		{"A=1", "A=1"},
		{"'unterminated", "'unterminated"},
	} {
		if got := execSimple(tt.in); got != tt.want {
			t.Errorf("execSimple(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// The names that database clients, caches and APIs use for their secrets
// are secrets too, as variables, flags or headers given as one word or two.
func TestRedactCommonSecretNames(t *testing.T) {
	argv := SplitCommand(`PGPASSWORD=pgsecret1 MYSQL_PWD=mysecret2 DB_PASS=dbsecret3 REDIS_AUTH=redis4 server -psw pswvalue5 ` +
		`--header X-Api-Key: hdrvalue6 -H "X-Api-Key: hdrvalue7" --passthrough-args x --max-model-len 4096 --tokenizer tok`)
	got := strings.Join(RedactFlags(argv), " ")
	want := "PGPASSWORD=<redacted> MYSQL_PWD=<redacted> DB_PASS=<redacted> REDIS_AUTH=<redacted> server -psw <redacted> " +
		"--header X-Api-Key: <redacted> -H X-Api-Key: <redacted> --passthrough-args x --max-model-len 4096 --tokenizer tok"
	if got != want {
		t.Errorf("\n got %q\nwant %q", got, want)
	}
	sv := SecretValues(argv)
	for _, v := range []string{"pgsecret1", "mysecret2", "dbsecret3", "pswvalue5", "hdrvalue6", "hdrvalue7"} {
		if !slices.Contains(sv, v) {
			t.Errorf("SecretValues %q lacks %q", sv, v)
		}
	}
}

// One redaction pass: the API key anywhere (a short one only after
// Bearer), a URL's user, password and query values in their contexts, the
// Basic authorization a client makes of them, secret-named query values
// anywhere; longer secrets before shorter ones.
func TestSecrets(t *testing.T) {
	var s Secrets
	s.Add("sk-longkey-0001", "x")
	s.AddURL("http://alice:pa55word@host:8000/v1?api_key=QSECRET99&model=m")
	for _, tt := range []struct{ in, want string }{
		{"key sk-longkey-0001 and Bearer x and x", "key <redacted> and Bearer <redacted> and x"},
		{`Post "http://alice:***@host:8000/v1/completions?api_key=QSECRET99&model=m": refused`,
			`Post "http://xxxxx:***@host:8000/v1/completions?api_key=xxxxx&model=xxxxx": refused`},
		{"GET /v1/models?api_key=QSECRET99 authorization=\"Basic YWxpY2U6cGE1NXdvcmQ=\"",
			"GET /v1/models?api_key=xxxxx authorization=\"Basic <redacted>\""},
		{"echoed QSECRET99 and pa55word alone", "echoed <redacted> and <redacted> alone"},
		{"alice in wonderland, model m", "alice in wonderland, model m"},
	} {
		if got := s.String(tt.in); got != tt.want {
			t.Errorf("String(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
	var none *Secrets
	if none.String("x") != "x" || string((&Secrets{}).Bytes([]byte("y"))) != "y" {
		t.Error("an empty set changes text")
	}
}

// One very long line appended to a followed log costs time linear in its
// length and memory bounded by the stored line: it is delivered cut (to a
// little past the 64 KiB the capture stores), and the lines after it
// whole.
func TestFollowLongLineLinearAndBounded(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.log")
	os.WriteFile(path, nil, 0o644)
	var mu sync.Mutex
	var lines []int
	var last string
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- FollowFrom(ctx, path, 0, 10*time.Millisecond, func(b []byte, _ time.Time) {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, len(b))
			last = string(b)
		})
	}()
	time.Sleep(50 * time.Millisecond)
	const long = 30 << 20
	cpu0 := cputime.Total()
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	chunk := bytes.Repeat([]byte("x"), 1<<20)
	for range long >> 20 {
		f.Write(chunk)
	}
	f.Write([]byte("\nafter the long line\n"))
	f.Close()
	waitUntil(t, 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return last == "after the long line"
	})
	used := cputime.Total() - cpu0
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	t.Logf("a %d MiB line cost %v of CPU", long>>20, used)
	mu.Lock()
	defer mu.Unlock()
	if len(lines) != 2 || lines[0] > maxLineBytes+16<<10 || lines[0] < maxLineBytes {
		t.Errorf("lines of %v bytes: want the long one cut past %d bytes, then the short one", lines, maxLineBytes)
	}
	if used > 2*time.Second {
		t.Errorf("following a %d MiB line took %v of CPU", long>>20, used)
	}
}

func waitUntil(t *testing.T, d time.Duration, cond func() bool) {
	t.Helper()
	for start := time.Now(); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Since(start) > d {
			t.Fatalf("not within %v", d)
		}
	}
}

// The lines written before following ends are delivered, though the
// follower has not polled since they were written.
func TestFollowReadsToTheEndWhenStopped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.log")
	os.WriteFile(path, nil, 0o644)
	var mu sync.Mutex
	var got []string
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- FollowFrom(ctx, path, 0, time.Hour, func(b []byte, _ time.Time) {
			mu.Lock()
			got = append(got, string(b))
			mu.Unlock()
		})
	}()
	time.Sleep(20 * time.Millisecond)
	os.WriteFile(path, []byte("ERROR out of KV cache blocks\nshutting down"), 0o644)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if want := []string{"ERROR out of KV cache blocks", "shutting down"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A device (/dev/zero: no newline, never ends) or a named pipe as the log
// is refused at once, and following stops when ctx ends.
func TestFollowRefusesDevicesAndPipes(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/dev/zero", fifo} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		done := make(chan error, 1)
		go func() { done <- Follow(ctx, path, 10*time.Millisecond, func([]byte, time.Time) {}) }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("%s: %v, want it refused", path, err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("%s: still following 8 s after its context ended", path)
		}
		cancel()
	}
}

// The follower counts the CPU its own thread uses: following megabytes of
// log lines shows in CPU, and a quiet log costs next to nothing.
func TestFollowerCountsItsCPU(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.log")
	os.WriteFile(path, nil, 0o644)
	var n atomic.Int64
	f := &Follower{Path: path, From: 0, Poll: 10 * time.Millisecond, Sink: func([]byte, time.Time) { n.Add(1) }}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	time.Sleep(100 * time.Millisecond)
	quiet := f.CPU()
	lf, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	line := bytes.Repeat([]byte("INFO a log line of some length, as servers print them\n"), 1<<16)
	for range 8 {
		lf.Write(line)
	}
	lf.Close()
	waitUntil(t, 60*time.Second, func() bool { return n.Load() == 8<<16 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	busy := f.CPU() - quiet
	t.Logf("quiet: %v; %d lines: %v", quiet, n.Load(), busy)
	if busy <= 0 || quiet > 50*time.Millisecond {
		t.Errorf("follower CPU quiet %v, busy %v: want nothing, then something", quiet, busy)
	}
}
