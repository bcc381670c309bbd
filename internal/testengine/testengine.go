// Package testengine starts headroom's test inference engine (test/engine/server.mjs: llama.cpp
// through node-llama-cpp, behind an OpenAI-compatible streaming shim) on loopback, with a tiny
// random-weight GGUF model written for the test. See docs/test-engine.md.
//
// The engine needs Node.js (>= 20) and the pinned npm package, which .ci/run installs
// (or: cd test/engine && npm ci --omit=optional). A test that calls Start fails, never skips,
// when they are missing.
package testengine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/headroom-llm/headroom/internal/gguf"
)

// Defaults of Options.
const (
	DefaultSequences       = 4
	DefaultCtxPerSeq       = 1024
	DefaultThreads         = 1
	DefaultBatchTokens     = 512
	DefaultStartTimeout    = 60 * time.Second
	DefaultMaxLifetime     = 10 * time.Minute
	DefaultStepLogInterval = 100 * time.Millisecond
)

// installHint is the one line a test prints when the engine cannot start for want of software.
const installHint = "run .ci/run (which installs it) or `npm ci --omit=optional` in test/engine"

// Options configure one engine. The zero value is a TinyLlama model with DefaultSequences
// sequences of DefaultCtxPerSeq tokens and no KV budget beyond that.
type Options struct {
	// Model is the random-weight model to write; the zero value means gguf.TinyLlama().
	Model gguf.LlamaConfig
	// ModelPath, when set, serves that GGUF file instead of writing Model.
	ModelPath string
	// ModelName is the id in /v1/models; default: Model.Name (or the file name of ModelPath).
	ModelName string
	// Sequences is the number of parallel sequences (batch slots) in the llama.cpp context.
	Sequences int
	// CtxPerSeq is each sequence's context size in tokens; longer prompt+max_tokens get HTTP 400.
	CtxPerSeq int
	// KVBudgetTokens is the KV token budget shared by all sequences; default Sequences*CtxPerSeq.
	// Below that, requests queue and running ones get preempted when the budget is exceeded.
	KVBudgetTokens int
	// Threads for llama.cpp; 1 is fastest on a small shared machine.
	Threads int
	// BatchTokens is the most tokens one step (one llama_decode) evaluates.
	BatchTokens int
	// StepLogInterval rate-limits the "step" log lines; 0 means DefaultStepLogInterval and a
	// negative value logs every step.
	StepLogInterval time.Duration
	// StartTimeout bounds the wait for /health; default DefaultStartTimeout.
	StartTimeout time.Duration
	// MaxLifetime makes the engine exit on its own after this long, should cleanup never run;
	// default DefaultMaxLifetime.
	MaxLifetime time.Duration
	// PrefixCache keeps a finished request's tokens in its sequence, so that a
	// later prompt sharing their prefix evaluates only the rest (reported as
	// usage.prompt_tokens_details.cached_tokens and nodellama:prefix_cache_*).
	PrefixCache bool
}

// Engine is a running test engine.
type Engine struct {
	// BaseURL is "http://127.0.0.1:PORT", without /v1.
	BaseURL string
	// Port is the loopback port the engine listens on.
	Port int
	// ModelPath is the GGUF file the engine serves.
	ModelPath string
	// ModelName is the model id the engine answers to.
	ModelName string
	// LogPath is the file holding the engine's stderr: the log of docs/test-engine.md.
	LogPath string
	// Options are the options it runs with, defaults filled in.
	Options Options

	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // closed when the process has exited
	err   error         // the process's exit error, valid after done
}

// Start writes the model (unless Options.ModelPath is set) into t.TempDir(), starts the engine
// and waits until /health answers. The engine is stopped in t.Cleanup.
func Start(t testing.TB, opts Options) *Engine {
	t.Helper()
	e, err := start(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// StartAll starts one engine per Options, all at once, and returns them in
// that order once every one answers: a test that needs several engines
// waits for the slowest start, not for the sum of them (each loads the
// Node.js runtime, llama.cpp and its model). The test fails if any fails to
// start; those that did are stopped when it ends.
func StartAll(t testing.TB, opts ...Options) []*Engine {
	t.Helper()
	engines := make([]*Engine, len(opts))
	errs := make([]error, len(opts))
	var wg sync.WaitGroup
	for i, o := range opts {
		wg.Go(func() { engines[i], errs[i] = start(t, o) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return engines
}

func (o Options) withDefaults() Options {
	if o.Model == (gguf.LlamaConfig{}) {
		o.Model = gguf.TinyLlama()
	}
	if o.ModelName == "" {
		o.ModelName = o.Model.Name
		if o.ModelPath != "" {
			o.ModelName = strings.TrimSuffix(filepath.Base(o.ModelPath), ".gguf")
		}
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Sequences, DefaultSequences)
	def(&o.CtxPerSeq, DefaultCtxPerSeq)
	def(&o.KVBudgetTokens, o.Sequences*o.CtxPerSeq)
	def(&o.Threads, DefaultThreads)
	def(&o.BatchTokens, DefaultBatchTokens)
	if o.StepLogInterval == 0 {
		o.StepLogInterval = DefaultStepLogInterval
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.MaxLifetime == 0 {
		o.MaxLifetime = DefaultMaxLifetime
	}
	return o
}

func start(t testing.TB, opts Options) (*Engine, error) {
	opts = opts.withDefaults()
	server, err := ServerPath()
	if err != nil {
		return nil, err
	}
	node, err := nodeBinary()
	if err != nil {
		return nil, err
	}
	dir := t.TempDir()
	modelPath := opts.ModelPath
	if modelPath == "" {
		modelPath = filepath.Join(dir, "model.gguf")
		if err := gguf.WriteLlamaFile(modelPath, opts.Model); err != nil {
			return nil, fmt.Errorf("testengine: %w", err)
		}
	}
	logPath := filepath.Join(dir, "engine.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("testengine: %w", err)
	}
	defer logFile.Close() // the child has its own descriptor

	stepLogMS := opts.StepLogInterval.Milliseconds()
	if opts.StepLogInterval < 0 {
		stepLogMS = 0
	}
	lifetimeS := int64(opts.MaxLifetime / time.Second)
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if deadline, ok := d.Deadline(); ok {
			lifetimeS = min(lifetimeS, int64(time.Until(deadline)/time.Second)+5)
		}
	}
	args := []string{server,
		"--model", modelPath,
		"--model-name", opts.ModelName,
		"--port", "0",
		"--sequences", strconv.Itoa(opts.Sequences),
		"--ctx-per-seq", strconv.Itoa(opts.CtxPerSeq),
		"--kv-budget-tokens", strconv.Itoa(opts.KVBudgetTokens),
		"--threads", strconv.Itoa(opts.Threads),
		"--batch-tokens", strconv.Itoa(opts.BatchTokens),
		"--step-log-interval-ms", strconv.FormatInt(stepLogMS, 10),
		"--max-lifetime-s", strconv.FormatInt(max(lifetimeS, 1), 10),
		"--exit-on-stdin-eof",
	}
	if opts.PrefixCache {
		args = append(args, "--prefix-cache")
	}
	cmd := exec.Command(node, args...)
	cmd.Dir = filepath.Dir(server)
	cmd.Stderr = logFile
	setProcessGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("testengine: %w", err)
	}
	ports := &portWriter{ports: make(chan int, 1)}
	cmd.Stdout = ports
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("testengine: start %s: %w", node, err)
	}
	e := &Engine{ModelPath: modelPath, ModelName: opts.ModelName, LogPath: logPath, Options: opts,
		cmd: cmd, stdin: stdin, done: make(chan struct{})}
	go func() {
		e.err = cmd.Wait()
		close(e.done)
	}()
	t.Cleanup(func() {
		if err := e.stop(); err != nil {
			t.Errorf("testengine: %v; log:\n%s", err, e.logTail())
		}
	})

	timer := time.NewTimer(opts.StartTimeout)
	defer timer.Stop()
	select {
	case e.Port = <-ports.ports:
	case <-e.done:
		return nil, fmt.Errorf("testengine: the engine exited before listening (%v); log:\n%s", e.err, e.logTail())
	case <-timer.C:
		return nil, fmt.Errorf("testengine: the engine did not listen within %v; log:\n%s", opts.StartTimeout, e.logTail())
	}
	e.BaseURL = "http://127.0.0.1:" + strconv.Itoa(e.Port)
	ctx, cancel := context.WithTimeout(context.Background(), opts.StartTimeout)
	defer cancel()
	if err := e.waitHealthy(ctx); err != nil {
		return nil, fmt.Errorf("testengine: %w; log:\n%s", err, e.logTail())
	}
	return e, nil
}

var listeningLine = regexp.MustCompile(`^listening port=(\d+)\b`)

// portWriter is the engine's stdout: it sends the port of the first "listening port=N" line and
// discards everything else.
type portWriter struct {
	mu    sync.Mutex
	line  []byte
	sent  bool
	ports chan int
}

func (w *portWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range p {
		if w.sent {
			break
		}
		if c != '\n' {
			w.line = append(w.line, c)
			continue
		}
		if m := listeningLine.FindSubmatch(w.line); m != nil {
			port, err := strconv.Atoi(string(m[1]))
			if err == nil && port > 0 {
				w.ports <- port
				w.sent = true
			}
		}
		w.line = w.line[:0]
	}
	return len(p), nil
}

func (e *Engine) waitHealthy(ctx context.Context) error {
	url := e.BaseURL + "/health"
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer 200 in time (last error: %v)", url, err)
		case <-e.done:
			return fmt.Errorf("the engine exited (%v)", e.err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop ends the engine: SIGTERM to its process group, SIGKILL if it lingers. It reports an
// engine that had already failed by itself (a crash, or its maximum lifetime) during the test.
func (e *Engine) stop() error {
	select {
	case <-e.done:
		if !e.cmd.ProcessState.Success() {
			return fmt.Errorf("the engine exited during the test: %v", e.err)
		}
		return nil
	default:
	}
	e.stdin.Close()
	signalGroup(e.cmd, false)
	select {
	case <-e.done:
	case <-time.After(3 * time.Second):
		signalGroup(e.cmd, true)
		<-e.done
	}
	return nil
}

// Log returns the engine's log so far.
func (e *Engine) Log() (string, error) {
	b, err := os.ReadFile(e.LogPath)
	if err != nil {
		return "", fmt.Errorf("testengine: read log: %w", err)
	}
	return string(b), nil
}

func (e *Engine) logTail() string {
	s, err := e.Log()
	if err != nil {
		return err.Error()
	}
	if len(s) > 4000 {
		s = "…" + s[len(s)-4000:]
	}
	return s
}

// RepoRoot is the directory holding go.mod, found by walking up from the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("testengine: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testengine: no go.mod above the working directory: run the tests inside the headroom repository")
		}
		dir = parent
	}
}

// ServerPath is test/engine/server.mjs, checked to have its npm package installed next to it.
func ServerPath() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "test", "engine")
	server := filepath.Join(dir, "server.mjs")
	if _, err := os.Stat(server); err != nil {
		return "", fmt.Errorf("testengine: %s is missing: %w", server, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "node-llama-cpp", "package.json")); err != nil {
		return "", fmt.Errorf("testengine: node-llama-cpp is not installed in %s: %s", dir, installHint)
	}
	return server, nil
}

var nodeMajor = regexp.MustCompile(`^v(\d+)\.`)

// nodeBinary finds node and checks it is new enough for node-llama-cpp (>= 20).
func nodeBinary() (string, error) {
	node, err := exec.LookPath("node")
	if err != nil {
		return "", fmt.Errorf("testengine: node (Node.js >= 20) is not on PATH: %s", installHint)
	}
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("testengine: %s --version: %w", node, err)
	}
	m := nodeMajor.FindSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("testengine: %s --version printed %q, want vNN.x.y", node, out)
	}
	if major, _ := strconv.Atoi(string(m[1])); major < 20 {
		return "", fmt.Errorf("testengine: %s is Node.js %s; node-llama-cpp needs >= 20: %s", node, strings.TrimSpace(string(out)), installHint)
	}
	return node, nil
}
