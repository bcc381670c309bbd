package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/headroom-llm/headroom/rundir"
)

// maxLineBytes bounds one stored log line; longer lines are cut (and say so).
const maxLineBytes = 64 << 10

// LogCapture appends server log lines to a run's server.log and records
// each line's arrival time in server_log_lines. It is safe for concurrent
// use (stdout and stderr of a child arrive on two goroutines).
type LogCapture struct {
	now  func(time.Time) int64
	mu   sync.Mutex
	f    *os.File
	line int64
	rows *rundir.TableWriter[rundir.ServerLogLineRow]
	head []string // the first lines, for engine detection
	err  error
	// secrets are replaced in every line: servers log their arguments,
	// API keys included.
	secrets *Secrets
	// replica is set on every line row of a replica's log; sharedRows: the
	// rows writer is the run's, shared by every replica, and not stopped
	// by Close.
	replica    *int32
	sharedRows bool
}

// headLines is how many first lines are kept for engine detection.
const headLines = 200

// NewLogCapture creates dir/server.log and the server_log_lines writer.
// now converts a receive time to the run's Unix ns. When server.log
// exists (a resumed sweep), new lines are appended and numbered after the
// ones there; a last line cut by a crash is ended first.
func NewLogCapture(dir string, now func(time.Time) int64) (*LogCapture, error) {
	f, n, err := openLog(filepath.Join(dir, rundir.ServerLogFile))
	if err != nil {
		return nil, err
	}
	rows, err := rundir.NewTableWriter[rundir.ServerLogLineRow](dir, rundir.TableServerLogLines, 5*time.Second)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &LogCapture{now: now, f: f, rows: rows, line: n}, nil
}

// NewReplicaLogCapture captures the log of replica i of a sweep against
// several servers: dir/server-<i>.log (rundir.ReplicaLogFile), its line
// times in rows (the run's one server_log_lines writer, which every
// replica shares and the caller stops) with the replica's index.
func NewReplicaLogCapture(dir string, i int, rows *rundir.TableWriter[rundir.ServerLogLineRow], now func(time.Time) int64) (*LogCapture, error) {
	f, n, err := openLog(filepath.Join(dir, rundir.ReplicaLogFile(i)))
	if err != nil {
		return nil, err
	}
	r := int32(i)
	return &LogCapture{now: now, f: f, rows: rows, line: n, replica: &r, sharedRows: true}, nil
}

// openLog opens a log file for appending and counts the lines there.
func openLog(path string) (*os.File, int64, error) {
	lines, err := countLines(path)
	if err != nil {
		return nil, 0, fmt.Errorf("server log: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, 0, fmt.Errorf("server log: %w", err)
	}
	if lines.cut {
		if _, err := f.Write([]byte("\n")); err != nil {
			f.Close()
			return nil, 0, fmt.Errorf("server log: %w", err)
		}
	}
	return f, lines.n, nil
}

type lineCount struct {
	n   int64 // lines, counting a last line without its newline
	cut bool  // the file does not end with a newline
}

// countLines counts the lines of a file; a missing file has none.
func countLines(path string) (lineCount, error) {
	var lc lineCount
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return lc, nil
	}
	if err != nil {
		return lc, err
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	var last byte = '\n'
	for {
		n, err := f.Read(buf)
		if n > 0 {
			lc.n += int64(bytes.Count(buf[:n], []byte{'\n'}))
			last = buf[n-1]
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return lc, err
		}
	}
	if last != '\n' {
		lc.n++
		lc.cut = true
	}
	return lc, nil
}

// Redact makes every later line have these secrets replaced.
func (c *LogCapture) Redact(secrets *Secrets) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.secrets = secrets
}

// Line stores one line (without its newline) received at t.
func (c *LogCapture) Line(text []byte, t time.Time) {
	text = bytes.TrimRight(text, "\r\n")
	c.mu.Lock()
	secrets := c.secrets
	c.mu.Unlock()
	text = secrets.Bytes(text)
	// Servers print their arguments (vLLM's "non-default args: {'hf_token':
	// 'hf_…'}"): a credential headroom was not told about is hidden too.
	text = redactTokens(text)
	if len(text) > maxLineBytes {
		text = append(text[:maxLineBytes:maxLineBytes], " [line cut by headroom]"...)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		return
	}
	if _, err := c.f.Write(append(text, '\n')); err != nil && c.err == nil {
		c.err = err
	}
	c.line++
	c.rows.Add(rundir.ServerLogLineRow{Line: c.line, RecvNS: c.now(t), Replica: c.replica})
	if len(c.head) < headLines {
		c.head = append(c.head, string(text))
	}
}

// Head returns the first lines received.
func (c *LogCapture) Head() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.head...)
}

// Lines is the number of lines stored so far.
func (c *LogCapture) Lines() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.line
}

// Flush writes the line times received so far as a part file.
func (c *LogCapture) Flush() error { return c.rows.Flush() }

// Close flushes and closes; lines arriving later are dropped.
func (c *LogCapture) Close() error {
	c.mu.Lock()
	f := c.f
	c.f = nil
	c.mu.Unlock()
	var errs []error
	if f != nil {
		errs = append(errs, f.Close())
	}
	if !c.sharedRows {
		errs = append(errs, c.rows.Stop())
	}
	errs = append(errs, c.err)
	for _, e := range errs {
		if e != nil {
			return fmt.Errorf("server log: %w", e)
		}
	}
	return nil
}
