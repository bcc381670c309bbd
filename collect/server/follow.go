package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/headroom-llm/headroom/internal/cputime"
	"github.com/headroom-llm/headroom/rundir"
)

// DefaultFollowPoll is how often a followed log file is checked for new data.
const DefaultFollowPoll = 50 * time.Millisecond

// Follow reads the lines appended to path from its current end until ctx
// ends, like tail -F: it reopens the file when it is replaced (rotation)
// and starts over when it is truncated; a file that does not exist yet is
// waited for. Each complete line goes to sink with the time it was read;
// when ctx ends, what the file holds by then is read, and a last
// unterminated line delivered.
func Follow(ctx context.Context, path string, poll time.Duration, sink func([]byte, time.Time)) error {
	return (&Follower{Path: path, From: -1, Poll: poll, Sink: sink}).Run(ctx)
}

// FollowFrom is Follow starting at byte offset from of the file as it is
// now (-1: its end), so that a caller that read its head (ReadHead) goes
// on without a gap or a repeat.
func FollowFrom(ctx context.Context, path string, from int64, poll time.Duration, sink func([]byte, time.Time)) error {
	return (&Follower{Path: path, From: from, Poll: poll, Sink: sink}).Run(ctx)
}

// ErrNotRegular is returned (wrapped) for a log path that is not a regular
// file: a device such as /dev/zero never ends, and a pipe cannot be
// followed from an offset.
var ErrNotRegular = errors.New("not a regular file")

// CheckRegular returns an error unless path is a regular file or does not
// exist yet (a log the server will create). It never blocks, not on a FIFO.
func CheckRegular(path string) error {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: %w (%s): give the file the server writes its log to", path, ErrNotRegular, rundir.DescribeMode(st.Mode()))
	}
	return nil
}

// Follower follows a log file (see Follow). Its cost is linear in what it
// reads: a line longer than the stored bound (64 KiB, as a --server-cmd's
// output is captured) is kept up to a little past the bound (so that its
// redaction sees a secret across the cut whole) and the rest of it is
// skipped, and the follower counts the CPU time its thread uses (CPU), for
// the client's self-check: it runs on the client's cores.
type Follower struct {
	Path string
	From int64 // byte offset to start at; -1: the file's end
	Poll time.Duration
	Sink func([]byte, time.Time)

	cpuNS atomic.Int64
}

// CPU is the CPU time the follower has used so far (0 where the system
// cannot tell).
func (f *Follower) CPU() time.Duration { return time.Duration(f.cpuNS.Load()) }

// Run follows until ctx ends, and returns nil then, or an error that stops
// it (the path is not a regular file, a read fails).
func (f *Follower) Run(ctx context.Context) error {
	poll := f.Poll
	if poll <= 0 {
		poll = DefaultFollowPoll
	}
	// The follower's own CPU is measured on its thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	base, measured := cputime.ThisThread()
	account := func() {
		if measured {
			if now, ok := cputime.ThisThread(); ok {
				f.cpuNS.Store(int64(now - base))
			}
		}
	}
	defer account()
	var (
		file   *os.File
		ino    uint64
		offset int64
		line   lineBuffer
		buf    = make([]byte, 64<<10)
	)
	open := func(fromEnd bool) error {
		if err := CheckRegular(f.Path); err != nil {
			return err
		}
		nf, err := os.Open(f.Path)
		if err != nil {
			return err
		}
		st, err := nf.Stat()
		if err != nil {
			nf.Close()
			return err
		}
		if !st.Mode().IsRegular() { // replaced between the check and the open
			nf.Close()
			return fmt.Errorf("%s: %w", f.Path, ErrNotRegular)
		}
		if file != nil {
			file.Close()
		}
		file, ino, offset = nf, inode(st), 0
		line.reset()
		if fromEnd {
			offset = st.Size()
			if f.From >= 0 && f.From <= offset {
				offset = f.From
			}
		}
		return nil
	}
	defer func() {
		if file != nil {
			file.Close()
		}
	}()
	if err := open(true); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	// read reads what the file holds past offset, while more returns true.
	read := func(more func() bool) error {
		for file != nil && more() {
			n, err := file.ReadAt(buf, offset)
			if n > 0 {
				offset += int64(n)
				line.feed(buf[:n], time.Now(), f.Sink)
				account() // a log that never pauses is counted too
			}
			if err != nil || n < len(buf) {
				if err != nil && !errors.Is(err, io.EOF) {
					return err
				}
				break
			}
		}
		return nil
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		if err := read(func() bool { return ctx.Err() == nil }); err != nil {
			return err
		}
		account()
		select {
		case <-ctx.Done():
			// What was written before the end is read too (the last lines
			// of a sweep are often its most telling), up to the file's
			// size now, so that a log that never pauses does not hold
			// the stop up.
			if file != nil {
				if st, err := file.Stat(); err == nil {
					end := st.Size()
					if err := read(func() bool { return offset < end }); err != nil {
						return err
					}
				}
			}
			line.flush(time.Now(), f.Sink)
			return nil
		case <-tick.C:
		}
		// rotation or truncation?
		st, err := os.Stat(f.Path)
		switch {
		case err != nil:
			// removed: keep reading the old file until a new one appears
		case file == nil || inode(st) != ino:
			if err := open(false); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		case st.Size() < offset:
			offset = 0 // truncated: start over
			line.reset()
		}
	}
}

// followKeep is how much of a long line the follower keeps: past the
// stored bound, so that a secret across that cut is whole when the line is
// redacted (the capture cuts it at maxLineBytes after).
const followKeep = longLineKeep

// lineBuffer assembles lines from reads. A line is kept up to followKeep
// bytes; the rest of a longer one is skipped until its newline, so memory
// and work stay bounded whatever the file holds.
type lineBuffer struct{ b []byte }

func (l *lineBuffer) reset() { l.b = l.b[:0] }

// feed takes one read's data and hands every line it completes to sink.
func (l *lineBuffer) feed(data []byte, at time.Time, sink func([]byte, time.Time)) {
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		part := data
		if i >= 0 {
			part = data[:i]
		}
		if room := followKeep - len(l.b); room > 0 {
			l.b = append(l.b, part[:min(len(part), room)]...)
		}
		if i < 0 {
			return
		}
		sink(l.b, at)
		l.reset()
		data = data[i+1:]
	}
}

// flush delivers a last unterminated line.
func (l *lineBuffer) flush(at time.Time, sink func([]byte, time.Time)) {
	if len(l.b) > 0 {
		sink(l.b, at)
	}
	l.reset()
}

func inode(st fs.FileInfo) uint64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Ino)
	}
	return 0
}

// ReadHead returns the complete lines in the first max bytes of path (a
// server's start-up: its version, configuration and arguments), the offset
// just after the last of them, and whether that is the whole file's
// content (then following from next loses nothing).
func ReadHead(path string, max int) (lines [][]byte, next int64, whole bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, false, err
	}
	defer f.Close()
	buf := make([]byte, max)
	n, err := io.ReadFull(f, buf)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, 0, false, err
	}
	buf = buf[:n]
	end := bytes.LastIndexByte(buf, '\n') + 1
	for _, l := range bytes.SplitAfter(buf[:end], []byte("\n")) {
		if len(l) > 0 {
			lines = append(lines, bytes.TrimRight(l, "\r\n"))
		}
	}
	return lines, int64(end), n < max, nil
}
