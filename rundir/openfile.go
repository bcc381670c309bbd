package rundir

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// MaxManifestBytes bounds a manifest read: a real one is a few kilobytes,
// so anything near this is not one, and reading it whole would not end
// well (/dev/zero behind a symbolic link).
const MaxManifestBytes = 64 << 20

// openRegularSize opens path for reading only if it is a plain file, and
// says its size. A named pipe or a device (a FIFO planted as a part file, a
// link to /dev/zero) would block the reader or never end: it is refused
// with one error naming what it is. The open does not block on a pipe
// (O_NONBLOCK), and the check is on the opened descriptor, so the file
// cannot be swapped between the check and the read.
func openRegularSize(path string) (*os.File, int64, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, 0, fmt.Errorf("%s: not a regular file (%s): refusing to read it", path, DescribeMode(st.Mode()))
	}
	return f, st.Size(), nil
}

// DescribeMode names a file mode's type in words, for messages that refuse
// a file that is not a plain one.
func DescribeMode(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return m.Type().String()
}

// readRegular reads a plain file whole, up to limit bytes: with one read
// of the size the file has (io.ReadAll, growing its buffer from 512 bytes,
// took eight reads for a run's summary, and an archive has thousands).
func readRegular(path string, limit int64) ([]byte, error) {
	f, size, err := openRegularSize(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > limit {
		return nil, tooLarge(path, limit)
	}
	// One byte more than the size, so that a file that grew since is read
	// on to its end (up to the limit), not cut.
	data := make([]byte, 0, size+1)
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
		if int64(len(data)) > limit {
			return nil, tooLarge(path, limit)
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
}

// tooLarge is the error for a file past a read's limit.
func tooLarge(path string, limit int64) error {
	return fmt.Errorf("%s: larger than %d MiB: not a file headroom writes", path, limit>>20)
}
