// What the fake libcublas.so.13 and libcublasLt.so.13 share: the cuBLAS
// status codes both return, and the binding to the fake libcuda.so.1 (as
// the real libraries use the real driver) for their log, failure switch,
// current context and virtual clock. Each library includes this once, so
// each has its own binding: a test hands a library the driver's dlopen
// handle (fake_cublas_bind, fake_cublaslt_bind), which keeps each test's
// set of fakes apart from every other test's.
#include <dlfcn.h>
#include <stdio.h>

static void (*fake_logf)(const char *s);
static int (*fake_failing)(const char *name);
static void (*fake_advance_ms)(double ms);
static void *(*fake_current_ctx)(void);
static unsigned long long (*fake_generation)(void);

// bind_driver resolves the fake driver's control functions in the library
// with the given dlopen handle; it returns 0 on success.
static int bind_driver(void *driver) {
	fake_logf = (void (*)(const char *))dlsym(driver, "fake_logf");
	fake_failing = (int (*)(const char *))dlsym(driver, "fake_failing");
	fake_advance_ms = (void (*)(double))dlsym(driver, "fake_advance_ms");
	fake_current_ctx = (void *(*)(void))dlsym(driver, "fake_current_ctx");
	fake_generation = (unsigned long long (*)(void))dlsym(driver, "fake_generation");
	return fake_logf && fake_failing && fake_advance_ms && fake_current_ctx && fake_generation ? 0 : -1;
}

// In a process of its own (a headroom binary that tests run with
// HEADROOM_LIBCUDA and HEADROOM_CUBLAS pointing at the fakes) nobody calls
// the library's bind function: bind to the fake driver already loaded
// there, which the probe opens before cuBLAS. A test's explicit bind
// replaces this one.
__attribute__((constructor)) static void autobind_driver(void) {
	void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (driver) bind_driver(driver);
}

#define LOG(...) do { char l_[1024]; snprintf(l_, sizeof l_, __VA_ARGS__); fake_logf(l_); } while (0)
#define FAIL(name) do { int c_ = fake_failing(name); if (c_) { LOG("%s -> %d", name, c_); return c_; } } while (0)

#define CUBLAS_STATUS_NOT_INITIALIZED 1
#define CUBLAS_STATUS_INVALID_VALUE 7
#define CUBLAS_STATUS_NOT_SUPPORTED 15

#define NEED_CTX(name) do { if (!fake_current_ctx()) { LOG("%s -> no current context", name); return CUBLAS_STATUS_NOT_INITIALIZED; } } while (0)
