// A fake libnvidia-ml.so.1 for headroom's tests: one or more GPUs whose
// readings the test sets with fake_nvml_set, and a count of samples taken.
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7

static int initialized, init_fail;
static unsigned sm_mhz = 1980, mem_mhz = 3201, power_mw = 500000, temp_c = 50, util = 100;
static unsigned long long reasons;
static int samples;

void fake_nvml_set(unsigned sm, unsigned mem, unsigned mw, unsigned temp, unsigned long long r) {
	sm_mhz = sm;
	mem_mhz = mem;
	power_mw = mw;
	temp_c = temp;
	reasons = r;
}
void fake_nvml_fail_init(int code) { init_fail = code; }

// Compute processes reported on every GPU (fake_nvml_set_processes) and
// the default applications ("base") SM clock.
typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlProcessInfo_t;
static unsigned proc_pids[64];
static int nprocs;
static unsigned base_sm_mhz = 1755;
void fake_nvml_set_processes(int n, unsigned *pids) {
	nprocs = n > 64 ? 64 : n;
	for (int i = 0; i < nprocs; i++) proc_pids[i] = pids[i];
}
void fake_nvml_set_base_clock(unsigned mhz) { base_sm_mhz = mhz; }

int nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned *count, nvmlProcessInfo_t *infos) {
	if (*count < (unsigned)nprocs) {
		*count = nprocs;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (int i = 0; i < nprocs; i++) {
		infos[i].pid = proc_pids[i];
		infos[i].usedGpuMemory = 1ull << 30;
		infos[i].gpuInstanceId = infos[i].computeInstanceId = 0xFFFFFFFF;
	}
	*count = nprocs;
	return 0;
}
int nvmlDeviceGetDefaultApplicationsClock(void *dev, unsigned type, unsigned *mhz) {
	if (type != 1 || base_sm_mhz == 0) return 3; // NVML_ERROR_NOT_SUPPORTED
	*mhz = base_sm_mhz;
	return 0;
}
int fake_nvml_samples(void) { return samples; }

// The total-energy counter (mJ); NOT_SUPPORTED, as on a GPU before Volta,
// until fake_nvml_set_energy sets it.
static unsigned long long energy_mj;
static int energy_supported;
void fake_nvml_set_energy(unsigned long long mj, int supported) {
	energy_mj = mj;
	energy_supported = supported;
}
int nvmlDeviceGetTotalEnergyConsumption(void *dev, unsigned long long *mj) {
	if (!energy_supported) return 3; // NVML_ERROR_NOT_SUPPORTED
	*mj = energy_mj;
	return 0;
}

int nvmlInit_v2(void) {
	if (init_fail) return init_fail;
	initialized = 1;
	return 0;
}
int nvmlShutdown(void) { initialized = 0; return 0; }
int nvmlSystemGetDriverVersion(char *v, unsigned len) { snprintf(v, len, "580.0.fake"); return 0; }
int nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **dev) {
	if (!initialized) return NVML_ERROR_UNINITIALIZED;
	unsigned domain, b, d, f;
	if (sscanf(bus, "%x:%x:%x.%x", &domain, &b, &d, &f) != 4) return NVML_ERROR_INVALID_ARGUMENT;
	*dev = (void *)(uintptr_t)(0x100 + b);
	return 0;
}
int nvmlDeviceGetName(void *dev, char *name, unsigned len) { snprintf(name, len, "Fake GPU"); return 0; }
int nvmlDeviceGetClockInfo(void *dev, unsigned type, unsigned *mhz) {
	if (type == 1) *mhz = sm_mhz;
	else if (type == 2) *mhz = mem_mhz;
	else return NVML_ERROR_INVALID_ARGUMENT;
	return 0;
}
int nvmlDeviceGetMaxClockInfo(void *dev, unsigned type, unsigned *mhz) {
	*mhz = type == 1 ? 1980 : 3201;
	return 0;
}
int nvmlDeviceGetPowerUsage(void *dev, unsigned *mw) { *mw = power_mw; return 0; }
int nvmlDeviceGetEnforcedPowerLimit(void *dev, unsigned *mw) { *mw = 700000; return 0; }
int nvmlDeviceGetTemperature(void *dev, unsigned sensor, unsigned *c) { *c = temp_c; return 0; }
int nvmlDeviceGetCurrentClocksEventReasons(void *dev, unsigned long long *r) {
	samples++;
	*r = reasons;
	return 0;
}
int nvmlDeviceGetUtilizationRates(void *dev, unsigned *u) {
	u[0] = util;
	u[1] = 50;
	return 0;
}
int nvmlDeviceGetUUID(void *dev, char *uuid, unsigned len) {
	snprintf(uuid, len, "GPU-fake-%04x", (unsigned)(uintptr_t)dev);
	return 0;
}
int nvmlDeviceGetMemoryInfo(void *dev, unsigned long long *mem) {
	mem[0] = 1ull << 32;
	mem[1] = 3ull << 30;
	mem[2] = 1ull << 30;
	return 0;
}
