//go:build linux

package cputime

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the CPU times in /proc/PID/stat. Linux fixes it
// at 100 for user space on every architecture it supports (USER_HZ).
const userHZ = 100

// Thread is one thread's CPU use so far, from /proc.
type Thread struct {
	PID, TID int
	Name     string // comm, as the kernel holds it (up to 15 bytes)
	// User and System are the CPU time the thread used (/proc stat, 10 ms
	// resolution); Run and Wait the scheduler's own account (schedstat, ns):
	// time on a CPU and time runnable but waiting for one. HasSched is
	// false when the kernel does not report schedstat.
	User, System time.Duration
	Run, Wait    time.Duration
	HasSched     bool
}

// Threads reads every thread of process pid. An error means the process
// is gone or /proc cannot be read.
func Threads(pid int) ([]Thread, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "task")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := make([]Thread, 0, len(ents))
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		t := Thread{PID: pid, TID: tid}
		stat, err := os.ReadFile(filepath.Join(dir, e.Name(), "stat"))
		if err != nil {
			continue // the thread ended between the listing and now
		}
		if !parseStat(stat, &t) {
			continue
		}
		if ss, err := os.ReadFile(filepath.Join(dir, e.Name(), "schedstat")); err == nil {
			if f := strings.Fields(string(ss)); len(f) >= 2 {
				run, err1 := strconv.ParseInt(f[0], 10, 64)
				wait, err2 := strconv.ParseInt(f[1], 10, 64)
				if err1 == nil && err2 == nil {
					t.Run, t.Wait, t.HasSched = time.Duration(run), time.Duration(wait), true
				}
			}
		}
		out = append(out, t)
	}
	return out, nil
}

// parseStat reads comm, utime and stime from a /proc stat line. The comm
// is in parentheses and may itself hold spaces and parentheses: the
// fields after it start after the last ')'.
func parseStat(b []byte, t *Thread) bool {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return false
	}
	t.Name = string(b[open+1 : end])
	f := strings.Fields(string(b[end+1:]))
	// After comm: state(0) ppid(1) ... utime(11) stime(12).
	if len(f) < 13 {
		return false
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	t.User, t.System = time.Duration(u)*time.Second/userHZ, time.Duration(s)*time.Second/userHZ
	return true
}

// Tree returns pid and every process descended from it, parents first.
func Tree(pid int) []int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		end := bytes.LastIndexByte(stat, ')')
		if end < 0 {
			continue
		}
		if f := strings.Fields(string(stat[end+1:])); len(f) > 1 {
			if pp, err := strconv.Atoi(f[1]); err == nil {
				children[pp] = append(children[pp], p)
			}
		}
	}
	out := []int{pid}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// Wait is the time this process's threads have spent runnable but waiting
// for a CPU; ok is false when the kernel does not report it.
func Wait() (time.Duration, bool) {
	ts, err := Threads(os.Getpid())
	if err != nil {
		return 0, false
	}
	var w time.Duration
	ok := false
	for _, t := range ts {
		if t.HasSched {
			w, ok = w+t.Wait, true
		}
	}
	return w, ok
}

// ListeningPID finds the process listening on TCP port on this host (IPv4
// or IPv6, any address): the socket's inode from /proc/net/tcp{,6}, then
// the process holding it among /proc/*/fd. ok is false when none is found
// or the process is not readable (another user's, without privilege).
func ListeningPID(port int) (int, bool) {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 || fs[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, ok := strings.Cut(fs[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 32); ok && err == nil && int(p) == port {
				inodes["socket:["+fs[9]+"]"] = true
			}
		}
		fh.Close()
	}
	if len(inodes) == 0 {
		return 0, false
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fds, err := os.ReadDir(filepath.Join("/proc", e.Name(), "fd"))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			if l, err := os.Readlink(filepath.Join("/proc", e.Name(), "fd", fd.Name())); err == nil && inodes[l] {
				return p, true
			}
		}
	}
	return 0, false
}
