package rundir

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// Remote is where a run written on this machine is copied as it is
// written: an object-store prefix (objstore.Target). Put must replace the
// object whole (a reader sees the old one or the new one).
type Remote interface {
	Put(ctx context.Context, name string, data []byte) error
	String() string
}

// A Mirror copies a local run directory to a Remote while collectors write
// it: every part file is uploaded once it is committed (renamed into
// place), in commit order, and the manifest after the parts committed
// before it, so a reader of the remote copy never finds a manifest naming
// data that is not there yet. server.log, which is appended to, goes up
// just before each manifest. Uploads run on one goroutine and never block
// the writers; a failed upload is retried (with a growing pause) until it
// succeeds or the mirror is closed, and the local directory keeps
// everything meanwhile, so a network fault loses nothing.
type Mirror struct {
	dir    string
	remote Remote

	mu      sync.Mutex
	queue   []string // names relative to dir, slash-separated
	closing bool
	lastErr error
	wake    chan struct{}
	done    chan struct{}
	uploads int

	stop     context.CancelFunc
	uploadCt context.Context
}

var mirrors sync.Map // cleaned run directory -> *Mirror

// MirrorTo starts copying the run directory dir to remote: what is there
// already (parts first, the manifest last), then every file committed from
// now on. Close finishes the copy.
func MirrorTo(dir string, remote Remote) *Mirror {
	ctx, stop := context.WithCancel(context.Background())
	m := &Mirror{dir: filepath.Clean(dir), remote: remote, wake: make(chan struct{}, 1), done: make(chan struct{}),
		stop: stop, uploadCt: ctx}
	mirrors.Store(m.dir, m)
	for _, t := range AllTables {
		parts, _ := TableParts(dir, t)
		for _, p := range parts {
			m.add(t + "/" + filepath.Base(p))
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err == nil {
		m.addManifest()
	}
	go m.run()
	return m
}

// committed tells the mirror of path's run, if any, that path is in place.
func committed(path string) {
	tableDir := filepath.Dir(path)
	if v, ok := mirrors.Load(tableDir); ok && filepath.Base(path) == ManifestFile {
		v.(*Mirror).addManifest()
		return
	}
	if v, ok := mirrors.Load(tableDir); ok && filepath.Base(path) == SummaryFile {
		v.(*Mirror).add(SummaryFile)
		return
	}
	if v, ok := mirrors.Load(filepath.Dir(tableDir)); ok {
		v.(*Mirror).add(filepath.Base(tableDir) + "/" + filepath.Base(path))
	}
}

func (m *Mirror) add(name string) {
	m.mu.Lock()
	m.queue = append(slices.DeleteFunc(m.queue, func(q string) bool { return q == name }), name)
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// addManifest queues the log and the manifest behind everything queued:
// both are read when they are uploaded, so the newest content goes up.
func (m *Mirror) addManifest() {
	if _, err := os.Stat(filepath.Join(m.dir, ServerLogFile)); err == nil {
		m.add(ServerLogFile)
	}
	// A sweep against several replicas keeps one log each.
	for i := 0; ; i++ {
		if _, err := os.Stat(filepath.Join(m.dir, ReplicaLogFile(i))); err != nil {
			break
		}
		m.add(ReplicaLogFile(i))
	}
	m.add(ManifestFile)
	// The summary names the manifest it was made from; uploaded after it,
	// a reader never trusts one made from another manifest.
	if hasSummary(m.dir) {
		m.add(SummaryFile)
	}
}

func (m *Mirror) run() {
	defer close(m.done)
	pause := time.Second
	for {
		m.mu.Lock()
		if len(m.queue) == 0 {
			closing := m.closing
			m.mu.Unlock()
			if closing {
				return
			}
			select {
			case <-m.wake:
			case <-m.uploadCt.Done():
				return
			}
			continue
		}
		name := m.queue[0]
		m.mu.Unlock()
		err := m.upload(name)
		m.mu.Lock()
		if err == nil {
			if len(m.queue) > 0 && m.queue[0] == name {
				m.queue = m.queue[1:]
			}
			m.uploads++
			m.lastErr = nil
			pause = time.Second
			m.mu.Unlock()
			continue
		}
		m.lastErr = err
		m.mu.Unlock()
		select {
		case <-time.After(pause):
		case <-m.uploadCt.Done():
			return
		}
		pause = min(2*pause, 30*time.Second)
	}
}

func (m *Mirror) upload(name string) error {
	data, err := os.ReadFile(filepath.Join(m.dir, filepath.FromSlash(name)))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(m.uploadCt, 2*time.Minute)
	defer cancel()
	return m.remote.Put(ctx, name, data)
}

// Pending is how many files wait to be uploaded, and the last upload
// error since the last success (nil when uploads go through).
func (m *Mirror) Pending() (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.queue), m.lastErr
}

// Close uploads the run's manifest and log once more (after everything
// else), waits until every file is up or ctx ends, and stops the mirror.
// The error says what was not uploaded; the local directory has it all.
func (m *Mirror) Close(ctx context.Context) error {
	m.addManifest()
	m.mu.Lock()
	m.closing = true
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
	select {
	case <-m.done:
	case <-ctx.Done():
		m.stop()
		<-m.done
	}
	m.stop()
	mirrors.Delete(m.dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := len(m.queue); n > 0 {
		why := ctx.Err()
		if m.lastErr != nil {
			why = m.lastErr
		}
		return fmt.Errorf("%d of the run's files are not in %s yet (%v); the complete run is in %s", n, m.remote, why, m.dir)
	}
	return nil
}
