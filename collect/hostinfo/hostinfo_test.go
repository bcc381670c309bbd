package hostinfo

import (
	"runtime"
	"testing"
)

func TestParsers(t *testing.T) {
	cpu := "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9R14 96-Core Processor\nflags\t\t: fpu\n"
	if got := cpuModel([]byte(cpu)); got != "AMD EPYC 9R14 96-Core Processor" {
		t.Errorf("cpu model %q", got)
	}
	if got := cpuModel([]byte("processor : 0\nCPU part : 0xd0c\nModel : Raspberry Pi 5\n")); got != "Raspberry Pi 5" {
		t.Errorf("arm cpu model %q", got)
	}
	if got := memTotal([]byte("MemTotal:       24576000 kB\nMemFree: 1 kB\n")); got != 24576000*1024 {
		t.Errorf("mem %d", got)
	}
	if got := memTotal([]byte("garbage")); got != 0 {
		t.Errorf("mem of garbage %d", got)
	}
}

func TestCollect(t *testing.T) {
	h := Collect()
	if h.OS != runtime.GOOS || h.CPUs < 1 || h.Hostname == "" {
		t.Errorf("%+v", h)
	}
	if runtime.GOOS == "linux" && (h.Kernel == "" || h.MemoryBytes <= 0) {
		t.Errorf("linux host without kernel or memory: %+v", h)
	}
}
