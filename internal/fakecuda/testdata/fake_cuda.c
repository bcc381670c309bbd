// A fake libcuda.so.1 for headroom's tests: the driver API entry points that
// package cuda binds, backed by host memory and a virtual clock, recording
// every call in a log that the test reads back with fake_log().
//
// "Device" pointers are host pointers. Events read a virtual clock in
// milliseconds that advances only when work is queued: a device-to-device
// copy or a kernel advances it by bytes moved / the bandwidth set with
// fake_set_bandwidth, and the fake cuBLAS advances it through
// fake_advance_ms. Timing results are therefore exact and known to the test.
//
// Each device has its own clock, so that GPUs probed at the same time do not
// see each other's work. The log and the allocation count are shared and
// locked: the probe drives several GPUs from several threads.
//
// Like the real driver, every call that needs a context fails with
// CUDA_ERROR_INVALID_CONTEXT (201) on a thread where none was made current,
// which checks that package cuda keeps its goroutine on one OS thread.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_OUT_OF_MEMORY 2
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_INVALID_DEVICE 101
#define CUDA_ERROR_INVALID_IMAGE 200
#define CUDA_ERROR_INVALID_CONTEXT 201
#define CUDA_ERROR_NOT_FOUND 500

typedef unsigned long long CUdeviceptr;

static char *log_buf;
static size_t log_len, log_cap;
static int log_truncated;
static char fail_name[128];
static int fail_code;
static int initialized;
static int device_count = 1;
static unsigned long long total_mem = 1ull << 32;
#define MAX_DEVICES 64
static double clock_ms[MAX_DEVICES];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned long long generation; // bumped by every write to device memory except cuBLAS's
static double dtod_gbps = 1000, copy_kernel_gbps = 1000, sum_kernel_gbps = 1000;
static __thread void *current_ctx;

static void logf_(const char *fmt, ...) {
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof line - 1, fmt, ap);
	va_end(ap);
	if (n < 0) return;
	if (n > (int)sizeof line - 2) n = sizeof line - 2;
	line[n++] = '\n';
	pthread_mutex_lock(&mu);
	if (log_len + n + 1 > 64u << 20) {
		log_truncated = 1;
	} else {
		if (log_len + n + 1 > log_cap) {
			log_cap = (log_len + n + 1) * 2;
			log_buf = realloc(log_buf, log_cap);
		}
		memcpy(log_buf + log_len, line, n);
		log_len += n;
		log_buf[log_len] = 0;
	}
	pthread_mutex_unlock(&mu);
}

// The device of the calling thread's current context (see cuDevicePrimaryCtxRetain).
static int cur_dev(void) { return (int)((uintptr_t)current_ctx - 0x1000) % MAX_DEVICES; }

// ---- control interface for the test ----

const char *fake_log(void) { return log_buf ? log_buf : ""; }
int fake_log_truncated(void) { return log_truncated; }
void fake_reset(void) {
	log_len = 0;
	if (log_buf) log_buf[0] = 0;
	log_truncated = 0;
	fail_name[0] = 0;
	fail_code = 0;
	initialized = 0;
	device_count = 1;
	memset(clock_ms, 0, sizeof clock_ms);
}
// fake_fail makes the named entry point return code from now on.
void fake_fail(const char *name, int code) {
	snprintf(fail_name, sizeof fail_name, "%s", name);
	fail_code = code;
}
int fake_failing(const char *name) { return strcmp(name, fail_name) == 0 ? fail_code : 0; }
void fake_set_devices(int n) { device_count = n; }
void fake_set_bandwidth(double dtod, double copy_kernel, double sum_kernel) {
	dtod_gbps = dtod;
	copy_kernel_gbps = copy_kernel;
	sum_kernel_gbps = sum_kernel;
}
void fake_advance_ms(double ms) { clock_ms[cur_dev()] += ms; }
void *fake_current_ctx(void) { return current_ctx; }
unsigned long long fake_generation(void) { return __atomic_load_n(&generation, __ATOMIC_SEQ_CST); }
void fake_logf(const char *s) { logf_("%s", s); }

#define FAIL(name) do { int c_ = fake_failing(name); if (c_) { logf_("%s -> %d", name, c_); return c_; } } while (0)
#define NEED_INIT() do { if (!initialized) return CUDA_ERROR_NOT_INITIALIZED; } while (0)
#define NEED_CTX(name) do { NEED_INIT(); if (!current_ctx) { logf_("%s -> no current context", name); return CUDA_ERROR_INVALID_CONTEXT; } } while (0)

static double ms_for(double bytes, double gbps) { return bytes / (gbps * 1e9) * 1e3; }

// ---- driver API ----

int cuInit(unsigned flags) {
	logf_("cuInit flags=%u", flags);
	FAIL("cuInit");
	initialized = 1;
	return 0;
}
int cuDriverGetVersion(int *v) { *v = 13000; return 0; }
int cuDeviceGetCount(int *n) { NEED_INIT(); *n = device_count; return 0; }
int cuDeviceGet(int *dev, int ordinal) {
	NEED_INIT();
	if (ordinal < 0 || ordinal >= device_count) return CUDA_ERROR_INVALID_DEVICE;
	*dev = ordinal;
	return 0;
}
int cuDeviceGetName(char *name, int len, int dev) {
	NEED_INIT();
	snprintf(name, len, "Fake GPU");
	return 0;
}
int cuDeviceGetAttribute(int *v, int attr, int dev) {
	NEED_INIT();
	switch (attr) {
	case 13: *v = 1980000; break; // clock rate kHz
	case 16: *v = 4; break;       // multiprocessors
	case 36: *v = 3201000; break; // memory clock kHz
	case 37: *v = 5120; break;    // bus width
	case 38: *v = 1 << 20; break; // L2 bytes
	case 75: *v = 9; break;
	case 76: *v = 0; break;
	default: return CUDA_ERROR_INVALID_VALUE;
	}
	return 0;
}
int cuDeviceTotalMem_v2(unsigned long long *bytes, int dev) { NEED_INIT(); *bytes = total_mem; return 0; }
int cuDeviceGetPCIBusId(char *id, int len, int dev) {
	NEED_INIT();
	snprintf(id, len, "0000:%02X:00.0", 0x18 + dev);
	return 0;
}
int cuDevicePrimaryCtxRetain(void **ctx, int dev) {
	NEED_INIT();
	logf_("cuDevicePrimaryCtxRetain dev=%d", dev);
	FAIL("cuDevicePrimaryCtxRetain");
	*ctx = (void *)(uintptr_t)(0x1000 + dev);
	return 0;
}
int cuDevicePrimaryCtxRelease_v2(int dev) { logf_("cuDevicePrimaryCtxRelease_v2 dev=%d", dev); return 0; }
int cuCtxSetCurrent(void *ctx) {
	logf_("cuCtxSetCurrent ctx=%p", ctx);
	current_ctx = ctx;
	return 0;
}
int cuCtxSynchronize(void) { NEED_CTX("cuCtxSynchronize"); return 0; }
int cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
	NEED_CTX("cuMemAlloc_v2");
	logf_("cuMemAlloc_v2 bytes=%zu", bytes);
	FAIL("cuMemAlloc_v2");
	void *m = NULL;
	if (posix_memalign(&m, 256, bytes ? bytes : 1)) return CUDA_ERROR_OUT_OF_MEMORY;
	// Fresh allocations hold garbage, like real device memory.
	memset(m, 0xA5, bytes);
	__atomic_fetch_add(&generation, 1, __ATOMIC_SEQ_CST);
	*p = (CUdeviceptr)(uintptr_t)m;
	return 0;
}
int cuMemFree_v2(CUdeviceptr p) {
	NEED_CTX("cuMemFree_v2");
	logf_("cuMemFree_v2");
	free((void *)(uintptr_t)p);
	return 0;
}
int cuMemGetInfo_v2(size_t *freeb, size_t *total) {
	NEED_CTX("cuMemGetInfo_v2");
	*freeb = total_mem / 2;
	*total = total_mem;
	return 0;
}
int cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
	NEED_CTX("cuMemcpyHtoD_v2");
	memcpy((void *)(uintptr_t)dst, src, n);
	__atomic_fetch_add(&generation, 1, __ATOMIC_SEQ_CST);
	return 0;
}
int cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
	NEED_CTX("cuMemcpyDtoH_v2");
	memcpy(dst, (void *)(uintptr_t)src, n);
	return 0;
}
int cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
	NEED_CTX("cuMemcpyDtoD_v2");
	FAIL("cuMemcpyDtoD_v2");
	memmove((void *)(uintptr_t)dst, (void *)(uintptr_t)src, n);
	__atomic_fetch_add(&generation, 1, __ATOMIC_SEQ_CST);
	clock_ms[cur_dev()] += ms_for(2.0 * n, dtod_gbps);
	return 0;
}
int cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t n) {
	NEED_CTX("cuMemsetD8_v2");
	memset((void *)(uintptr_t)dst, v, n);
	__atomic_fetch_add(&generation, 1, __ATOMIC_SEQ_CST);
	return 0;
}

typedef struct { double t; int recorded; } event;
int cuEventCreate(event **e, unsigned flags) {
	NEED_CTX("cuEventCreate");
	*e = calloc(1, sizeof(event));
	return 0;
}
int cuEventRecord(event *e, void *stream) {
	NEED_CTX("cuEventRecord");
	e->t = clock_ms[cur_dev()];
	e->recorded = 1;
	return 0;
}
int cuEventSynchronize(event *e) { NEED_CTX("cuEventSynchronize"); return 0; }
int cuEventElapsedTime(float *ms, event *start, event *end) {
	NEED_CTX("cuEventElapsedTime");
	if (!start->recorded || !end->recorded) return CUDA_ERROR_INVALID_VALUE;
	*ms = (float)(end->t - start->t);
	return 0;
}
int cuEventDestroy_v2(event *e) { free(e); return 0; }

int cuModuleLoadData(void **mod, const void *image) {
	NEED_CTX("cuModuleLoadData");
	const char *ptx = image;
	logf_("cuModuleLoadData bytes=%zu", strlen(ptx));
	FAIL("cuModuleLoadData");
	if (!strstr(ptx, ".entry copy16") || !strstr(ptx, ".entry sum16")) return CUDA_ERROR_INVALID_IMAGE;
	*mod = (void *)(uintptr_t)0x2000;
	return 0;
}
int cuModuleGetFunction(void **fn, void *mod, const char *name) {
	NEED_CTX("cuModuleGetFunction");
	logf_("cuModuleGetFunction name=%s", name);
	if (strcmp(name, "copy16") == 0) *fn = (void *)(uintptr_t)1;
	else if (strcmp(name, "sum16") == 0) *fn = (void *)(uintptr_t)2;
	else return CUDA_ERROR_NOT_FOUND;
	return 0;
}
int cuModuleUnload(void *mod) { NEED_CTX("cuModuleUnload"); logf_("cuModuleUnload"); return 0; }
int cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
		   unsigned shared, void *stream, void **params, void **extra) {
	NEED_CTX("cuLaunchKernel");
	FAIL("cuLaunchKernel");
	if (gx == 0 || bx == 0 || bx > 1024 || gy != 1 || gz != 1 || by != 1 || bz != 1) return CUDA_ERROR_INVALID_VALUE;
	uint64_t a0 = *(uint64_t *)params[0], a1 = *(uint64_t *)params[1], n = *(uint64_t *)params[2];
	if ((uintptr_t)fn == 1) {
		logf_("cuLaunchKernel fn=copy16 grid=%u block=%u n=%llu", gx, bx, (unsigned long long)n);
		memmove((void *)(uintptr_t)a0, (void *)(uintptr_t)a1, n * 16);
	__atomic_fetch_add(&generation, 1, __ATOMIC_SEQ_CST);
		clock_ms[cur_dev()] += ms_for(2.0 * n * 16, copy_kernel_gbps);
	} else if ((uintptr_t)fn == 2) {
		logf_("cuLaunchKernel fn=sum16 grid=%u block=%u n=%llu", gx, bx, (unsigned long long)n);
		const uint32_t *w = (const uint32_t *)(uintptr_t)a1;
		uint64_t s = 0;
		for (uint64_t i = 0; i < n * 4; i++) s += w[i];
		*(uint64_t *)(uintptr_t)a0 += s;
	__atomic_fetch_add(&generation, 1, __ATOMIC_SEQ_CST);
		clock_ms[cur_dev()] += ms_for(1.0 * n * 16, sum_kernel_gbps);
	} else {
		return CUDA_ERROR_INVALID_VALUE;
	}
	return 0;
}
