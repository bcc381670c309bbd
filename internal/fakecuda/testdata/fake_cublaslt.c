// A fake libcublasLt.so.13 for headroom's tests, bound to the fake libcuda.so.1
// as the fake cuBLAS is (log, failure switch, current context, virtual clock).
//
// cublasLtMatmul really computes the FP8 product on the host: E4M3 inputs
// decoded exactly, multiplied by the A and B scales read from "device"
// memory, accumulated in float and rounded to a bf16 output, so the probe's
// FP8 validation runs against real arithmetic. It accepts only what the real
// library's FP8 kernels accept: A transposed, B not, E4M3 A and B, a bf16
// C = D, fp32 compute and scale types. Its virtual duration follows a
// roofline with its own FP8 peak (fake_cublaslt_set_roofline), and
// fake_cublaslt_set_align makes the heuristic find no algorithm for shapes
// whose dimensions are not multiples of the given number.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_driver_client.h"

int fake_cublaslt_bind(void *driver) { return bind_driver(driver); }

static double peak_tflops = 200, bandwidth_gbps = 1000;
static int align = 1, matmul_align = 1;
void fake_cublaslt_set_roofline(double tflops, double gbps) { peak_tflops = tflops; bandwidth_gbps = gbps; }
void fake_cublaslt_set_align(int a) { align = a > 0 ? a : 1; }
// fake_cublaslt_set_matmul_align: the heuristic offers an algorithm for any
// shape, but cublasLtMatmul refuses (NOT_SUPPORTED) shapes whose dimensions
// are not multiples of a, as the real library did on an H200 at batch 1.
void fake_cublaslt_set_matmul_align(int a) { matmul_align = a > 0 ? a : 1; }
// The heuristic offers three candidates (ids 0xf8, 0xf9, 0xfa);
// fake_cublaslt_refuse(k, fast) makes cublasLtMatmul refuse the first k of
// them, and, with fast set, any call with fast accumulation.
static int refuse_first, refuse_fast;
void fake_cublaslt_refuse(int k, int fast) { refuse_first = k; refuse_fast = fast; }

typedef struct { int compute, scale, transa, transb, fast; const float *a_scale, *b_scale; } desc;
typedef struct { int type; uint64_t rows, cols; int64_t ld; } layout;

int cublasLtCreate(void **h) {
	NEED_CTX("cublasLtCreate");
	LOG("cublasLtCreate");
	FAIL("cublasLtCreate");
	*h = (void *)(uintptr_t)0x4000;
	return 0;
}
int cublasLtDestroy(void *h) { LOG("cublasLtDestroy"); return 0; }
size_t cublasLtGetVersion(void) { return 130100; }

int cublasLtMatmulDescCreate(desc **d, int compute, int scale) {
	FAIL("cublasLtMatmulDescCreate");
	*d = calloc(1, sizeof(desc));
	(*d)->compute = compute;
	(*d)->scale = scale;
	return 0;
}
int cublasLtMatmulDescDestroy(desc *d) { free(d); return 0; }
int cublasLtMatmulDescSetAttribute(desc *d, int attr, const void *buf, size_t size) {
	switch (attr) {
	case 3: if (size != 4) return CUBLAS_STATUS_INVALID_VALUE; d->transa = *(const int32_t *)buf; break;
	case 4: if (size != 4) return CUBLAS_STATUS_INVALID_VALUE; d->transb = *(const int32_t *)buf; break;
	case 17: if (size != 8) return CUBLAS_STATUS_INVALID_VALUE; d->a_scale = *(const float *const *)buf; break;
	case 18: if (size != 8) return CUBLAS_STATUS_INVALID_VALUE; d->b_scale = *(const float *const *)buf; break;
	case 25: if (size != 1) return CUBLAS_STATUS_INVALID_VALUE; d->fast = *(const int8_t *)buf; break;
	default: return CUBLAS_STATUS_INVALID_VALUE;
	}
	return 0;
}
int cublasLtMatrixLayoutCreate(layout **l, int type, uint64_t rows, uint64_t cols, int64_t ld) {
	if (ld < (int64_t)rows) return CUBLAS_STATUS_INVALID_VALUE;
	*l = calloc(1, sizeof(layout));
	**l = (layout){type, rows, cols, ld};
	return 0;
}
int cublasLtMatrixLayoutDestroy(layout *l) { free(l); return 0; }
int cublasLtMatmulPreferenceCreate(void **p) { *p = malloc(8); return 0; }
int cublasLtMatmulPreferenceDestroy(void *p) { free(p); return 0; }
int cublasLtMatmulPreferenceSetAttribute(void *p, int attr, const void *buf, size_t size) {
	return attr == 1 && size == 8 ? 0 : CUBLAS_STATUS_INVALID_VALUE;
}

static int fp8_supported(const desc *d, const layout *a, const layout *b, const layout *c) {
	return d->compute == 68 && d->scale == 0 && d->transa == 1 && d->transb == 0 && a->type == 28 &&
	       b->type == 28 && c->type == 14 && a->rows == b->rows;
}

typedef struct { uint64_t algo[8]; size_t workspace; int state; float waves; int reserved[4]; } heuristic;

int cublasLtMatmulAlgoGetHeuristic(void *h, desc *d, layout *a, layout *b, layout *c, layout *dd, void *pref,
				   int requested, heuristic *results, int *returned) {
	NEED_CTX("cublasLtMatmulAlgoGetHeuristic");
	LOG("cublasLtMatmulAlgoGetHeuristic m=%llu n=%llu k=%llu transa=%d transb=%d fast=%d",
	    (unsigned long long)a->cols, (unsigned long long)b->cols, (unsigned long long)a->rows, d->transa,
	    d->transb, d->fast);
	FAIL("cublasLtMatmulAlgoGetHeuristic");
	*returned = 0;
	if (!fp8_supported(d, a, b, c)) return CUBLAS_STATUS_NOT_SUPPORTED;
	if (a->rows % align || a->cols % align || b->cols % align) return 0; // no algorithm for this shape
	int n = requested < 3 ? requested : 3;
	memset(results, 0, n * sizeof *results);
	for (int i = 0; i < n; i++) results[i].algo[0] = 0xf8 + i;
	*returned = n;
	return 0;
}

static float e4m3(uint8_t v) {
	int sign = v & 0x80, exp = (v >> 3) & 0xf, mant = v & 7;
	float f;
	if ((v & 0x7f) == 0x7f) return NAN;
	if (exp == 0) f = ldexpf((float)mant / 8, -6);
	else f = ldexpf(1 + (float)mant / 8, exp - 7);
	return sign ? -f : f;
}
static uint16_t float_to_bf16(float f) {
	uint32_t u;
	memcpy(&u, &f, 4);
	if ((u & 0x7fffffff) > 0x7f800000) return 0x7fc0;
	u += 0x7fff + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

static __thread struct { const void *a, *b; void *d; uint64_t m, n, k; float sa, sb; unsigned long long gen; } last;

int cublasLtMatmul(void *h, desc *d, const float *alpha, const uint8_t *A, layout *al, const uint8_t *B, layout *bl,
		   const float *beta, const void *C, layout *cl, uint16_t *D, layout *dl, const heuristic *algo,
		   void *ws, size_t ws_bytes, void *stream) {
	NEED_CTX("cublasLtMatmul");
	LOG("cublasLtMatmul ws=%p ws_bytes=%zu stream=%p", ws, ws_bytes, stream);
	FAIL("cublasLtMatmul");
	if (!algo || algo->algo[0] < 0xf8 || algo->algo[0] > 0xfa) return CUBLAS_STATUS_INVALID_VALUE;
	if ((int)(algo->algo[0] - 0xf8) < refuse_first || (refuse_fast && d->fast)) {
		LOG("cublasLtMatmul refused algo=%#llx fast=%d", (unsigned long long)algo->algo[0], d->fast);
		return CUBLAS_STATUS_NOT_SUPPORTED;
	}
	if (!fp8_supported(d, al, bl, cl) || C != D || cl != dl) return CUBLAS_STATUS_NOT_SUPPORTED;
	uint64_t m = al->cols, n = bl->cols, k = al->rows;
	if (m % matmul_align || n % matmul_align || k % matmul_align) return CUBLAS_STATUS_NOT_SUPPORTED;
	float sa = d->a_scale ? *d->a_scale : 1, sb = d->b_scale ? *d->b_scale : 1;
	// The probe times thousands of identical calls: compute the product once,
	// unless device memory was written since (a poisoned output has been).
	if (!(last.a == A && last.b == B && last.d == D && last.m == m && last.n == n && last.k == k && last.sa == sa &&
	      last.sb == sb && last.gen == fake_generation())) {
		for (uint64_t j = 0; j < n; j++) {
			for (uint64_t i = 0; i < m; i++) {
				float acc = 0;
				// op(A) = Aᵀ: element (i, p) is A[p + i*lda]
				for (uint64_t p = 0; p < k; p++) acc += e4m3(A[p + i * al->ld]) * e4m3(B[p + j * bl->ld]);
				D[i + j * dl->ld] = float_to_bf16(*alpha * sa * sb * acc);
			}
		}
		last.a = A; last.b = B; last.d = D; last.m = m; last.n = n; last.k = k; last.sa = sa; last.sb = sb;
		last.gen = fake_generation();
	}
	double flops = 2.0 * m * n * k, bytes = (double)m * k + (double)k * n + 2.0 * m * n;
	double t_compute = flops / (peak_tflops * 1e12) * 1e3, t_memory = bytes / (bandwidth_gbps * 1e9) * 1e3;
	fake_advance_ms(t_compute > t_memory ? t_compute : t_memory);
	return 0;
}
