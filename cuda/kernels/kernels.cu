// Kernels for the bandwidth probe, compiled to PTX by gen.sh (the command is
// also in the first lines of kernels.ptx).
// Written for clang without CUDA headers: the __nvvm_* builtins stand for
// threadIdx/blockDim/blockIdx/gridDim, __shfl_down_sync and atomicAdd.

typedef unsigned long long u64;
typedef unsigned int u32;
typedef u32 u32x4 __attribute__((ext_vector_type(4)));

#define GLOBAL extern "C" __attribute__((global))
#define TID ((u32)__nvvm_read_ptx_sreg_tid_x())
#define NTID ((u32)__nvvm_read_ptx_sreg_ntid_x())
#define CTAID ((u32)__nvvm_read_ptx_sreg_ctaid_x())
#define NCTAID ((u32)__nvvm_read_ptx_sreg_nctaid_x())

// copy16 copies n 16-byte vectors from src to dst. Each thread walks the
// buffer with a stride of the whole grid and keeps four 16-byte loads in
// flight before storing them; adjacent threads touch adjacent vectors.
GLOBAL void copy16(u32x4 *__restrict__ dst, const u32x4 *__restrict__ src, u64 n) {
  u64 stride = (u64)NCTAID * NTID;
  u64 i = (u64)CTAID * NTID + TID;
  for (; i + 3 * stride < n; i += 4 * stride) {
    u32x4 a = src[i];
    u32x4 b = src[i + stride];
    u32x4 c = src[i + 2 * stride];
    u32x4 d = src[i + 3 * stride];
    dst[i] = a;
    dst[i + stride] = b;
    dst[i + 2 * stride] = c;
    dst[i + 3 * stride] = d;
  }
  for (; i < n; i += stride) dst[i] = src[i];
}

// sum16 reads n 16-byte vectors and adds all their 32-bit words, as unsigned
// integers, into *out (wrapping at 2^64): a read-only pass whose result is an
// exact checksum. Needs a block size that is a multiple of 32 (warp shuffle).
GLOBAL void sum16(u64 *__restrict__ out, const u32x4 *__restrict__ src, u64 n) {
  u64 stride = (u64)NCTAID * NTID;
  u64 i = (u64)CTAID * NTID + TID;
  u64 acc = 0;
  for (; i + 3 * stride < n; i += 4 * stride) {
    u32x4 a = src[i];
    u32x4 b = src[i + stride];
    u32x4 c = src[i + 2 * stride];
    u32x4 d = src[i + 3 * stride];
    acc += (u64)a.x + a.y + a.z + a.w;
    acc += (u64)b.x + b.y + b.z + b.w;
    acc += (u64)c.x + c.y + c.z + c.w;
    acc += (u64)d.x + d.y + d.z + d.w;
  }
  for (; i < n; i += stride) {
    u32x4 a = src[i];
    acc += (u64)a.x + a.y + a.z + a.w;
  }
  for (int off = 16; off > 0; off /= 2) {
    u32 lo = __nvvm_shfl_sync_down_i32(0xffffffffu, (u32)acc, off, 31);
    u32 hi = __nvvm_shfl_sync_down_i32(0xffffffffu, (u32)(acc >> 32), off, 31);
    acc += ((u64)hi << 32) | lo;
  }
  if ((TID & 31) == 0) __nvvm_atom_add_gen_ll((long long *)out, (long long)acc);
}
