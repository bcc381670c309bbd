// Package hostinfo describes the machine a collector runs on, for the
// manifest: hostname, OS, kernel, CPU model and count, memory. It reads
// /proc on Linux and leaves what it cannot learn empty elsewhere.
package hostinfo

import (
	"bufio"
	"bytes"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/headroom-llm/headroom/rundir"
)

// Collect returns what is known about this host. It never fails: unknown
// fields stay empty.
func Collect() rundir.Host {
	h := rundir.Host{OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU()}
	h.Hostname, _ = hostnameFunc()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		h.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		h.CPUModel = cpuModel(b)
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		h.MemoryBytes = memTotal(b)
	}
	return h
}

// cpuModel finds the CPU's name in /proc/cpuinfo ("model name" on x86,
// "Model" or "CPU part" elsewhere).
func cpuModel(cpuinfo []byte) string {
	var fallback string
	sc := bufio.NewScanner(bytes.NewReader(cpuinfo))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "model name":
			return v
		case "Model", "cpu model", "Hardware":
			if fallback == "" {
				fallback = v
			}
		}
	}
	return fallback
}

// memTotal reads MemTotal (kB) from /proc/meminfo, in bytes.
func memTotal(meminfo []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0
			}
			if len(f) >= 3 && f[2] != "kB" {
				return kb
			}
			return kb * 1024
		}
	}
	return 0
}

// hostnameFunc is os.Hostname.
var hostnameFunc = os.Hostname
