//go:build linux

package cputime

import (
	"net"
	"os"
	"os/exec"
	"testing"
	"time"
)

// A thread of this process that spins for 200 ms of CPU time shows it in
// stat and in schedstat (however busy the host is: it spins on CPU time,
// not wall time).
func TestThreadsOfThisProcess(t *testing.T) {
	start := Total()
	done := make(chan struct{})
	go func() {
		for Total()-start < 200*time.Millisecond {
		}
		close(done)
	}()
	<-done
	ts, err := Threads(os.Getpid())
	if err != nil || len(ts) == 0 {
		t.Fatalf("threads: %v %v", ts, err)
	}
	var cpu, run time.Duration
	for _, th := range ts {
		cpu += th.User + th.System
		run += th.Run
		if th.PID != os.Getpid() || th.Name == "" {
			t.Errorf("thread %+v", th)
		}
	}
	if cpu < 150*time.Millisecond {
		t.Errorf("CPU time %v after 200 ms of spinning", cpu)
	}
	if ts[0].HasSched && run < 150*time.Millisecond {
		t.Errorf("schedstat run time %v after 200 ms of spinning", run)
	}
	if _, ok := Wait(); ok != ts[0].HasSched {
		t.Errorf("Wait ok %v, schedstat %v", ok, ts[0].HasSched)
	}
	if _, err := Threads(1 << 30); err == nil {
		t.Error("no error for a process that does not exist")
	}
}

func TestTreeHasChild(t *testing.T) {
	cmd := exec.Command("sleep", "5")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	tree := Tree(os.Getpid())
	found := false
	for _, p := range tree {
		found = found || p == cmd.Process.Pid
	}
	if !found || tree[0] != os.Getpid() {
		t.Errorf("tree %v lacks child %d", tree, cmd.Process.Pid)
	}
}

func TestListeningPID(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	if pid, ok := ListeningPID(port); !ok || pid != os.Getpid() {
		t.Errorf("listening pid %d %v, want %d", pid, ok, os.Getpid())
	}
	ln.Close()
	if _, ok := ListeningPID(port); ok {
		t.Error("found a listener on a closed port")
	}
}

// A comm with spaces and parentheses does not shift the fields.
func TestParseStatOddName(t *testing.T) {
	var th Thread
	line := []byte("42 (a (b) c) R 1 2 3 4 5 6 7 8 9 10 250 50 0 0")
	if !parseStat(line, &th) || th.Name != "a (b) c" || th.User != 2500*time.Millisecond || th.System != 500*time.Millisecond {
		t.Errorf("%+v", th)
	}
}
