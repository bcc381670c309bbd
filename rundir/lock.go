package rundir

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// ErrRunBusy is returned (wrapped) by Lock when another process holds the
// run: a sweep still recording it, or a --resume of it.
var ErrRunBusy = errors.New("another headroom is recording this run")

// Lock takes the run directory for this process until unlock is called or
// the process ends (kill -9 included: the kernel drops the lock), so that
// two `sweep --resume` of one run, or a resume of a sweep still running,
// cannot write the same tables. It is an advisory lock (flock) on the
// directory itself: nothing is added to the run.
func Lock(dir string) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w (wait for it to end, or stop it first)", dir, ErrRunBusy)
		}
		return nil, fmt.Errorf("%s: lock: %w", dir, err)
	}
	return func() { f.Close() }, nil
}
