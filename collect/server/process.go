package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is an inference server started by headroom.
type Process struct {
	cmd    *exec.Cmd
	done   chan struct{} // closed when the process has exited and its output is read
	err    error         // Wait's error
	mu     sync.Mutex
	tail   []string // last lines, for error messages
	output sync.WaitGroup
}

// running holds the process group ids of the servers started and not yet
// exited, for KillAll.
var running sync.Map

// KillAll sends SIGKILL to the process group of every server Start started
// that has not exited. A second Ctrl-C calls it before headroom exits at
// once, so that no server is left behind.
func KillAll() {
	running.Range(func(pgid, _ any) bool {
		_ = syscall.Kill(-pgid.(int), syscall.SIGKILL)
		return true
	})
}

// tailLines is how many last lines an error message quotes.
const tailLines = 20

// Start runs cmdline with /bin/sh in its own process group (so stopping it
// stops everything it started), sending each line of its stdout and stderr
// to sink with the time it was read. A simple command (no ; & | or
// parentheses) is exec'd by the shell, so that the server is the child
// itself; on Linux the child is killed when headroom dies, even by kill -9
// (what it started in turn is left to the pidfile check of a resume, see
// KillLeftover).
func Start(cmdline string, sink func([]byte, time.Time)) (*Process, error) {
	if strings.TrimSpace(cmdline) == "" {
		return nil, errors.New("server command is empty")
	}
	cmd := exec.Command("/bin/sh", "-c", execSimple(cmdline))
	cmd.SysProcAttr = procAttr()
	cmd.Stdin = nil
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	p.output.Add(2) // the readers of stdout and stderr, started below
	started := make(chan error, 1)
	go func() {
		// The parent-death signal fires when the thread that forked the
		// child ends, not the process: the child is started from a thread
		// kept for as long as it runs.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			p.output.Add(-2)
			started <- fmt.Errorf("start server: %w", err)
			return
		}
		running.Store(cmd.Process.Pid, true)
		started <- nil
		p.output.Wait() // pipes are read to EOF before Wait closes them
		p.err = cmd.Wait()
		running.Delete(cmd.Process.Pid)
		close(p.done)
	}()
	// The readers must run before the child's output fills the pipes, but
	// may start only once the child has.
	if err := <-started; err != nil {
		return nil, err
	}
	for _, r := range []io.Reader{stdout, stderr} {
		go p.read(r, sink)
	}
	return p, nil
}

// execSimple prefixes a simple command with exec (after its leading
// variable assignments), so that /bin/sh replaces itself with the server
// rather than waiting for it as a child of its own. A command with shell
// operators, parentheses or a leading keyword is left as it is.
func execSimple(cmdline string) string {
	if hasOperator(cmdline) {
		return cmdline
	}
	i := 0
	for {
		for i < len(cmdline) && (cmdline[i] == ' ' || cmdline[i] == '\t') {
			i++
		}
		end := wordEnd(cmdline, i)
		word := cmdline[i:end]
		if word == "" {
			return cmdline
		}
		if name, _, ok := strings.Cut(word, "="); ok && isName(name) {
			i = end // an assignment: the command comes after
			continue
		}
		switch word {
		case "exec", "if", "for", "while", "until", "case", "{", "!", "function", "select":
			return cmdline
		}
		return cmdline[:i] + "exec " + cmdline[i:]
	}
}

// hasOperator reports an unquoted shell operator, parenthesis, newline or
// command substitution: a command line that is not one simple command.
func hasOperator(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return true // unterminated: not simple
			}
			i += j + 1
		case '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				} else if s[i] == '`' || s[i] == '$' && i+1 < len(s) && s[i+1] == '(' {
					return true
				}
			}
		case '\\':
			i++
		case ';', '&', '|', '(', ')', '\n', '`', '<', '>':
			return true
		}
	}
	return false
}

// wordEnd returns the end of the shell word starting at i (quotes kept
// whole).
func wordEnd(s string, i int) int {
	for i < len(s) && s[i] != ' ' && s[i] != '\t' {
		switch s[i] {
		case '\'', '"':
			j := strings.IndexByte(s[i+1:], s[i])
			if j < 0 {
				return len(s)
			}
			i += j + 2
		case '\\':
			i += 2
		default:
			i++
		}
	}
	return min(i, len(s))
}

// isName reports a shell variable name.
func isName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// longLineKeep is how much of a very long line read keeps: more than the
// stored maxLineBytes, so that a secret crossing that cut is still whole
// when the line is redacted, and cut away after.
const longLineKeep = maxLineBytes + 8<<10

func (p *Process) read(r io.Reader, sink func([]byte, time.Time)) {
	defer p.output.Done()
	br := bufio.NewReaderSize(r, 16<<10)
	var long []byte // the start of a line longer than the buffer
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, line[:min(len(line), longLineKeep-len(long))]...)
			continue
		}
		if long != nil {
			line = append(long, line[:min(len(line), longLineKeep-len(long))]...)
			long = nil
		}
		if len(line) > 0 {
			t := time.Now()
			sink(line, t)
			p.mu.Lock()
			p.tail = append(p.tail, strings.TrimRight(string(line), "\r\n"))
			if len(p.tail) > tailLines {
				p.tail = p.tail[1:]
			}
			p.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// exitedError says the server exited, how, and its last output.
func (p *Process) exitedError(when string) error {
	return fmt.Errorf("%w %s (%v); its last output:\n%s", ErrExited, when, p.err, p.Tail())
}

// ErrExited is returned (wrapped) when a started server exited.
var ErrExited = errors.New("the server headroom started exited")

// ExitedError is ErrExited with how the server exited and its last output,
// once it has (Exited is closed).
func (p *Process) ExitedError() error { return p.exitedError("during the sweep") }

// Pid is the server's process id (and process group id).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited is closed when the server has exited.
func (p *Process) Exited() <-chan struct{} { return p.done }

// Tail returns the server's last output lines.
func (p *Process) Tail() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.tail, "\n")
}

// WaitReady polls baseURL's /health, then /v1/models, until one answers
// 200, the server exits, ctx ends, or timeout passes.
func (p *Process) WaitReady(ctx context.Context, client *http.Client, baseURL string, timeout time.Duration, header http.Header) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, path := range []string{"/health", "/v1/models"} {
			if ok(ctx, client, JoinURL(baseURL, path), header) {
				// An answer counts only from a server that still runs: one
				// that exited (its port was taken) leaves whatever holds the
				// port answering.
				select {
				case <-p.done:
					return p.exitedError("before answering")
				default:
				}
				return nil
			}
		}
		select {
		case <-p.done:
			return p.exitedError("before answering")
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("the server did not answer %s/health or /v1/models within %v; its last output:\n%s", baseURL, timeout, p.Tail())
			}
			return ctx.Err()
		case <-tick.C:
		}
	}
}

func ok(ctx context.Context, client *http.Client, url string, header http.Header) bool {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// JoinURL appends path to a base URL's path, keeping its query (which may
// carry the credentials the server wants on every request).
func JoinURL(base, path string) string {
	u, err := url.Parse(base)
	if err != nil {
		return strings.TrimSuffix(base, "/") + path
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	return u.String()
}

// Stop sends SIGTERM to the server's process group, waits up to grace for
// it to exit, then sends SIGKILL. It returns once the process has exited
// and its output has been read.
func (p *Process) Stop(grace time.Duration) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("server process %d did not exit after SIGKILL", pgid)
	}
}

// Environ is the environment the server runs with (headroom's own).
func Environ() []string { return os.Environ() }
