package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrPortInUse is returned (wrapped) when something already answers on the
// port a started server is to listen on.
var ErrPortInUse = errors.New("the port is already in use")

// CheckPortFree returns an error when something already accepts
// connections at addr (host:port): a server started now could not bind it,
// and whatever holds it would be measured instead. A port that refuses or
// does not answer is free as far as headroom can tell.
func CheckPortFree(ctx context.Context, addr string) error {
	d := net.Dialer{Timeout: time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil
	}
	c.Close()
	who := ""
	if _, port, err := net.SplitHostPort(addr); err == nil {
		if n, err := strconv.Atoi(port); err == nil {
			if pids := listenerPIDs(n); len(pids) > 0 {
				who = fmt.Sprintf(" (by %s)", describePID(pids[0]))
			}
		}
	}
	return fmt.Errorf("%w: %s already accepts connections%s; headroom would measure that server, not the one it starts: stop it, or start the new one on another port (and give that --base-url)", ErrPortInUse, addr, who)
}

// ConfirmListener checks, on Linux, that what listens on port belongs to
// the server's process group. It returns an error naming the process that
// listens when that is another one, and ok false when it cannot tell: the
// listener is not visible from here (another network namespace, a
// container's proxy, another user's process).
func (p *Process) ConfirmListener(port int) (ok bool, err error) {
	inodes := listenerInodes(port)
	if len(inodes) == 0 {
		return false, nil
	}
	pgid := p.Pid()
	var others []int
	for _, pid := range allPIDs() {
		if !ownsSocket(pid, inodes) {
			continue
		}
		if processGroup(pid) == pgid || descendantOf(pid, pgid) {
			return true, nil
		}
		others = append(others, pid)
	}
	if len(others) > 0 {
		return false, fmt.Errorf("%w: the server answering on port %d is %s, not the one headroom started (process %d)", ErrPortInUse, port, describePID(others[0]), pgid)
	}
	return false, nil
}

// listenerInodes returns the socket inodes listening on port (IPv4 and IPv6).
func listenerInodes(port int) map[string]bool {
	out := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			fields := strings.Fields(line)
			if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, ok := strings.Cut(fields[1], ":")
			if n, err := strconv.ParseUint(hexPort, 16, 16); ok && err == nil && int(n) == port {
				out[fields[9]] = true
			}
		}
	}
	return out
}

// listenerPIDs returns the processes holding a socket that listens on port
// (those visible to this user).
func listenerPIDs(port int) []int {
	inodes := listenerInodes(port)
	if len(inodes) == 0 {
		return nil
	}
	var out []int
	for _, pid := range allPIDs() {
		if ownsSocket(pid, inodes) {
			out = append(out, pid)
		}
	}
	return out
}

func allPIDs() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// ownsSocket reports whether pid has one of the sockets open.
func ownsSocket(pid int, inodes map[string]bool) bool {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(dir, fd.Name()))
		if err != nil || !strings.HasPrefix(link, "socket:[") {
			continue
		}
		if inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
			return true
		}
	}
	return false
}

// procStat returns the fields of /proc/pid/stat after the command name
// (field 3, the state, first), and the name.
func procStat(pid int) (fields []string, comm string) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, ""
	}
	s := string(data)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return nil, ""
	}
	return strings.Fields(s[closing+1:]), s[open+1 : closing]
}

// descendantOf reports whether pid was started, directly or not, by root.
func descendantOf(pid, root int) bool {
	for range 64 {
		f, _ := procStat(pid)
		if len(f) < 2 {
			return false
		}
		ppid, err := strconv.Atoi(f[1])
		if err != nil || ppid <= 1 {
			return false
		}
		if ppid == root {
			return true
		}
		pid = ppid
	}
	return false
}

// processGroup is pid's process group id, or -1.
func processGroup(pid int) int {
	f, _ := procStat(pid)
	if len(f) < 3 {
		return -1
	}
	g, err := strconv.Atoi(f[2])
	if err != nil {
		return -1
	}
	return g
}

// startTime is pid's start time in clock ticks since boot ("" if unknown).
func startTime(pid int) string {
	f, _ := procStat(pid)
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

func describePID(pid int) string {
	if _, comm := procStat(pid); comm != "" {
		return fmt.Sprintf("process %d (%s)", pid, comm)
	}
	return fmt.Sprintf("process %d", pid)
}

// PIDFile is the file of a run directory that names the process group of
// the server a sweep started, while it runs (removed when it is stopped): a
// sweep killed with kill -9 leaves it, and a resume stops what it names.
const PIDFile = "server.pid"

// WritePIDFile records the server's process group in dir/server.pid.
func (p *Process) WritePIDFile(dir string) error {
	pid := p.Pid()
	return os.WriteFile(filepath.Join(dir, PIDFile), fmt.Appendf(nil, "%d %s\n", pid, startTime(pid)), 0o644)
}

// RemovePIDFile removes dir/server.pid.
func RemovePIDFile(dir string) { os.Remove(filepath.Join(dir, PIDFile)) }

// KillLeftover stops the server that an earlier, killed sweep into dir
// started and left running (its process group, from dir/server.pid), so
// that a resume does not measure it. It returns what it did for a note
// ("" when nothing was left), and removes the file.
func KillLeftover(dir string, grace time.Duration) (string, error) {
	path := filepath.Join(dir, PIDFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	defer os.Remove(path)
	var pgid int
	var start string
	if n, _ := fmt.Sscan(string(data), &pgid, &start); n < 1 || pgid <= 1 {
		return "", fmt.Errorf("%s: not a process id: %q", path, strings.TrimSpace(string(data)))
	}
	if syscall.Kill(-pgid, 0) != nil {
		return "", nil // nothing of it runs
	}
	// The leader still runs: it must be the same process (its id may have
	// been reused). A group whose leader is gone keeps its id, which no new
	// process can take while the group exists.
	if f, _ := procStat(pgid); f != nil && start != "" && startTime(pgid) != start {
		return "", nil
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	deadline := time.Now().Add(grace)
	for syscall.Kill(-pgid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	how := "SIGTERM"
	if syscall.Kill(-pgid, 0) == nil {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		how = "SIGKILL"
	}
	return fmt.Sprintf("stopped the server that the interrupted sweep had started and left running (process group %d, %s)", pgid, how), nil
}
