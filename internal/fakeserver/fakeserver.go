// Package fakeserver is an OpenAI-compatible streaming server that runs as
// a process of its own, for tests that need a real server process behind
// `--server-cmd`: a test binary calls MaybeServe from its TestMain, and a
// test starts it with Command. It fails to start, as real servers do, when
// its port is taken.
package fakeserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Env holds the options of a server process: "addr=HOST:PORT", then any of
// "delay=DURATION" (between tokens), "exit-after=N" (exit 3 after N
// generation requests have finished), "ignore-term" (SIGTERM is ignored),
// "pidfile=PATH" (its pid is written there), "echo=N" (every N-th
// generation request fails with a body that echoes its Authorization header
// and URL, as careless servers and proxies do; every request is logged with
// both, as access logs do; /metrics carries them as labels),
// "proxy=URL" (every request is passed to URL, streamed: a test's
// in-process server behind a real server process), separated by ';'. It prints its arguments when it starts, as servers print their
// configuration.
const Env = "HEADROOM_FAKESERVER"

// Options of a server process.
type Options struct {
	Addr       string
	TokenDelay time.Duration
	ExitAfter  int
	IgnoreTerm bool
	PIDFile    string
	EchoEvery  int
	Proxy      string
}

func (o Options) env() string {
	parts := []string{"addr=" + o.Addr}
	if o.TokenDelay > 0 {
		parts = append(parts, "delay="+o.TokenDelay.String())
	}
	if o.ExitAfter > 0 {
		parts = append(parts, "exit-after="+strconv.Itoa(o.ExitAfter))
	}
	if o.IgnoreTerm {
		parts = append(parts, "ignore-term")
	}
	if o.PIDFile != "" {
		parts = append(parts, "pidfile="+o.PIDFile)
	}
	if o.EchoEvery > 0 {
		parts = append(parts, "echo="+strconv.Itoa(o.EchoEvery))
	}
	if o.Proxy != "" {
		parts = append(parts, "proxy="+o.Proxy)
	}
	return strings.Join(parts, ";")
}

func parse(env string) (Options, error) {
	var o Options
	for _, p := range strings.Split(env, ";") {
		k, v, _ := strings.Cut(p, "=")
		var err error
		switch k {
		case "addr":
			o.Addr = v
		case "delay":
			o.TokenDelay, err = time.ParseDuration(v)
		case "exit-after":
			o.ExitAfter, err = strconv.Atoi(v)
		case "ignore-term":
			o.IgnoreTerm = true
		case "pidfile":
			o.PIDFile = v
		case "echo":
			o.EchoEvery, err = strconv.Atoi(v)
		case "proxy":
			o.Proxy = v
		default:
			err = fmt.Errorf("unknown option %q", k)
		}
		if err != nil {
			return o, fmt.Errorf("%s: %w", Env, err)
		}
	}
	if o.Addr == "" {
		return o, fmt.Errorf("%s: no addr", Env)
	}
	return o, nil
}

// Command is the shell command line that runs the test binary (os.Args[0])
// as a server with these options and arguments (printed, not parsed): a
// `--server-cmd`.
func Command(o Options, args ...string) string {
	return strings.TrimSpace(fmt.Sprintf("%s='%s' %s %s", Env, o.env(), os.Args[0], strings.Join(args, " ")))
}

// Cmd is an exec.Cmd that runs the test binary as a server with these
// options and arguments, for a test that starts the server itself.
func Cmd(o Options, args ...string) *exec.Cmd {
	c := exec.Command(os.Args[0], args...)
	c.Env = append(os.Environ(), Env+"="+o.env())
	return c
}

// MaybeServe serves, and never returns, when the process was started by
// Command; otherwise it returns at once. Call it first in TestMain.
func MaybeServe() {
	env := os.Getenv(Env)
	if env == "" {
		return
	}
	o, err := parse(env)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := Serve(o); err != nil {
		fmt.Fprintln(os.Stderr, "fakeserver:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// FreeAddr returns a loopback address whose port was free a moment ago.
func FreeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// Serve listens on o.Addr and serves until the process is killed, or exits
// 3 after o.ExitAfter generation requests.
func Serve(o Options) error {
	if o.IgnoreTerm {
		signal.Ignore(syscall.SIGTERM)
	}
	if o.PIDFile != "" {
		if err := os.WriteFile(o.PIDFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return err // "bind: address already in use", as a server prints it
	}
	fmt.Printf("fakeserver: listening on %s, arguments: %s\n", ln.Addr(), strings.Join(os.Args[1:], " "))
	var finished, generations atomic.Int64
	var lastAuth, lastURI atomic.Value
	lastAuth.Store("")
	lastURI.Store("")
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "# TYPE fake_requests_total counter\nfake_requests_total{auth=%q,uri=%q} %d\n", lastAuth.Load(), lastURI.Load(), generations.Load())
	})
	mux.HandleFunc("/health", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/version", func(w http.ResponseWriter, r *http.Request) {
		echo := ""
		if o.EchoEvery > 0 {
			echo = r.Header.Get("Authorization") // a careless server that reports what it was sent
		}
		fmt.Fprintf(w, `{"version":"0.0.1-fake","seen_authorization":%q}`, echo)
	})
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"data":[{"id":"fake","owned_by":"vllm","max_model_len":4096}]}`)
	})
	mux.HandleFunc("/v1/completions", func(w http.ResponseWriter, r *http.Request) {
		n := generations.Add(1)
		if o.EchoEvery > 0 && n%int64(o.EchoEvery) == 0 {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `{"error":{"message":"bad credentials: %s for %s"}}`, r.Header.Get("Authorization"), r.URL.RequestURI())
			return
		}
		body, ok := ReadCompletion(w, r)
		if !ok {
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for i := range body.MaxTokens {
			if i > 0 && !pause(r, o.TokenDelay) {
				return
			}
			fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":null}]}\n\n")
			fl.Flush()
		}
		fmt.Fprintf(w, "data: {\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n",
			len(strings.Fields(body.Prompt))+1, body.MaxTokens)
		fl.Flush()
		if n := finished.Add(1); o.ExitAfter > 0 && n >= int64(o.ExitAfter) {
			fmt.Println("fakeserver: exiting as told")
			os.Exit(3)
		}
	})
	var handler http.Handler = mux
	if o.Proxy != "" {
		target, err := url.Parse(o.Proxy)
		if err != nil {
			return err
		}
		handler = proxy(target)
	}
	logged := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.EchoEvery > 0 {
			lastAuth.Store(r.Header.Get("Authorization"))
			lastURI.Store(r.URL.RequestURI())
			fmt.Printf("fakeserver: %s %s authorization=%q\n", r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"))
		}
		handler.ServeHTTP(w, r)
	})
	err = http.Serve(ln, logged)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Completion is what the test servers read of a /v1/completions request.
type Completion struct {
	Prompt    string `json:"prompt"`
	MaxTokens int    `json:"max_tokens"`
}

// ReadCompletion decodes a completion request's body; a body that is not
// one is answered 400 Bad Request, and ok is false.
func ReadCompletion(w http.ResponseWriter, r *http.Request) (c Completion, ok bool) {
	if json.NewDecoder(r.Body).Decode(&c) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return c, false
	}
	return c, true
}

// proxy forwards every request to target, each chunk as it comes.
//
// The inbound response is full duplex: by default Go's HTTP/1 server, on
// writing the response header, drains and closes what the handler has not
// read of the request body. The transport still forwarding that body reads
// once more past its Content-Length (to check it was not longer), gets
// "invalid Read on closed Body", and closes the upstream connection in the
// middle of the response: the client then sees the stream cut (about one
// sweep test in three on a loaded machine; golang/go#40747).
func proxy(target *url.URL) http.Handler {
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1 // every chunk at once, as the server sent it
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			http.Error(w, "fakeserver: "+err.Error(), http.StatusInternalServerError)
			return
		}
		rp.ServeHTTP(w, r)
	})
}
