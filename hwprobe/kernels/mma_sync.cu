// Warp-level Tensor Core peak: PTX mma.sync.aligned, operands in registers, no memory traffic in the loop.
//
// Each thread loads its A and B fragments once (host-packed per lane, so the host owns the fragment
// layout and the check proves it), then every warp runs CHAINS independent accumulator chains for
// `iters` iterations: d[c] = A*B + d[c] on even iterations and d[c] = A*(-B) + d[c] on odd ones (the host
// packs -B beside B; exact, since the inputs are small integers). So every accumulator alternates
// exactly between 0 and A @ B through a timed launch of any length (FP16 accumulation never grows, let
// alone overflows), at no cost: the odd iterations only name another B register. Each warp writes the
// sum of its chains, CHAINS * (iters % 2) * (A @ B), as 32 lanes x NC regs; the host runs an odd count
// and checks the timed launch's own output. Thread 0 of every block stamps clock64 and %globaltimer at
// entry and exit and the loop's cycles and nanoseconds in clk[((slot * gridDim.x) + blockIdx.x) * 6 + i]
// (entry cycles, exit cycles, entry ns, exit ns, loop cycles, loop ns).
//
// Kernels are extern "C" so their SASS is found by name. FP8 needs sm_89+; on older archs its body
// traps (the probe never launches it there: the support rules live in hwprobe/probes/compute/mma.py).
// Compile one kernel alone with -DMMA_ONLY_<name> (used to isolate a compile failure).

#include "common.cuh"

typedef unsigned int u32;
typedef unsigned long long u64;

#define DEV static __device__ __forceinline__
#define CLK_FIELDS 6

// ---- one struct per PTX shape/type: fragment sizes, accumulator type, the mma, the chain sum ----

struct F16F32 {  // m16n8k16, fp16 x fp16 -> fp32
  typedef u32 in_t; typedef float acc_t;
  enum { NA = 4, NB = 2, NC = 4 };
  DEV void mma(acc_t (&d)[NC], const in_t (&a)[NA], const in_t (&b)[NB]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  DEV acc_t add(acc_t x, acc_t y) { return x + y; }
};

struct F16F16 {  // m16n8k16, fp16 x fp16 -> fp16 (accumulator: 2 x f16x2 per thread)
  typedef u32 in_t; typedef u32 acc_t;
  enum { NA = 4, NB = 2, NC = 2 };
  DEV void mma(acc_t (&d)[NC], const in_t (&a)[NA], const in_t (&b)[NB]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 "
                 "{%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%0,%1};"
                 : "+r"(d[0]), "+r"(d[1])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  DEV acc_t add(acc_t x, acc_t y) {
    acc_t r;
    asm("add.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(x), "r"(y));
    return r;
  }
};

struct BF16F32 {  // m16n8k16, bf16 x bf16 -> fp32
  typedef u32 in_t; typedef float acc_t;
  enum { NA = 4, NB = 2, NC = 4 };
  DEV void mma(acc_t (&d)[NC], const in_t (&a)[NA], const in_t (&b)[NB]) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  DEV acc_t add(acc_t x, acc_t y) { return x + y; }
};

struct TF32F32 {  // m16n8k8, tf32 x tf32 -> fp32 (tf32 = fp32 bit pattern, low 13 mantissa bits ignored)
  typedef u32 in_t; typedef float acc_t;
  enum { NA = 4, NB = 2, NC = 4 };
  DEV void mma(acc_t (&d)[NC], const in_t (&a)[NA], const in_t (&b)[NB]) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  DEV acc_t add(acc_t x, acc_t y) { return x + y; }
};

struct S8S32 {  // m16n8k32, s8 x s8 -> s32
  typedef u32 in_t; typedef int acc_t;
  enum { NA = 4, NB = 2, NC = 4 };
  DEV void mma(acc_t (&d)[NC], const in_t (&a)[NA], const in_t (&b)[NB]) {
    asm volatile("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  DEV acc_t add(acc_t x, acc_t y) { return x + y; }
};

struct S4S32 {  // m16n8k64, s4 x s4 -> s32
  typedef u32 in_t; typedef int acc_t;
  enum { NA = 4, NB = 2, NC = 4 };
  DEV void mma(acc_t (&d)[NC], const in_t (&a)[NA], const in_t (&b)[NB]) {
    asm volatile("mma.sync.aligned.m16n8k64.row.col.s32.s4.s4.s32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                 : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  DEV acc_t add(acc_t x, acc_t y) { return x + y; }
};

#if __CUDA_ARCH__ >= 890
#define FP8_MMA(TYPE)                                                                            \
  asm volatile("mma.sync.aligned.m16n8k32.row.col.f32." TYPE "." TYPE ".f32 "                    \
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"                           \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                  \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]))
#else
#define FP8_MMA(TYPE) __trap()
#endif

struct E4M3F32 {  // m16n8k32, fp8 e4m3 x e4m3 -> fp32 (sm_89+)
  typedef u32 in_t; typedef float acc_t;
  enum { NA = 4, NB = 2, NC = 4 };
  DEV void mma(acc_t (&d)[NC], const in_t (&a)[NA], const in_t (&b)[NB]) { FP8_MMA("e4m3"); }
  DEV acc_t add(acc_t x, acc_t y) { return x + y; }
};

struct E5M2F32 {  // m16n8k32, fp8 e5m2 x e5m2 -> fp32 (sm_89+)
  typedef u32 in_t; typedef float acc_t;
  enum { NA = 4, NB = 2, NC = 4 };
  DEV void mma(acc_t (&d)[NC], const in_t (&a)[NA], const in_t (&b)[NB]) { FP8_MMA("e5m2"); }
  DEV acc_t add(acc_t x, acc_t y) { return x + y; }
};

struct F64F64 {  // m8n8k4, fp64 (DMMA)
  typedef double in_t; typedef double acc_t;
  enum { NA = 1, NB = 1, NC = 2 };
  DEV void mma(acc_t (&d)[NC], const in_t (&a)[NA], const in_t (&b)[NB]) {
    asm volatile("mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0,%1}, {%2}, {%3}, {%0,%1};"
                 : "+d"(d[0]), "+d"(d[1])
                 : "d"(a[0]), "d"(b[0]));
  }
  DEV acc_t add(acc_t x, acc_t y) { return x + y; }
};

struct F64K16 {  // m16n8k16, fp64 (DMMA.16x8x16, sm_90+): 8x the work of m8n8k4 per instruction
  typedef double in_t; typedef double acc_t;
  enum { NA = 8, NB = 4, NC = 4 };
  DEV void mma(acc_t (&d)[NC], const in_t (&a)[NA], const in_t (&b)[NB]) {
#if __CUDA_ARCH__ >= 900
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7,%8,%9,%10,%11}, {%12,%13,%14,%15}, {%0,%1,%2,%3};"
                 : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
                 : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
                   "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
#else
    __trap();
#endif
  }
  DEV acc_t add(acc_t x, acc_t y) { return x + y; }
};

// ---- the loop shared by every kernel ----

#ifndef CHAINS
#define CHAINS 8
#endif

template <class Op>
DEV void mma_loop(const typename Op::in_t* __restrict__ a_frag, const typename Op::in_t* __restrict__ b_frag,
                  typename Op::acc_t* __restrict__ out, u64* __restrict__ clk, int slot, int iters) {
  typedef typename Op::in_t in_t;
  typedef typename Op::acc_t acc_t;
  const long long e0 = clock_cycles<false>();
  const u64 t0 = globaltimer_ns<false>();
  const int lane = threadIdx.x & 31;
  in_t a[Op::NA], b[Op::NB], bn[Op::NB];              // B and -B (b_frag holds B's fragments, then -B's)
#pragma unroll
  for (int i = 0; i < Op::NA; ++i) a[i] = a_frag[lane * Op::NA + i];
#pragma unroll
  for (int i = 0; i < Op::NB; ++i) {
    b[i] = b_frag[lane * Op::NB + i];
    bn[i] = b_frag[(32 + lane) * Op::NB + i];
  }
  acc_t acc[CHAINS][Op::NC];
#pragma unroll
  for (int c = 0; c < CHAINS; ++c)
#pragma unroll
    for (int r = 0; r < Op::NC; ++r) acc[c][r] = acc_t(0);

  const long long c0 = clock_cycles<false>();
  const u64 g0 = globaltimer_ns<false>();
#pragma unroll 2
  for (int it = 0; it < iters / 2; ++it) {
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) Op::mma(acc[c], a, b);
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) Op::mma(acc[c], a, bn);
  }
  if (iters & 1) {
#pragma unroll
    for (int c = 0; c < CHAINS; ++c) Op::mma(acc[c], a, b);
  }
  const long long c1 = clock_cycles<false>();
  const u64 g1 = globaltimer_ns<false>();

  const long long warp = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
#pragma unroll
  for (int r = 0; r < Op::NC; ++r) {
    acc_t s = acc[0][r];
#pragma unroll
    for (int c = 1; c < CHAINS; ++c) s = Op::add(s, acc[c][r]);
    out[(warp * 32 + lane) * Op::NC + r] = s;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    const long long e1 = clock_cycles<false>();
    const u64 t1 = globaltimer_ns<false>();
    u64* k = clk + ((long long)slot * gridDim.x + blockIdx.x) * CLK_FIELDS;
    k[0] = (u64)e0;
    k[1] = (u64)e1;
    k[2] = t0;
    k[3] = t1;
    k[4] = (u64)(c1 - c0);
    k[5] = g1 - g0;
  }
}

#define MMA_KERNEL(NAME, OP)                                                                     \
  extern "C" __global__ void NAME(const OP::in_t* __restrict__ a, const OP::in_t* __restrict__ b, \
                                  OP::acc_t* __restrict__ out, u64* __restrict__ clk, int slot,  \
                                  int iters) {                                                   \
    mma_loop<OP>(a, b, out, clk, slot, iters);                                                   \
  }

#if defined(MMA_ONLY_mma_fp16_f32acc) || !defined(MMA_ONLY)
MMA_KERNEL(mma_fp16_f32acc, F16F32)
#endif
#if defined(MMA_ONLY_mma_fp16_f16acc) || !defined(MMA_ONLY)
MMA_KERNEL(mma_fp16_f16acc, F16F16)
#endif
#if defined(MMA_ONLY_mma_bf16_f32acc) || !defined(MMA_ONLY)
MMA_KERNEL(mma_bf16_f32acc, BF16F32)
#endif
#if defined(MMA_ONLY_mma_tf32_f32acc) || !defined(MMA_ONLY)
MMA_KERNEL(mma_tf32_f32acc, TF32F32)
#endif
#if defined(MMA_ONLY_mma_int8_s32acc) || !defined(MMA_ONLY)
MMA_KERNEL(mma_int8_s32acc, S8S32)
#endif
#if defined(MMA_ONLY_mma_int4_s32acc) || !defined(MMA_ONLY)
MMA_KERNEL(mma_int4_s32acc, S4S32)
#endif
#if defined(MMA_ONLY_mma_fp8e4m3_f32acc) || !defined(MMA_ONLY)
MMA_KERNEL(mma_fp8e4m3_f32acc, E4M3F32)
#endif
#if defined(MMA_ONLY_mma_fp8e5m2_f32acc) || !defined(MMA_ONLY)
MMA_KERNEL(mma_fp8e5m2_f32acc, E5M2F32)
#endif
#if defined(MMA_ONLY_mma_fp64_f64acc) || !defined(MMA_ONLY)
MMA_KERNEL(mma_fp64_f64acc, F64F64)
#endif
#if defined(MMA_ONLY_mma_fp64_f64acc_m16n8k16) || !defined(MMA_ONLY)
MMA_KERNEL(mma_fp64_f64acc_m16n8k16, F64K16)
#endif
