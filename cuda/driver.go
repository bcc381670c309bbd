package cuda

import (
	"bytes"
	"fmt"
	"unsafe"
)

// driverAPI holds the libcuda entry points we use, bound with purego.
// Handles (CUcontext, CUevent, CUmodule, CUfunction, CUstream) are opaque
// pointers and are kept as uintptr; device pointers (CUdeviceptr) are
// 64-bit integers.
type driverAPI struct {
	cuInit                    func(flags uint32) int32
	cuDriverGetVersion        func(version *int32) int32
	cuDeviceGetCount          func(count *int32) int32
	cuDeviceGet               func(dev *int32, ordinal int32) int32
	cuDeviceGetName           func(name *byte, length int32, dev int32) int32
	cuDeviceGetAttribute      func(value *int32, attrib int32, dev int32) int32
	cuDeviceTotalMem          func(bytes *uint64, dev int32) int32
	cuDeviceGetPCIBusId       func(id *byte, length int32, dev int32) int32
	cuDevicePrimaryCtxRetain  func(ctx *uintptr, dev int32) int32
	cuDevicePrimaryCtxRelease func(dev int32) int32
	cuCtxSetCurrent           func(ctx uintptr) int32
	cuCtxSynchronize          func() int32
	cuMemAlloc                func(dptr *uint64, bytes uint64) int32
	cuMemFree                 func(dptr uint64) int32
	cuMemGetInfo              func(free, total *uint64) int32
	cuMemcpyHtoD              func(dst uint64, src unsafe.Pointer, bytes uint64) int32
	cuMemcpyDtoH              func(dst unsafe.Pointer, src uint64, bytes uint64) int32
	cuMemcpyDtoD              func(dst, src uint64, bytes uint64) int32
	cuMemsetD8                func(dst uint64, value uint8, count uint64) int32
	cuEventCreate             func(event *uintptr, flags uint32) int32
	cuEventRecord             func(event, stream uintptr) int32
	cuEventSynchronize        func(event uintptr) int32
	cuEventElapsedTime        func(ms *float32, start, end uintptr) int32
	cuEventDestroy            func(event uintptr) int32
	cuModuleLoadData          func(module *uintptr, image unsafe.Pointer) int32
	cuModuleGetFunction       func(fn *uintptr, module uintptr, name string) int32
	cuModuleUnload            func(module uintptr) int32
	cuLaunchKernel            func(fn uintptr, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedMemBytes uint32, stream uintptr, params unsafe.Pointer, extra unsafe.Pointer) int32
}

// Driver is the loaded CUDA driver library after a successful cuInit.
type Driver struct {
	api  driverAPI
	path string
}

// OpenDriver loads libcuda (see LibraryPaths for where) and calls cuInit.
// Without a GPU driver it returns a *LibraryError whose message is one line
// saying what to install.
func OpenDriver(paths LibraryPaths) (*Driver, error) {
	lib, path, err := openLibrary("libcuda.so.1", driverNames, paths.Driver, EnvLibCUDA, nil, driverHint)
	if err != nil {
		return nil, err
	}
	d := &Driver{path: path}
	a := &d.api
	binds := []struct {
		fptr any
		name string
	}{
		{&a.cuInit, "cuInit"},
		{&a.cuDriverGetVersion, "cuDriverGetVersion"},
		{&a.cuDeviceGetCount, "cuDeviceGetCount"},
		{&a.cuDeviceGet, "cuDeviceGet"},
		{&a.cuDeviceGetName, "cuDeviceGetName"},
		{&a.cuDeviceGetAttribute, "cuDeviceGetAttribute"},
		{&a.cuDeviceTotalMem, "cuDeviceTotalMem_v2"},
		{&a.cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId"},
		{&a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
		{&a.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"},
		{&a.cuCtxSetCurrent, "cuCtxSetCurrent"},
		{&a.cuCtxSynchronize, "cuCtxSynchronize"},
		{&a.cuMemAlloc, "cuMemAlloc_v2"},
		{&a.cuMemFree, "cuMemFree_v2"},
		{&a.cuMemGetInfo, "cuMemGetInfo_v2"},
		{&a.cuMemcpyHtoD, "cuMemcpyHtoD_v2"},
		{&a.cuMemcpyDtoH, "cuMemcpyDtoH_v2"},
		{&a.cuMemcpyDtoD, "cuMemcpyDtoD_v2"},
		{&a.cuMemsetD8, "cuMemsetD8_v2"},
		{&a.cuEventCreate, "cuEventCreate"},
		{&a.cuEventRecord, "cuEventRecord"},
		{&a.cuEventSynchronize, "cuEventSynchronize"},
		{&a.cuEventElapsedTime, "cuEventElapsedTime"},
		{&a.cuEventDestroy, "cuEventDestroy_v2"},
		{&a.cuModuleLoadData, "cuModuleLoadData"},
		{&a.cuModuleGetFunction, "cuModuleGetFunction"},
		{&a.cuModuleUnload, "cuModuleUnload"},
		{&a.cuLaunchKernel, "cuLaunchKernel"},
	}
	for _, b := range binds {
		if err := symbol(lib, path, b.fptr, b.name); err != nil {
			return nil, err
		}
	}
	if err := check("cuInit", a.cuInit(0)); err != nil {
		return nil, err
	}
	return d, nil
}

// Path is the file the driver library was loaded from.
func (d *Driver) Path() string { return d.path }

// Version is the CUDA version the driver supports, e.g. 13000 for 13.0.
func (d *Driver) Version() (int, error) {
	var v int32
	if err := check("cuDriverGetVersion", d.api.cuDriverGetVersion(&v)); err != nil {
		return 0, err
	}
	return int(v), nil
}

// DeviceCount is the number of CUDA devices visible to this process.
func (d *Driver) DeviceCount() (int, error) {
	var n int32
	if err := check("cuDeviceGetCount", d.api.cuDeviceGetCount(&n)); err != nil {
		return 0, err
	}
	return int(n), nil
}

// Device attributes (CUdevice_attribute) that DeviceInfo reads.
const (
	attrClockRateKHz           = 13
	attrMultiprocessorCount    = 16
	attrMemoryClockRateKHz     = 36
	attrGlobalMemoryBusWidth   = 37
	attrL2CacheSizeBytes       = 38
	attrComputeCapabilityMajor = 75
	attrComputeCapabilityMinor = 76
)

// DeviceInfo describes one CUDA device.
type DeviceInfo struct {
	Ordinal           int
	Name              string
	PCIBusID          string // e.g. "0000:18:00.0", lower case, as NVML wants it
	TotalMemoryBytes  uint64
	Multiprocessors   int
	ComputeCapability string // e.g. "9.0"
	L2CacheBytes      int
	MemoryBusWidthBit int
	// Clock attributes are the maximum clocks the driver reports; 0 where
	// the driver no longer reports them.
	MaxSMClockMHz     int
	MaxMemoryClockMHz int
}

// Device reads the properties of the device with the given ordinal.
func (d *Driver) Device(ordinal int) (DeviceInfo, error) {
	info := DeviceInfo{Ordinal: ordinal}
	var dev int32
	if err := check("cuDeviceGet", d.api.cuDeviceGet(&dev, int32(ordinal))); err != nil {
		return info, err
	}
	buf := make([]byte, 256)
	if err := check("cuDeviceGetName", d.api.cuDeviceGetName(&buf[0], int32(len(buf)), dev)); err != nil {
		return info, err
	}
	info.Name = cString(buf)
	bus := make([]byte, 64)
	if err := check("cuDeviceGetPCIBusId", d.api.cuDeviceGetPCIBusId(&bus[0], int32(len(bus)), dev)); err != nil {
		return info, err
	}
	info.PCIBusID = string(bytes.ToLower([]byte(cString(bus))))
	if err := check("cuDeviceTotalMem_v2", d.api.cuDeviceTotalMem(&info.TotalMemoryBytes, dev)); err != nil {
		return info, err
	}
	attr := func(a int32) (int, error) {
		var v int32
		if err := check(fmt.Sprintf("cuDeviceGetAttribute(%d)", a), d.api.cuDeviceGetAttribute(&v, a, dev)); err != nil {
			return 0, err
		}
		return int(v), nil
	}
	var major, minor, clockKHz, memClockKHz int
	var err error
	for _, f := range []struct {
		dst  *int
		attr int32
	}{
		{&info.Multiprocessors, attrMultiprocessorCount},
		{&major, attrComputeCapabilityMajor},
		{&minor, attrComputeCapabilityMinor},
		{&info.L2CacheBytes, attrL2CacheSizeBytes},
		{&info.MemoryBusWidthBit, attrGlobalMemoryBusWidth},
	} {
		if *f.dst, err = attr(f.attr); err != nil {
			return info, err
		}
	}
	// The clock attributes are informational and deprecated in newer
	// toolkits; a driver that refuses them leaves the fields at 0.
	clockKHz, _ = attr(attrClockRateKHz)
	memClockKHz, _ = attr(attrMemoryClockRateKHz)
	info.ComputeCapability = fmt.Sprintf("%d.%d", major, minor)
	info.MaxSMClockMHz = clockKHz / 1000
	info.MaxMemoryClockMHz = memClockKHz / 1000
	return info, nil
}

func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}
