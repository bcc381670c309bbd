package rundir

import (
	"context"
	"sync"
	"testing"
	"time"
)

// slowRemote holds the first upload of the manifest until release is
// closed, as a network fault does, and keeps what each name last received.
type slowRemote struct {
	mu      sync.Mutex
	got     map[string][]byte
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func (r *slowRemote) Put(_ context.Context, name string, data []byte) error {
	if name == ManifestFile {
		first := false
		r.once.Do(func() { first = true })
		if first {
			close(r.started)
			<-r.release
		}
	}
	r.mu.Lock()
	r.got[name] = append([]byte(nil), data...)
	r.mu.Unlock()
	return nil
}

func (r *slowRemote) String() string { return "slow remote" }

// A manifest committed while an older one is being uploaded goes up after
// it: the final manifest of a run is never dropped as already sent (a
// sweep to s3:// once ended with the first, incomplete manifest there).
func TestMirrorUploadsAManifestCommittedDuringItsUpload(t *testing.T) {
	dir := t.TempDir()
	m := &Manifest{FormatVersion: FormatVersion, Label: "first"}
	if err := WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	r := &slowRemote{got: map[string][]byte{}, started: make(chan struct{}), release: make(chan struct{})}
	mirror := MirrorTo(dir, r)
	<-r.started // the first manifest's upload has read the file and hangs
	m.Label, m.Complete = "final", true
	if err := WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	close(r.release)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := mirror.Close(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := DecodeManifest(r.got[ManifestFile])
	if err != nil {
		t.Fatal(err)
	}
	if got.Label != "final" || !got.Complete {
		t.Fatalf("the remote manifest is %q (complete %v), want the final one", got.Label, got.Complete)
	}
}
