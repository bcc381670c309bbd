package rundir

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// maxManifestBytes bounds a manifest read: a real one is a few kilobytes,
// so anything near this is not one, and reading it whole would not end
// well (/dev/zero behind a symbolic link).
const maxManifestBytes = 64 << 20

// openRegular opens path for reading only if it is a plain file. A named
// pipe or a device (a FIFO planted as a part file, a link to /dev/zero)
// would block the reader or never end: it is refused with one error
// naming what it is. The open does not block on a pipe (O_NONBLOCK), and
// the check is on the opened descriptor, so the file cannot be swapped
// between the check and the read.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file (%s): refusing to read it", path, DescribeMode(st.Mode()))
	}
	return f, nil
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

// readRegular reads a plain file whole, up to limit bytes.
func readRegular(path string, limit int64) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: larger than %d MiB: not a file headroom writes", path, limit>>20)
	}
	return data, nil
}
