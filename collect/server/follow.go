package server

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// DefaultFollowPoll is how often a followed log file is checked for new data.
const DefaultFollowPoll = 50 * time.Millisecond

// Follow reads the lines appended to path from its current end until ctx
// ends, like tail -F: it reopens the file when it is replaced (rotation)
// and starts over when it is truncated; a file that does not exist yet is
// waited for. Each complete line goes to sink with the time it was read;
// a last unterminated line is delivered when ctx ends.
func Follow(ctx context.Context, path string, poll time.Duration, sink func([]byte, time.Time)) error {
	return FollowFrom(ctx, path, -1, poll, sink)
}

// FollowFrom is Follow starting at byte offset from of the file as it is
// now (-1: its end), so that a caller that read its head (ReadHead) goes
// on without a gap or a repeat.
func FollowFrom(ctx context.Context, path string, from int64, poll time.Duration, sink func([]byte, time.Time)) error {
	if poll <= 0 {
		poll = DefaultFollowPoll
	}
	var (
		f       *os.File
		ino     uint64
		offset  int64
		pending []byte
		buf     = make([]byte, 64<<10)
	)
	open := func(fromEnd bool) error {
		nf, err := os.Open(path)
		if err != nil {
			return err
		}
		st, err := nf.Stat()
		if err != nil {
			nf.Close()
			return err
		}
		if f != nil {
			f.Close()
		}
		f, ino, offset, pending = nf, inode(st), 0, pending[:0]
		if fromEnd {
			offset = st.Size()
			if from >= 0 && from <= offset {
				offset = from
			}
		}
		return nil
	}
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	if err := open(true); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		if f != nil {
			for {
				n, err := f.ReadAt(buf, offset)
				if n > 0 {
					now := time.Now()
					offset += int64(n)
					pending = append(pending, buf[:n]...)
					for {
						i := bytes.IndexByte(pending, '\n')
						if i < 0 {
							break
						}
						sink(pending[:i], now)
						pending = pending[i+1:]
					}
					pending = append([]byte(nil), pending...)
				}
				if err != nil || n < len(buf) {
					if err != nil && !errors.Is(err, io.EOF) {
						return err
					}
					break
				}
			}
		}
		select {
		case <-ctx.Done():
			if len(pending) > 0 {
				sink(pending, time.Now())
			}
			return nil
		case <-tick.C:
		}
		// rotation or truncation?
		st, err := os.Stat(path)
		switch {
		case err != nil:
			// removed: keep reading the old file until a new one appears
		case f == nil || inode(st) != ino:
			if err := open(false); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		case st.Size() < offset:
			offset, pending = 0, pending[:0] // truncated: start over
		}
	}
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
