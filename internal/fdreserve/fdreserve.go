// Package fdreserve keeps a few file descriptors in hand for when a process
// must write and everything else has taken the rest: a load generator whose
// streams reach the open-files limit still has to write their rows.
package fdreserve

import (
	"os"
	"sync"
)

// Reserve holds descriptors open on /dev/null until they are needed.
type Reserve struct {
	mu    sync.Mutex
	n     int
	files []*os.File
}

// New opens n descriptors, as many as it can.
func New(n int) *Reserve {
	r := &Reserve{n: n}
	r.Refill()
	return r
}

// Release closes the descriptors held, so that what comes next can open
// files.
func (r *Reserve) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.files {
		f.Close()
	}
	r.files = r.files[:0]
}

// Refill opens descriptors again up to n, as many as the limit allows, and
// returns how many it holds.
func (r *Reserve) Refill() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.files) < r.n {
		f, err := os.Open(os.DevNull)
		if err != nil {
			break
		}
		r.files = append(r.files, f)
	}
	return len(r.files)
}

// Held is the number of descriptors held.
func (r *Reserve) Held() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.files)
}
