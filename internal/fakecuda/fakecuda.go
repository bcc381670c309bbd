// Package fakecuda builds fake libcuda.so.1, libcublas.so.13,
// libcublasLt.so.13 and libnvidia-ml.so.1 libraries from the C in testdata/ with the system's C
// compiler, for tests of package cuda and of the probe on machines without a
// GPU. The fakes export the same symbols as the real libraries, keep
// "device" memory on the host, compute GEMMs for real, time work on a
// virtual clock and log every call; see the comments in the C files.
package fakecuda

import (
	_ "embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/ebitengine/purego"
)

var (
	//go:embed testdata/fake_cuda.c
	fakeCUDASource string
	//go:embed testdata/fake_cublas.c
	fakeCUBLASSource string
	//go:embed testdata/fake_nvml.c
	fakeNVMLSource string
	//go:embed testdata/fake_cublaslt.c
	fakeCUBLASLtSource string
	// The binding to the fake driver that both cuBLAS fakes include.
	//go:embed testdata/fake_driver_client.h
	fakeDriverClientHeader string
)

// Fake is one set of fake libraries, built into a test's temporary directory.
type Fake struct {
	Dir          string
	DriverPath   string // .../libcuda.so.1
	CUBLASPath   string // .../libcublas.so.13
	CUBLASLtPath string // .../libcublasLt.so.13
	NVMLPath     string // .../libnvidia-ml.so.1

	fakeLog          func() string
	fakeReset        func()
	fakeFail         func(name string, code int32)
	fakeSetDevices   func(n int32)
	fakeSetBandwidth func(dtod, copyKernel, sumKernel float64)
	setRoofline      func(tflops, gbps float64)
	corrupt          func(on int32)
	nvmlSet          func(sm, mem, mw, temp uint32, reasons uint64)
	nvmlFailInit     func(code int32)
	nvmlSamples      func() int32
	nvmlProcesses    func(n int32, pids *uint32)
	nvmlBaseClock    func(mhz uint32)
	ltRoofline       func(tflops, gbps float64)
	ltAlign          func(n int32)
	ltMatmulAlign    func(n int32)
	nvmlEnergy       func(mj uint64, supported int32)
	ltRefuse         func(k, fast int32)
}

// Build compiles the fakes into t.TempDir() and loads them, so that the
// control functions below work. It fails the test if there is no C compiler
// (CC, or gcc): the bindings' tests need one, as CI has.
func Build(t testing.TB) *Fake {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Fatalf("fakecuda: the tests of the CUDA bindings need a C compiler (%s): %v; apt-get install gcc", cc, err)
	}
	dir := t.TempDir()
	f := &Fake{
		Dir:          dir,
		DriverPath:   filepath.Join(dir, "libcuda.so.1"),
		CUBLASPath:   filepath.Join(dir, "libcublas.so.13"),
		CUBLASLtPath: filepath.Join(dir, "libcublasLt.so.13"),
		NVMLPath:     filepath.Join(dir, "libnvidia-ml.so.1"),
	}
	// -Bsymbolic binds each library's calls to its own functions: without
	// it, a second test's fake would call into the first test's fake, which
	// the process loaded earlier with the same exported names.
	libs := []struct{ src, out, soname string }{
		{fakeCUDASource, f.DriverPath, "libcuda.so.1"},
		{fakeCUBLASSource, f.CUBLASPath, "libcublas.so.13"},
		{fakeNVMLSource, f.NVMLPath, "libnvidia-ml.so.1"},
		{fakeCUBLASLtSource, f.CUBLASLtPath, "libcublasLt.so.13"},
	}
	if err := os.WriteFile(filepath.Join(dir, "fake_driver_client.h"), []byte(fakeDriverClientHeader), 0o644); err != nil {
		t.Fatalf("fakecuda: %v", err)
	}
	errs := make([]error, len(libs))
	var wg sync.WaitGroup
	for i, lib := range libs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			src := strings.TrimSuffix(lib.out, filepath.Ext(lib.out)) + ".c"
			if err := os.WriteFile(src, []byte(lib.src), 0o644); err != nil {
				errs[i] = err
				return
			}
			cmd := exec.Command(cc, "-shared", "-fPIC", "-O2", "-Wall", "-Wno-unused-parameter",
				"-Wl,-Bsymbolic", "-Wl,-soname,"+lib.soname, "-o", lib.out, src, "-ldl", "-lm")
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, out)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("fakecuda: %v", err)
		}
	}
	driver, err := purego.Dlopen(f.DriverPath, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Fatalf("fakecuda: %v", err)
	}
	cublas, err := purego.Dlopen(f.CUBLASPath, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Fatalf("fakecuda: %v", err)
	}
	nvml, err := purego.Dlopen(f.NVMLPath, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Fatalf("fakecuda: %v", err)
	}
	lt, err := purego.Dlopen(f.CUBLASLtPath, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Fatalf("fakecuda: %v", err)
	}
	purego.RegisterLibFunc(&f.fakeLog, driver, "fake_log")
	purego.RegisterLibFunc(&f.fakeReset, driver, "fake_reset")
	purego.RegisterLibFunc(&f.fakeFail, driver, "fake_fail")
	purego.RegisterLibFunc(&f.fakeSetDevices, driver, "fake_set_devices")
	purego.RegisterLibFunc(&f.fakeSetBandwidth, driver, "fake_set_bandwidth")
	purego.RegisterLibFunc(&f.setRoofline, cublas, "fake_cublas_set_roofline")
	purego.RegisterLibFunc(&f.corrupt, cublas, "fake_cublas_corrupt")
	purego.RegisterLibFunc(&f.nvmlSet, nvml, "fake_nvml_set")
	purego.RegisterLibFunc(&f.nvmlFailInit, nvml, "fake_nvml_fail_init")
	purego.RegisterLibFunc(&f.nvmlSamples, nvml, "fake_nvml_samples")
	purego.RegisterLibFunc(&f.nvmlProcesses, nvml, "fake_nvml_set_processes")
	purego.RegisterLibFunc(&f.nvmlBaseClock, nvml, "fake_nvml_set_base_clock")
	purego.RegisterLibFunc(&f.nvmlEnergy, nvml, "fake_nvml_set_energy")
	purego.RegisterLibFunc(&f.ltRoofline, lt, "fake_cublaslt_set_roofline")
	purego.RegisterLibFunc(&f.ltAlign, lt, "fake_cublaslt_set_align")
	purego.RegisterLibFunc(&f.ltMatmulAlign, lt, "fake_cublaslt_set_matmul_align")
	purego.RegisterLibFunc(&f.ltRefuse, lt, "fake_cublaslt_refuse")
	for lib, name := range map[uintptr]string{cublas: "fake_cublas_bind", lt: "fake_cublaslt_bind"} {
		var bind func(handle uintptr) int32
		purego.RegisterLibFunc(&bind, lib, name)
		if bind(driver) != 0 {
			t.Fatalf("fakecuda: %s could not find the fake driver's control functions", name)
		}
	}
	return f
}

// Log returns every call recorded since the last Reset, one per line.
func (f *Fake) Log() []string {
	s := strings.TrimRight(f.fakeLog(), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// Reset clears the log, the failure switch, the device count and the clock.
func (f *Fake) Reset() { f.fakeReset() }

// Fail makes the named entry point (of the fake driver or cuBLAS) return code from now on.
func (f *Fake) Fail(name string, code int) { f.fakeFail(name, int32(code)) }

// SetDevices sets how many GPUs the fake driver reports.
func (f *Fake) SetDevices(n int) { f.fakeSetDevices(int32(n)) }

// SetBandwidth sets the virtual bandwidths, in GB/s of bytes read plus
// written, of cuMemcpyDtoD, the copy kernel and the (read-only) sum kernel.
func (f *Fake) SetBandwidth(dtodGBps, copyKernelGBps, sumKernelGBps float64) {
	f.fakeSetBandwidth(dtodGBps, copyKernelGBps, sumKernelGBps)
}

// SetRoofline sets the fake GEMM's virtual peak (TFLOP/s) and memory
// bandwidth (GB/s): a call takes max(FLOPs/peak, bytes/bandwidth).
func (f *Fake) SetRoofline(peakTFLOPS, bandwidthGBps float64) {
	f.setRoofline(peakTFLOPS, bandwidthGBps)
}

// CorruptGEMM makes the fake GEMM add 1000 to the last element of each product.
func (f *Fake) CorruptGEMM(on bool) {
	v := int32(0)
	if on {
		v = 1
	}
	f.corrupt(v)
}

// SetNVML sets what the fake NVML reports for every GPU.
func (f *Fake) SetNVML(smMHz, memMHz, milliwatts, tempC uint32, reasons uint64) {
	f.nvmlSet(smMHz, memMHz, milliwatts, tempC, reasons)
}

// FailNVMLInit makes nvmlInit_v2 return code.
func (f *Fake) FailNVMLInit(code int) { f.nvmlFailInit(int32(code)) }

// NVMLSamples counts the clock-event-reason reads, one per sample taken.
func (f *Fake) NVMLSamples() int { return int(f.nvmlSamples()) }

// SetNVMLProcesses sets the compute processes the fake NVML lists on every
// GPU (none by default).
func (f *Fake) SetNVMLProcesses(pids ...uint32) {
	if len(pids) == 0 {
		f.nvmlProcesses(0, nil)
		return
	}
	f.nvmlProcesses(int32(len(pids)), &pids[0])
}

// SetNVMLBaseClock sets the default applications SM clock the fake NVML
// reports (1755 MHz by default; 0: not supported).
func (f *Fake) SetNVMLBaseClock(mhz uint32) { f.nvmlBaseClock(mhz) }

// SetNVMLEnergy sets the total-energy counter (millijoules) the fake NVML
// reports for every GPU; until it is called the counter is not supported.
func (f *Fake) SetNVMLEnergy(mj uint64) { f.nvmlEnergy(mj, 1) }

// SetFP8Roofline sets the fake cuBLASLt FP8 GEMM's virtual peak (TFLOP/s) and
// memory bandwidth (GB/s); by default 200 TFLOP/s and 1000 GB/s.
func (f *Fake) SetFP8Roofline(peakTFLOPS, bandwidthGBps float64) {
	f.ltRoofline(peakTFLOPS, bandwidthGBps)
}

// SetFP8Alignment makes the fake cuBLASLt find no FP8 algorithm for shapes
// whose dimensions are not multiples of n (1: every shape has one).
func (f *Fake) SetFP8Alignment(n int) { f.ltAlign(int32(n)) }

// SetFP8MatmulAlignment makes the fake cuBLASLt offer an algorithm for every
// shape but refuse, in cublasLtMatmul, those whose dimensions are not
// multiples of n (1: none refused).
func (f *Fake) SetFP8MatmulAlignment(n int) { f.ltMatmulAlign(int32(n)) }

// RefuseFP8 makes the fake cublasLtMatmul refuse the first k of the three
// algorithms its heuristic offers and, with fast, every call with fast
// accumulation: the library's refusals the FP8 bindings must get past.
func (f *Fake) RefuseFP8(k int, fast bool) {
	v := int32(0)
	if fast {
		v = 1
	}
	f.ltRefuse(int32(k), v)
}
