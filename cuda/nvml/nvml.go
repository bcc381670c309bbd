// Package nvml reads GPU clocks, power, temperature and clock-event
// (throttle) reasons through NVML, bound with purego so that headroom keeps
// building with CGO_ENABLED=0.
//
// github.com/NVIDIA/go-nvml was the first choice, but its package uses cgo
// (it does not build with CGO_ENABLED=0), so the dozen functions needed here
// are bound directly.
package nvml

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"

	"github.com/ebitengine/purego"

	"github.com/headroom-llm/headroom/cuda/internal/status"
)

// EnvLibNVML overrides where libnvidia-ml is loaded from (a file path).
const EnvLibNVML = "HEADROOM_LIBNVML"

// ErrNotSupported is returned (wrapped) for a query the device does not support.
var ErrNotSupported = errors.New("nvml: not supported")

// Return is an NVML status code (nvmlReturn_t).
type Return int32

// returnCodes names nvmlReturn_t values as nvml.h does.
var returnCodes = status.Codes[Return]{Library: "nvml", Unnamed: "NVML_ERROR_", Names: map[Return]string{
	0:   "NVML_SUCCESS",
	1:   "NVML_ERROR_UNINITIALIZED",
	2:   "NVML_ERROR_INVALID_ARGUMENT",
	3:   "NVML_ERROR_NOT_SUPPORTED",
	4:   "NVML_ERROR_NO_PERMISSION",
	6:   "NVML_ERROR_NOT_FOUND",
	7:   "NVML_ERROR_INSUFFICIENT_SIZE",
	9:   "NVML_ERROR_DRIVER_NOT_LOADED",
	12:  "NVML_ERROR_LIBRARY_NOT_FOUND",
	13:  "NVML_ERROR_FUNCTION_NOT_FOUND",
	15:  "NVML_ERROR_GPU_IS_LOST",
	999: "NVML_ERROR_UNKNOWN",
}, Sentinels: map[Return]error{notSupported: ErrNotSupported}}

// notSupported is NVML_ERROR_NOT_SUPPORTED.
const notSupported Return = 3

func (r Return) String() string { return returnCodes.Name(r) }

// Error is a failed NVML call; errors.Is(err, ErrNotSupported) matches
// NVML_ERROR_NOT_SUPPORTED.
type Error = status.Error[Return]

func check(call string, code int32) error { return returnCodes.Check(call, code) }

// Clock types (nvmlClockType_t).
const (
	clockSM  = 1
	clockMem = 2
)

// Clock-event ("throttle") reasons, nvmlClocksEventReason*.
const (
	ReasonGPUIdle                   uint64 = 0x1
	ReasonApplicationsClocksSetting uint64 = 0x2
	ReasonSWPowerCap                uint64 = 0x4
	ReasonHWSlowdown                uint64 = 0x8
	ReasonSyncBoost                 uint64 = 0x10
	ReasonSWThermalSlowdown         uint64 = 0x20
	ReasonHWThermalSlowdown         uint64 = 0x40
	ReasonHWPowerBrakeSlowdown      uint64 = 0x80
	ReasonDisplayClockSetting       uint64 = 0x100
)

var reasonNames = map[uint64]string{
	ReasonGPUIdle:                   "gpu_idle",
	ReasonApplicationsClocksSetting: "applications_clocks_setting",
	ReasonSWPowerCap:                "sw_power_cap",
	ReasonHWSlowdown:                "hw_slowdown",
	ReasonSyncBoost:                 "sync_boost",
	ReasonSWThermalSlowdown:         "sw_thermal_slowdown",
	ReasonHWThermalSlowdown:         "hw_thermal_slowdown",
	ReasonHWPowerBrakeSlowdown:      "hw_power_brake_slowdown",
	ReasonDisplayClockSetting:       "display_clock_setting",
}

// ThrottleReasons are the reasons that mean the GPU ran below the clocks it
// could sustain for reasons outside the workload's own power draw: thermal
// limits and hardware slowdowns. A result measured under them is suspect.
// (SW power cap is how every GPU holds its power limit under a heavy GEMM;
// it is recorded but not called throttling.)
const ThrottleReasons = ReasonHWSlowdown | ReasonSWThermalSlowdown | ReasonHWThermalSlowdown | ReasonHWPowerBrakeSlowdown

// ReasonNames lists the names of the bits set in mask, sorted by bit.
func ReasonNames(mask uint64) []string {
	var bits []uint64
	for b := range reasonNames {
		if mask&b != 0 {
			bits = append(bits, b)
		}
	}
	sort.Slice(bits, func(i, j int) bool { return bits[i] < bits[j] })
	names := make([]string, 0, len(bits))
	for _, b := range bits {
		names = append(names, reasonNames[b])
	}
	if rest := mask &^ (ReasonDisplayClockSetting<<1 - 1); rest != 0 {
		names = append(names, fmt.Sprintf("0x%x", rest))
	}
	return names
}

type api struct {
	nvmlInit                         func() int32
	nvmlShutdown                     func() int32
	nvmlSystemGetDriverVersion       func(version *byte, length uint32) int32
	nvmlDeviceGetHandleByPciBusId    func(busID string, dev *uintptr) int32
	nvmlDeviceGetName                func(dev uintptr, name *byte, length uint32) int32
	nvmlDeviceGetClockInfo           func(dev uintptr, clock uint32, mhz *uint32) int32
	nvmlDeviceGetMaxClockInfo        func(dev uintptr, clock uint32, mhz *uint32) int32
	nvmlDeviceGetPowerUsage          func(dev uintptr, milliwatts *uint32) int32
	nvmlDeviceGetEnforcedPowerLimit  func(dev uintptr, milliwatts *uint32) int32
	nvmlDeviceGetTemperature         func(dev uintptr, sensor uint32, celsius *uint32) int32
	nvmlDeviceGetCurrentClocksEvents func(dev uintptr, reasons *uint64) int32
	nvmlDeviceGetUtilizationRates    func(dev uintptr, util *[2]uint32) int32
	nvmlDeviceGetUUID                func(dev uintptr, uuid *byte, length uint32) int32
	nvmlDeviceGetMemoryInfo          func(dev uintptr, mem *[3]uint64) int32
	// Optional (nil when the library lacks them).
	nvmlDeviceGetComputeRunningProcesses  func(dev uintptr, count *uint32, infos *processInfo) int32
	nvmlDeviceGetDefaultApplicationsClock func(dev uintptr, clock uint32, mhz *uint32) int32
	nvmlDeviceGetTopologyCommonAncestor   func(a, b uintptr, level *uint32) int32
	nvmlDeviceGetP2PStatus                func(a, b uintptr, caps uint32, status *uint32) int32
	nvmlDeviceGetNvLinkState              func(dev uintptr, link uint32, active *uint32) int32
	// Volta and later; NOT_SUPPORTED on older GPUs.
	nvmlDeviceGetTotalEnergyConsumption func(dev uintptr, millijoules *uint64) int32
}

// processInfo is nvmlProcessInfo_t of the _v2 and _v3 process queries:
// pid, usedGpuMemory (all ones when unknown), then the MIG GPU and compute
// instance ids, which headroom does not use (the padding keeps the size).
type processInfo struct {
	pid           uint32
	usedGPUMemory uint64
	_             [2]uint32
}

// Library is an initialised NVML.
type Library struct {
	api  api
	path string
}

// Open loads libnvidia-ml.so.1 (from path if not empty, else from
// HEADROOM_LIBNVML if set, else through the loader) and calls nvmlInit_v2.
func Open(path string) (*Library, error) {
	if path == "" {
		path = os.Getenv(EnvLibNVML)
	}
	name := path
	if name == "" {
		name = "libnvidia-ml.so.1"
	}
	lib, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("nvml: cannot load %s (install the NVIDIA driver, which ships NVML): %w", name, err)
	}
	l := &Library{path: name}
	a := &l.api
	bind := func(fptr any, names ...string) error {
		for _, n := range names {
			if addr, err := purego.Dlsym(lib, n); err == nil && addr != 0 {
				purego.RegisterFunc(fptr, addr)
				return nil
			}
		}
		return fmt.Errorf("nvml: %s has no symbol %s (driver too old?)", name, names[0])
	}
	for _, b := range []struct {
		fptr  any
		names []string
	}{
		{&a.nvmlInit, []string{"nvmlInit_v2"}},
		{&a.nvmlShutdown, []string{"nvmlShutdown"}},
		{&a.nvmlSystemGetDriverVersion, []string{"nvmlSystemGetDriverVersion"}},
		{&a.nvmlDeviceGetHandleByPciBusId, []string{"nvmlDeviceGetHandleByPciBusId_v2"}},
		{&a.nvmlDeviceGetName, []string{"nvmlDeviceGetName"}},
		{&a.nvmlDeviceGetClockInfo, []string{"nvmlDeviceGetClockInfo"}},
		{&a.nvmlDeviceGetMaxClockInfo, []string{"nvmlDeviceGetMaxClockInfo"}},
		{&a.nvmlDeviceGetPowerUsage, []string{"nvmlDeviceGetPowerUsage"}},
		{&a.nvmlDeviceGetEnforcedPowerLimit, []string{"nvmlDeviceGetEnforcedPowerLimit"}},
		{&a.nvmlDeviceGetTemperature, []string{"nvmlDeviceGetTemperature"}},
		// Renamed in NVML 12.2; the old name stays exported by older drivers.
		{&a.nvmlDeviceGetCurrentClocksEvents, []string{"nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons"}},
		{&a.nvmlDeviceGetUtilizationRates, []string{"nvmlDeviceGetUtilizationRates"}},
		{&a.nvmlDeviceGetUUID, []string{"nvmlDeviceGetUUID"}},
		{&a.nvmlDeviceGetMemoryInfo, []string{"nvmlDeviceGetMemoryInfo"}},
	} {
		if err := bind(b.fptr, b.names...); err != nil {
			return nil, err
		}
	}
	// Optional: without them the process count and the base clock are unknown.
	_ = bind(&a.nvmlDeviceGetComputeRunningProcesses, "nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2")
	_ = bind(&a.nvmlDeviceGetDefaultApplicationsClock, "nvmlDeviceGetDefaultApplicationsClock")
	// Optional: without them the GPUs' interconnect is unknown.
	_ = bind(&a.nvmlDeviceGetTopologyCommonAncestor, "nvmlDeviceGetTopologyCommonAncestor")
	_ = bind(&a.nvmlDeviceGetP2PStatus, "nvmlDeviceGetP2PStatus")
	_ = bind(&a.nvmlDeviceGetNvLinkState, "nvmlDeviceGetNvLinkState")
	// Optional: without it energy is integrated from the power samples.
	_ = bind(&a.nvmlDeviceGetTotalEnergyConsumption, "nvmlDeviceGetTotalEnergyConsumption")
	if err := check("nvmlInit_v2", a.nvmlInit()); err != nil {
		return nil, err
	}
	return l, nil
}

// Path is the library name or path NVML was loaded from.
func (l *Library) Path() string { return l.path }

// Close shuts NVML down.
func (l *Library) Close() error { return check("nvmlShutdown", l.api.nvmlShutdown()) }

// DriverVersion is the NVIDIA driver's version string, e.g. "580.159.04".
func (l *Library) DriverVersion() (string, error) {
	buf := make([]byte, 96)
	if err := check("nvmlSystemGetDriverVersion", l.api.nvmlSystemGetDriverVersion(&buf[0], uint32(len(buf)))); err != nil {
		return "", err
	}
	return cString(buf), nil
}

// Device is one GPU as NVML sees it.
type Device struct {
	l      *Library
	handle uintptr
	Name   string
	UUID   string // e.g. "GPU-8f6c…"
	// PowerLimitW is the enforced power limit; 0 if NVML does not report it.
	PowerLimitW float64
	// MaxSMClockMHz and MaxMemClockMHz are the highest clocks the GPU supports; 0 if unknown.
	MaxSMClockMHz, MaxMemClockMHz int
	// BaseSMClockMHz is the SM clock the GPU runs at by default under load,
	// its default applications clock (NVIDIA's base clock for
	// data-centre GPUs); 0 if NVML does not report it.
	BaseSMClockMHz int
}

// DeviceByPCIBusID finds the GPU with the given PCI bus id (as CUDA's
// cuDeviceGetPCIBusId reports it), which ties a CUDA ordinal to its NVML
// device whatever CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER say.
func (l *Library) DeviceByPCIBusID(busID string) (*Device, error) {
	d := &Device{l: l}
	if err := check("nvmlDeviceGetHandleByPciBusId_v2("+busID+")", l.api.nvmlDeviceGetHandleByPciBusId(busID, &d.handle)); err != nil {
		return nil, err
	}
	buf := make([]byte, 96)
	if err := check("nvmlDeviceGetName", l.api.nvmlDeviceGetName(d.handle, &buf[0], uint32(len(buf)))); err != nil {
		return nil, err
	}
	d.Name = cString(buf)
	if l.api.nvmlDeviceGetUUID(d.handle, &buf[0], uint32(len(buf))) == 0 {
		d.UUID = cString(buf)
	}
	var mw, mhz uint32
	if l.api.nvmlDeviceGetEnforcedPowerLimit(d.handle, &mw) == 0 {
		d.PowerLimitW = float64(mw) / 1000
	}
	if l.api.nvmlDeviceGetMaxClockInfo(d.handle, clockSM, &mhz) == 0 {
		d.MaxSMClockMHz = int(mhz)
	}
	if l.api.nvmlDeviceGetMaxClockInfo(d.handle, clockMem, &mhz) == 0 {
		d.MaxMemClockMHz = int(mhz)
	}
	if f := l.api.nvmlDeviceGetDefaultApplicationsClock; f != nil && f(d.handle, clockSM, &mhz) == 0 {
		d.BaseSMClockMHz = int(mhz)
	}
	return d, nil
}

// Process is a compute process using a GPU.
type Process struct {
	PID uint32 // as NVML reports it: the host's PID, also inside a container
	// UsedMemoryBytes is the device memory it holds; 0 when NVML does not say.
	UsedMemoryBytes uint64
}

// ComputeProcesses lists the compute processes using the device (CUDA
// contexts), headroom's own included while it holds one. It returns an
// error wrapping ErrNotSupported when the library cannot tell.
func (d *Device) ComputeProcesses() ([]Process, error) {
	f := d.l.api.nvmlDeviceGetComputeRunningProcesses
	if f == nil {
		return nil, returnCodes.Err("nvmlDeviceGetComputeRunningProcesses", notSupported)
	}
	infos := make([]processInfo, 16)
	for {
		n := uint32(len(infos))
		code := f(d.handle, &n, &infos[0])
		if code == 7 && n > uint32(len(infos)) && n < 1<<16 { // NVML_ERROR_INSUFFICIENT_SIZE: n says how many
			infos = make([]processInfo, n+8) // processes may start meanwhile
			continue
		}
		if err := check("nvmlDeviceGetComputeRunningProcesses", code); err != nil {
			return nil, err
		}
		out := make([]Process, 0, n)
		for _, p := range infos[:min(int(n), len(infos))] {
			mem := p.usedGPUMemory
			if mem == ^uint64(0) {
				mem = 0
			}
			out = append(out, Process{PID: p.pid, UsedMemoryBytes: mem})
		}
		return out, nil
	}
}

// Sample is one reading of a GPU's state.
type Sample struct {
	SMClockMHz   int
	MemClockMHz  int
	PowerW       float64
	TemperatureC int
	UtilGPUPct   int
	UtilMemPct   int    // percent of time device memory was read or written
	MemUsedBytes uint64 // device memory in use
	// ClockEventReasons is the nvmlClocksEventReason bit mask.
	ClockEventReasons uint64
	// EnergyMJ is the GPU's total energy counter (millijoules since the
	// driver was loaded, nvmlDeviceGetTotalEnergyConsumption); EnergyKnown
	// is false where the GPU (before Volta) or the library lacks it.
	EnergyMJ    uint64
	EnergyKnown bool
}

// Sample reads the device's clocks, power, temperature, utilisation,
// memory use, clock-event reasons and, where the GPU has it, its energy
// counter. It fails only if one of the others cannot be read.
func (d *Device) Sample() (Sample, error) {
	var s Sample
	var v uint32
	a := &d.l.api
	if err := check("nvmlDeviceGetClockInfo(SM)", a.nvmlDeviceGetClockInfo(d.handle, clockSM, &v)); err != nil {
		return s, err
	}
	s.SMClockMHz = int(v)
	if err := check("nvmlDeviceGetClockInfo(MEM)", a.nvmlDeviceGetClockInfo(d.handle, clockMem, &v)); err != nil {
		return s, err
	}
	s.MemClockMHz = int(v)
	if err := check("nvmlDeviceGetPowerUsage", a.nvmlDeviceGetPowerUsage(d.handle, &v)); err != nil {
		return s, err
	}
	s.PowerW = float64(v) / 1000
	if err := check("nvmlDeviceGetTemperature", a.nvmlDeviceGetTemperature(d.handle, 0, &v)); err != nil {
		return s, err
	}
	s.TemperatureC = int(v)
	var util [2]uint32
	if err := check("nvmlDeviceGetUtilizationRates", a.nvmlDeviceGetUtilizationRates(d.handle, &util)); err != nil {
		return s, err
	}
	s.UtilGPUPct, s.UtilMemPct = int(util[0]), int(util[1])
	var mem [3]uint64 // nvmlMemory_t: total, free, used
	if err := check("nvmlDeviceGetMemoryInfo", a.nvmlDeviceGetMemoryInfo(d.handle, &mem)); err != nil {
		return s, err
	}
	s.MemUsedBytes = mem[2]
	if err := check("nvmlDeviceGetCurrentClocksEventReasons", a.nvmlDeviceGetCurrentClocksEvents(d.handle, &s.ClockEventReasons)); err != nil {
		return s, err
	}
	if f := a.nvmlDeviceGetTotalEnergyConsumption; f != nil && f(d.handle, &s.EnergyMJ) == 0 {
		s.EnergyKnown = true
	}
	return s, nil
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// NVML's topology levels (nvmlGpuTopologyLevel_t) and the P2P query's
// NVLink capability index and success status.
const (
	topologyInternal   = 0
	topologySingle     = 10
	topologyMultiple   = 20
	topologyHostBridge = 30
	topologyNode       = 40
	topologySystem     = 50
	p2pCapsNVLink      = 2
	p2pStatusOK        = 0
	maxNVLinks         = 18 // NVML_NVLINK_MAX_LINKS
)

// Link is how two GPUs are connected.
type Link struct {
	// Path is the closest connection: "nvlink" when NVML reports NVLink
	// peer-to-peer between them, else the PCIe topology's common ancestor:
	// "same_board", "pcie_switch", "pcie_switches", "pcie_host_bridge",
	// "numa_node" (host bridges of one CPU), "cpu_interconnect" (across
	// CPU sockets); "unknown" when NVML cannot tell.
	Path string
	// NVLinks is the number of active NVLink links of the first GPU (on an
	// NVSwitch system they reach the switch, not the peer); 0 without NVLink.
	NVLinks int
}

// LinkTo asks NVML how d and peer are connected.
func (d *Device) LinkTo(peer *Device) Link {
	a := &d.l.api
	if f := a.nvmlDeviceGetP2PStatus; f != nil {
		var st uint32
		if f(d.handle, peer.handle, p2pCapsNVLink, &st) == 0 && st == p2pStatusOK {
			return Link{Path: "nvlink", NVLinks: d.activeNVLinks()}
		}
	}
	if f := a.nvmlDeviceGetTopologyCommonAncestor; f != nil {
		var level uint32
		if f(d.handle, peer.handle, &level) == 0 {
			return Link{Path: TopologyPath(level)}
		}
	}
	return Link{Path: "unknown"}
}

// TopologyPath names an NVML topology level.
func TopologyPath(level uint32) string {
	switch level {
	case topologyInternal:
		return "same_board"
	case topologySingle:
		return "pcie_switch"
	case topologyMultiple:
		return "pcie_switches"
	case topologyHostBridge:
		return "pcie_host_bridge"
	case topologyNode:
		return "numa_node"
	case topologySystem:
		return "cpu_interconnect"
	}
	return "unknown"
}

func (d *Device) activeNVLinks() int {
	f := d.l.api.nvmlDeviceGetNvLinkState
	if f == nil {
		return 0
	}
	n := 0
	for link := range uint32(maxNVLinks) {
		var active uint32
		if f(d.handle, link, &active) == 0 && active != 0 {
			n++
		}
	}
	return n
}
