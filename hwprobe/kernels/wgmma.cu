// Warpgroup-level Tensor Core peak on Hopper (sm_90a): wgmma.mma_async, A and B from shared memory
// through 64-bit matrix descriptors, accumulators in registers, no global memory traffic in the loop.
//
// Each CTA copies one A tile (64 x K, K-major) and one B tile (256 x K, K-major: the "column-major" B
// of D = A * B) from global memory into shared memory once; the host builds those byte images, so the
// host owns the shared-memory layout and the check proves it. Then the warpgroup issues UNROLL
// back-to-back m64n256 wgmma on the same tiles per iteration (commit, keep one group in flight),
// for `iters` iterations. Its result is iters * UNROLL * (A @ B^T), written as [CTA][reg][thread].
// One warpgroup per CTA (two CTAs per SM behave like two warpgroups per CTA here, and compile once).
//
// Shared-memory layout: no swizzle ("interleave"), core matrices of 8 rows x 16 bytes stored as
// 128 contiguous bytes (conflict-free to read). Every K step here is 32 bytes wide (16 x fp16/bf16,
// 8 x tf32, 32 x fp8/s8), so each slab of 8 rows holds two core matrices side by side along K:
// LBO (next core matrix along K) = 128 B, SBO (next 8 rows) = 256 B. Byte of element (r, k) = (r / 8) * SBO + (kbyte / 16) * LBO + (r % 8) * 16 + kbyte % 16.
//
// Compile with -arch=sm_90a. Kernels are extern "C" (wgmma_<type>_<acc>, 128 threads per CTA) so their
// SASS is found by name. -DWGMMA_ONLY=<1..7> compiles one op alone (to isolate a failure).

typedef unsigned int u32;
typedef unsigned long long u64;

#define DEV static __device__ __forceinline__

#define A_BYTES 2048
#define B_BYTES 8192
#define LBO_BYTES 128
#define SBO_BYTES 256
#ifndef UNROLL
#define UNROLL 4
#endif

// Accumulator operand strings and lists (N = 256: 128 x 32-bit registers, or 64 for f16 accumulate).
#define D128 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31," \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47," \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63," \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79," \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95," \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111," \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"

#define D64 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15," \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31," \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47," \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"

#define O8(c, d, i) c(d[i]), c(d[i + 1]), c(d[i + 2]), c(d[i + 3]), c(d[i + 4]), c(d[i + 5]), c(d[i + 6]), c(d[i + 7])
#define O64(c, d, i) O8(c, d, i), O8(c, d, i + 8), O8(c, d, i + 16), O8(c, d, i + 24), O8(c, d, i + 32), \
  O8(c, d, i + 40), O8(c, d, i + 48), O8(c, d, i + 56)
#define F_(x) "+f"(x)
#define R_(x) "+r"(x)
#define F128(d) O64(F_, d, 0), O64(F_, d, 64)
#define R128(d) O64(R_, d, 0), O64(R_, d, 64)
#define R64(d) O64(R_, d, 0)

// Float variants: scale-d = 1 (D = A*B + D), imm-scale-a = imm-scale-b = 1; f16/bf16 add trans-a = trans-b = 0.
#define WGMMA_F32(SHAPE_TYPES, TAIL)                                                              \
  asm volatile("wgmma.mma_async.sync.aligned." SHAPE_TYPES " " D128 ", %128, %129, " TAIL ";"     \
               : F128(d) : "l"(da), "l"(db) : "memory")

struct F16F32 {
  typedef float acc_t; enum { NREG = 128 };
  DEV void mma(acc_t (&d)[NREG], u64 da, u64 db) { WGMMA_F32("m64n256k16.f32.f16.f16", "1, 1, 1, 0, 0"); }
};
struct BF16F32 {
  typedef float acc_t; enum { NREG = 128 };
  DEV void mma(acc_t (&d)[NREG], u64 da, u64 db) { WGMMA_F32("m64n256k16.f32.bf16.bf16", "1, 1, 1, 0, 0"); }
};
struct TF32F32 {
  typedef float acc_t; enum { NREG = 128 };
  DEV void mma(acc_t (&d)[NREG], u64 da, u64 db) { WGMMA_F32("m64n256k8.f32.tf32.tf32", "1, 1, 1"); }
};
struct E4M3F32 {
  typedef float acc_t; enum { NREG = 128 };
  DEV void mma(acc_t (&d)[NREG], u64 da, u64 db) { WGMMA_F32("m64n256k32.f32.e4m3.e4m3", "1, 1, 1"); }
};
struct E5M2F32 {
  typedef float acc_t; enum { NREG = 128 };
  DEV void mma(acc_t (&d)[NREG], u64 da, u64 db) { WGMMA_F32("m64n256k32.f32.e5m2.e5m2", "1, 1, 1"); }
};
struct F16F16 {  // f16 accumulate: 64 registers of f16x2
  typedef u32 acc_t; enum { NREG = 64 };
  DEV void mma(acc_t (&d)[NREG], u64 da, u64 db) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k16.f16.f16.f16 " D64 ", %64, %65, 1, 1, 1, 0, 0;"
                 : R64(d) : "l"(da), "l"(db) : "memory");
  }
};
struct S8S32 {  // integer variant: scale-d only
  typedef int acc_t; enum { NREG = 128 };
  DEV void mma(acc_t (&d)[NREG], u64 da, u64 db) {
    asm volatile("wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 " D128 ", %128, %129, 1;"
                 : R128(d) : "l"(da), "l"(db) : "memory");
  }
};

DEV u32 smem_addr(const void* p) {
  u32 a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}

// Matrix descriptor (PTX ISA "Matrix Descriptor Format"): start address, LBO, SBO (each >> 4),
// base offset 0, swizzle mode 0 (none).
DEV u64 make_desc(u32 addr) {
  return (u64)((addr & 0x3FFFF) >> 4) | ((u64)(LBO_BYTES >> 4) << 16) | ((u64)(SBO_BYTES >> 4) << 32);
}

template <class Op>
DEV void wgmma_loop(const u32* __restrict__ a_img, const u32* __restrict__ b_img, typename Op::acc_t* __restrict__ out,
                    int iters) {
  typedef typename Op::acc_t acc_t;
  __shared__ __align__(1024) u32 smem[(A_BYTES + B_BYTES) / 4];
  for (int i = threadIdx.x; i < (A_BYTES + B_BYTES) / 4; i += blockDim.x)
    smem[i] = i < A_BYTES / 4 ? a_img[i] : b_img[i - A_BYTES / 4];
  // Generic-proxy writes must be made visible to the async proxy (wgmma) before it reads them.
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();

  const u32 base = smem_addr(smem);
  const u64 da = make_desc(base), db = make_desc(base + A_BYTES);
  acc_t d[Op::NREG];
#pragma unroll
  for (int r = 0; r < Op::NREG; ++r) d[r] = acc_t(0);

  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) Op::mma(d, da, db);
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");

  const int t = threadIdx.x;
#pragma unroll
  for (int r = 0; r < Op::NREG; ++r) out[((long long)blockIdx.x * Op::NREG + r) * 128 + t] = d[r];
}

#define WGMMA_KERNEL(ID, NAME, OP)                                                                   \
  extern "C" __global__ void __launch_bounds__(128, 1)                                               \
  NAME(const u32* __restrict__ a, const u32* __restrict__ b, OP::acc_t* __restrict__ out, int iters) { \
    wgmma_loop<OP>(a, b, out, iters);                                                                \
  }

#if !defined(WGMMA_ONLY) || WGMMA_ONLY == 1
WGMMA_KERNEL(1, wgmma_fp16_f32acc, F16F32)
#endif
#if !defined(WGMMA_ONLY) || WGMMA_ONLY == 2
WGMMA_KERNEL(2, wgmma_fp16_f16acc, F16F16)
#endif
#if !defined(WGMMA_ONLY) || WGMMA_ONLY == 3
WGMMA_KERNEL(3, wgmma_bf16_f32acc, BF16F32)
#endif
#if !defined(WGMMA_ONLY) || WGMMA_ONLY == 4
WGMMA_KERNEL(4, wgmma_tf32_f32acc, TF32F32)
#endif
#if !defined(WGMMA_ONLY) || WGMMA_ONLY == 5
WGMMA_KERNEL(5, wgmma_fp8e4m3_f32acc, E4M3F32)
#endif
#if !defined(WGMMA_ONLY) || WGMMA_ONLY == 6
WGMMA_KERNEL(6, wgmma_fp8e5m2_f32acc, E5M2F32)
#endif
#if !defined(WGMMA_ONLY) || WGMMA_ONLY == 7
WGMMA_KERNEL(7, wgmma_int8_s32acc, S8S32)
#endif
