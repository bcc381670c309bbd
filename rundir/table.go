package rundir

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ServerLogFile is the raw server log captured during a sweep; the
// server_log_lines table maps its lines to the times they were received.
const ServerLogFile = "server.log"

const partPrefix, partSuffix = "part-", ".parquet"

// TableParts lists the part files of a table in write order. A table that
// was never written has no parts and no error.
func TableParts(dir, table string) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(dir, table))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	join := func(name string) string { return filepath.Join(dir, table, name) }
	names, err := partNames(entries, join)
	for i, n := range names {
		names[i] = join(n)
	}
	return names, err
}

// partNames picks the part files among the entries of a table's folder
// and gives their names in write (part number) order; a name that is a
// part's but not one headroom writes is an error naming the entry as
// where says.
func partNames(entries []os.DirEntry, where func(name string) string) ([]string, error) {
	type part struct {
		n    int
		name string
	}
	var parts []part
	for _, e := range entries {
		n, ok, err := partName(e.Name())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where(e.Name()), err)
		}
		if ok && !e.IsDir() {
			parts = append(parts, part{n, e.Name()})
		}
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i].n < parts[j].n })
	names := make([]string, len(parts))
	for i, p := range parts {
		names[i] = p.name
	}
	return names, nil
}

func partNumber(name string) (int, bool) {
	n, ok, err := partName(name)
	return n, ok && err == nil
}

// partName reads a part file's number. A name that is not a part's is not
// one (ok false); a part's name whose number headroom cannot have written
// (part-99999999999999999999.parquet, part--1.parquet) is an error, never
// a part silently left out.
func partName(name string) (n int, ok bool, err error) {
	if !strings.HasPrefix(name, partPrefix) || !strings.HasSuffix(name, partSuffix) || len(name) < len(partPrefix)+len(partSuffix) {
		return 0, false, nil
	}
	digits := strings.TrimSuffix(strings.TrimPrefix(name, partPrefix), partSuffix)
	n, err = strconv.Atoi(digits)
	if err != nil || n < 0 || strings.TrimLeft(digits, "0123456789") != "" {
		return 0, false, fmt.Errorf("a part file must be named part-N.parquet with N a number below 2^63: %q is not", name)
	}
	return n, true, nil
}

// HasTable reports whether the table has at least one part file.
func HasTable(dir, table string) bool {
	parts, err := TableParts(dir, table)
	return err == nil && len(parts) > 0
}

// ReadTable reads every part of a table, in order. A missing table reads as
// no rows. Errors name the part file.
func ReadTable[T any](dir, table string) ([]T, error) {
	parts, err := TableParts(dir, table)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, table), err)
	}
	var rows []T
	for _, p := range parts {
		r, err := decodeParquetFile[T](p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		rows = append(rows, r...)
	}
	return rows, nil
}

// WriteTable appends rows to a table as one new part file.
func WriteTable[T any](dir, table string, rows []T) error {
	w, err := NewTableWriter[T](dir, table, 0)
	if err != nil {
		return err
	}
	w.Add(rows...)
	return w.Stop()
}

// TableWriter appends rows to a table. Add never blocks on I/O; rows are
// written as a new part file by Flush, by the periodic flusher, and by Stop.
// One TableWriter per table at a time.
type TableWriter[T any] struct {
	dir, table string
	runID      string // the run's id, written in every part's run_id column

	mu      sync.Mutex
	pending []T
	next    int // number of the next part file
	errs    []error
	stopped bool

	ioMu sync.Mutex // serialises part writes
	done chan struct{}
	wg   sync.WaitGroup
}

// NewTableWriter prepares a writer for dir/table, continuing after any
// parts already there (a resumed run). With flushEvery > 0 it also flushes
// on that period until Stop.
func NewTableWriter[T any](dir, table string, flushEvery time.Duration) (*TableWriter[T], error) {
	if _, err := codecFor[T](); err != nil {
		return nil, err
	}
	tdir := filepath.Join(dir, table)
	if err := os.MkdirAll(tdir, 0o755); err != nil {
		return nil, fmt.Errorf("create table %s: %w", tdir, err)
	}
	parts, err := TableParts(dir, table)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tdir, err)
	}
	w := &TableWriter[T]{dir: dir, table: table, runID: runIDOf(dir), done: make(chan struct{})}
	if len(parts) > 0 {
		n, _ := partNumber(filepath.Base(parts[len(parts)-1]))
		w.next = n + 1
	}
	if flushEvery > 0 {
		w.wg.Add(1)
		go w.flushLoop(flushEvery)
	}
	return w, nil
}

func (w *TableWriter[T]) flushLoop(every time.Duration) {
	defer w.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-w.done:
			return
		case <-t.C:
			w.Flush() // errors are kept and returned by Stop
		}
	}
}

// Add queues rows for the next flush. It is safe for concurrent use and
// does no I/O. Rows added after Stop are dropped and reported by Stop.
func (w *TableWriter[T]) Add(rows ...T) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		if len(rows) > 0 {
			w.errs = append(w.errs, fmt.Errorf("%s: %d rows added after Stop", w.table, len(rows)))
		}
		return
	}
	w.pending = append(w.pending, rows...)
}

// Flush writes the queued rows as one part file, atomically. It returns the
// error of this write; every error is also returned again by Stop.
func (w *TableWriter[T]) Flush() error {
	w.ioMu.Lock()
	defer w.ioMu.Unlock()
	w.mu.Lock()
	rows := w.pending
	w.pending = nil
	n := w.next
	if len(rows) > 0 {
		w.next++
	}
	w.mu.Unlock()
	if len(rows) == 0 {
		return nil
	}
	err := w.writePart(n, rows)
	if err != nil {
		w.mu.Lock()
		// Keep the rows so a later flush can retry them.
		w.pending = append(rows, w.pending...)
		w.errs = append(w.errs, err)
		w.mu.Unlock()
	}
	return err
}

func (w *TableWriter[T]) writePart(n int, rows []T) error {
	var buf bytes.Buffer
	if err := encodeParquet(&buf, rows, w.runID, true); err != nil {
		return fmt.Errorf("%s: encode: %w", w.table, err)
	}
	path := filepath.Join(w.dir, w.table, fmt.Sprintf("%s%05d%s", partPrefix, n, partSuffix))
	return writeFileAtomic(path, buf.Bytes())
}

// Stop flushes what is queued, ends the periodic flusher and returns every
// error seen since the writer was made. It is idempotent.
func (w *TableWriter[T]) Stop() error {
	w.mu.Lock()
	first := !w.stopped
	w.stopped = true
	w.mu.Unlock()
	if first {
		close(w.done)
		w.wg.Wait()
		w.Flush()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return errors.Join(w.errs...)
}
