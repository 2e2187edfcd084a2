// CUDA-core instruction throughput: many independent multiply-add chains per thread.
//
// Each operation is one PTX instruction in inline asm, so NVVM cannot fold, reassociate or strength-
// reduce the chain, and the instruction ptxas sees is exactly the one we name (the probe checks the
// SASS it becomes). No headers: f16x2/bf16x2 values travel as raw 32-bit registers.
//
// One module per operation pair, chosen with -D options by hwprobe/probes/gpu_fma.py:
//   HWP_A, HWP_B   operation structs below (HWP_B = OpNone for single-op kernels)
//   HWP_MIX        0: only A; 1: as many B chains as A chains, interleaved 1:1
//   HWP_BODY       instructions per loop trip per thread (unroll = HWP_BODY / all chains)
//   HWP_C0..HWP_C5 chain counts; each defines extern "C" hwp_fma_c<N>(oa, pa, ob, pb, iters, thread_mask)
//
// Kernel contract, per thread t and chain j (params pa = [p1, p2, x0_0 .. x0_{CA-1}]):
//   x_j <- op(x_j, p1, p2), iters * unroll times;  oa[t * CA + j] = x_j   (same for B)
// Every thread computes the same values, so one host reference checks every output element.
// thread_mask is 0 at run time, but the start values' addresses depend on threadIdx through it: values
// ptxas could prove warp-uniform it may move to the uniform datapath (sm_120 issues UFFMA then), which
// would do one warp's work once instead of 32 times.

#define HWP_DEVI __device__ __forceinline__

struct OpNone {  // placeholder B for single-op kernels: never stepped
  typedef unsigned T;
  static HWP_DEVI void step(T&, T, T) {}
};

struct OpF64 {  // DFMA: x = x * p1 + p2
  typedef double T;
  static HWP_DEVI void step(T& x, T p1, T p2) { asm("fma.rn.f64 %0, %0, %1, %2;" : "+d"(x) : "d"(p1), "d"(p2)); }
};

struct OpF32 {  // FFMA: x = x * p1 + p2 (no .ftz: values stay normal)
  typedef float T;
  static HWP_DEVI void step(T& x, T p1, T p2) { asm("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x) : "f"(p1), "f"(p2)); }
};

struct OpH2 {  // HFMA2 (ptxas may issue some as HFMA2.MMA): two fp16 FMAs per instruction
  typedef unsigned T;
  static HWP_DEVI void step(T& x, T p1, T p2) {
#if __CUDA_ARCH__ >= 530
    asm("fma.rn.f16x2 %0, %0, %1, %2;" : "+r"(x) : "r"(p1), "r"(p2));
#else
    __trap();
#endif
  }
};

struct OpB2 {  // HFMA2.BF16_V2: two bf16 FMAs per instruction (sm_80+)
  typedef unsigned T;
  static HWP_DEVI void step(T& x, T p1, T p2) {
#if __CUDA_ARCH__ >= 800
    asm("fma.rn.bf16x2 %0, %0, %1, %2;" : "+r"(x) : "r"(p1), "r"(p2));
#else
    __trap();
#endif
  }
};

struct OpH1 {  // scalar fp16 FMA: ptxas issues plain HFMA2 (FMA pipe only), one FMA per instruction
  typedef unsigned short T;
  static HWP_DEVI void step(T& x, T p1, T p2) {
#if __CUDA_ARCH__ >= 530
    asm("fma.rn.f16 %0, %0, %1, %2;" : "+h"(x) : "h"(p1), "h"(p2));
#else
    __trap();
#endif
  }
};

struct OpI32 {  // IMAD: x = x * p1 + p2 (mod 2^32)
  typedef unsigned T;
  static HWP_DEVI void step(T& x, T p1, T p2) { asm("mad.lo.u32 %0, %0, %1, %2;" : "+r"(x) : "r"(p1), "r"(p2)); }
};

struct OpDP4A {  // IDP.4A: x += dot(s8x4 p1, s8x4 p2), four multiply-adds per instruction (sm_61+)
  typedef unsigned T;
  static HWP_DEVI void step(T& x, T p1, T p2) {
#if __CUDA_ARCH__ >= 610
    asm("dp4a.s32.s32 %0, %1, %2, %0;" : "+r"(x) : "r"(p1), "r"(p2));
#else
    __trap();
#endif
  }
};

struct OpDP2A {  // IDP.2A.LO: x += dot(s16x2 p1, low s8x2 of p2), two multiply-adds per instruction (sm_61+)
  typedef unsigned T;
  static HWP_DEVI void step(T& x, T p1, T p2) {
#if __CUDA_ARCH__ >= 610
    asm("dp2a.lo.s32.s32 %0, %1, %2, %0;" : "+r"(x) : "r"(p1), "r"(p2));
#else
    __trap();
#endif
  }
};

template <class A, int CA, class B, int CB, int U>
HWP_DEVI void hwp_fma_loop(typename A::T* __restrict__ oa, const typename A::T* __restrict__ pa,
                           typename B::T* __restrict__ ob, const typename B::T* __restrict__ pb, int iters,
                           int thread_mask) {
  typedef typename A::T TA;
  typedef typename B::T TB;
  constexpr int CM = CA > CB ? CA : CB;
  const TA a1 = pa[0], a2 = pa[1];
  const int lane = threadIdx.x & thread_mask;  // 0
  TA xa[CA > 0 ? CA : 1];
#pragma unroll
  for (int j = 0; j < CA; ++j) xa[j] = pa[2 + j + lane];
  TB b1 = TB(), b2 = TB();
  TB xb[CB > 0 ? CB : 1];
  if (CB > 0) {
    b1 = pb[0];
    b2 = pb[1];
#pragma unroll
    for (int j = 0; j < CB; ++j) xb[j] = pb[2 + j + lane];
  }
#pragma unroll 1
  for (int i = 0; i < iters; ++i) {
#pragma unroll
    for (int u = 0; u < U; ++u) {
#pragma unroll
      for (int j = 0; j < CM; ++j) {
        if (j < CA) A::step(xa[j], a1, a2);
        if (j < CB) B::step(xb[j], b1, b2);
      }
    }
  }
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
#pragma unroll
  for (int j = 0; j < CA; ++j) oa[t * CA + j] = xa[j];
#pragma unroll
  for (int j = 0; j < CB; ++j) ob[t * CB + j] = xb[j];
}

#ifndef HWP_A
#define HWP_A OpF32
#endif
#ifndef HWP_B
#define HWP_B OpNone
#endif
#ifndef HWP_MIX
#define HWP_MIX 0
#endif
#ifndef HWP_BODY
#define HWP_BODY 512
#endif

#define HWP_CAT2(a, b) a##b
#define HWP_CAT(a, b) HWP_CAT2(a, b)
#define HWP_KERNEL(C)                                                                                        \
  extern "C" __global__ void HWP_CAT(hwp_fma_c, C)(HWP_A::T* oa, const HWP_A::T* pa, HWP_B::T* ob,          \
                                                   const HWP_B::T* pb, int iters, int thread_mask) {       \
    hwp_fma_loop<HWP_A, (C), HWP_B, (C) * (HWP_MIX), HWP_BODY / ((C) * (1 + (HWP_MIX)))>(oa, pa, ob, pb,    \
                                                                                        iters, thread_mask); \
  }

#ifdef HWP_C0
HWP_KERNEL(HWP_C0)
#endif
#ifdef HWP_C1
HWP_KERNEL(HWP_C1)
#endif
#ifdef HWP_C2
HWP_KERNEL(HWP_C2)
#endif
#ifdef HWP_C3
HWP_KERNEL(HWP_C3)
#endif
#ifdef HWP_C4
HWP_KERNEL(HWP_C4)
#endif
#ifdef HWP_C5
HWP_KERNEL(HWP_C5)
#endif
