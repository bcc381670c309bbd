package nvml_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/headroom-llm/headroom/cuda/nvml"
	"github.com/headroom-llm/headroom/internal/fakecuda"
)

func TestReasonNames(t *testing.T) {
	tests := []struct {
		mask uint64
		want string
	}{
		{0, ""},
		{nvml.ReasonGPUIdle, "gpu_idle"},
		{nvml.ReasonSWPowerCap | nvml.ReasonHWThermalSlowdown, "sw_power_cap,hw_thermal_slowdown"},
		{nvml.ReasonDisplayClockSetting | 0x1000, "display_clock_setting,0x1000"},
	}
	for _, tt := range tests {
		if got := strings.Join(nvml.ReasonNames(tt.mask), ","); got != tt.want {
			t.Errorf("ReasonNames(%#x) = %q, want %q", tt.mask, got, tt.want)
		}
	}
	if nvml.ThrottleReasons&nvml.ReasonSWPowerCap != 0 || nvml.ThrottleReasons&nvml.ReasonHWThermalSlowdown == 0 {
		t.Error("ThrottleReasons must hold the thermal and hardware slowdowns, not the power cap")
	}
}

func TestOpenAndSampleFake(t *testing.T) {
	if _, err := nvml.Open(filepath.Join(t.TempDir(), "libnvidia-ml.so.1")); err == nil || !strings.Contains(err.Error(), "install the NVIDIA driver") {
		t.Errorf("missing library: %v", err)
	}
	f := fakecuda.Build(t)
	f.SetNVML(1755, 3201, 612345, 71, nvml.ReasonSWPowerCap)
	lib, err := nvml.Open(f.NVMLPath)
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	if v, err := lib.DriverVersion(); err != nil || v != "580.0.fake" {
		t.Errorf("DriverVersion = %q, %v", v, err)
	}
	dev, err := lib.DeviceByPCIBusID("0000:19:00.0")
	if err != nil {
		t.Fatal(err)
	}
	if dev.Name != "Fake GPU" || dev.UUID != "GPU-fake-0119" || dev.PowerLimitW != 700 || dev.MaxSMClockMHz != 1980 || dev.MaxMemClockMHz != 3201 {
		t.Errorf("device %+v", dev)
	}
	s, err := dev.Sample()
	if err != nil {
		t.Fatal(err)
	}
	want := nvml.Sample{SMClockMHz: 1755, MemClockMHz: 3201, PowerW: 612.345, TemperatureC: 71, UtilGPUPct: 100, UtilMemPct: 50,
		MemUsedBytes: 1 << 30, ClockEventReasons: nvml.ReasonSWPowerCap}
	if s != want {
		t.Errorf("Sample = %+v, want %+v", s, want)
	}
	// The energy counter where the GPU has one (Volta and later).
	f.SetNVMLEnergy(123456789012)
	if s, err = dev.Sample(); err != nil || !s.EnergyKnown || s.EnergyMJ != 123456789012 {
		t.Errorf("energy counter: %+v, %v", s, err)
	}
	_, err = lib.DeviceByPCIBusID("not a bus id")
	var nerr *nvml.Error
	if !errors.As(err, &nerr) || nerr.Code != 2 || !strings.Contains(err.Error(), "NVML_ERROR_INVALID_ARGUMENT") {
		t.Errorf("bad bus id: %v", err)
	}
	f.FailNVMLInit(9)
	if _, err := nvml.Open(f.NVMLPath); err == nil || !strings.Contains(err.Error(), "NVML_ERROR_DRIVER_NOT_LOADED") {
		t.Errorf("failing init: %v", err)
	}
}

// The process list and the base clock, from the fake: every process with
// its PID, more than the first buffer holds, and none.
func TestComputeProcessesAndBaseClock(t *testing.T) {
	f := fakecuda.Build(t)
	lib, err := nvml.Open(f.NVMLPath)
	if err != nil {
		t.Fatal(err)
	}
	defer lib.Close()
	f.SetNVMLBaseClock(1590)
	dev, err := lib.DeviceByPCIBusID("0000:19:00.0")
	if err != nil {
		t.Fatal(err)
	}
	if dev.BaseSMClockMHz != 1590 {
		t.Errorf("base clock %d, want 1590", dev.BaseSMClockMHz)
	}
	for _, n := range []int{0, 2, 40} {
		pids := make([]uint32, n)
		for i := range pids {
			pids[i] = uint32(1000 + i)
		}
		f.SetNVMLProcesses(pids...)
		procs, err := dev.ComputeProcesses()
		if err != nil {
			t.Fatal(err)
		}
		if len(procs) != n {
			t.Fatalf("%d processes, want %d", len(procs), n)
		}
		for i, p := range procs {
			if p.PID != uint32(1000+i) || p.UsedMemoryBytes != 1<<30 {
				t.Errorf("process %d: %+v", i, p)
			}
		}
	}
	f.SetNVMLBaseClock(0)
	if dev, _ := lib.DeviceByPCIBusID("0000:19:00.0"); dev.BaseSMClockMHz != 0 {
		t.Errorf("base clock %d from a library that does not report it", dev.BaseSMClockMHz)
	}
}

// NVML's topology levels (nvml.h, nvmlGpuTopologyLevel_t) map to the run
// format's path names; an unknown level is "unknown", never a guess.
func TestTopologyPath(t *testing.T) {
	for level, want := range map[uint32]string{0: "same_board", 10: "pcie_switch", 20: "pcie_switches", 30: "pcie_host_bridge",
		40: "numa_node", 50: "cpu_interconnect", 60: "unknown", 5: "unknown"} {
		if got := nvml.TopologyPath(level); got != want {
			t.Errorf("level %d: %q, want %q", level, got, want)
		}
	}
}
