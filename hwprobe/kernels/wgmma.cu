// Warpgroup-level Tensor Core peak on Hopper (sm_90a): wgmma.mma_async, accumulators in registers, no
// global memory traffic in the loop. Three operand forms (a search picks the fastest per type):
//   ss_nosw  : A and B from shared memory, no-swizzle ("interleave") layout
//   ss_sw128 : A and B from shared memory, 128-byte swizzle (the layout real GEMMs use)
//   rs_sw128 : A from registers (per-thread fragments), B from shared memory with 128-byte swizzle
//
// Each CTA copies one A tile (64 rows x 128 bytes of K, K-major; or, for rs, 64x4 A fragments per
// thread) and one B tile (256 rows x 128 bytes of K, K-major: the "column-major" B of D = A * B) once;
// the host builds those images, so the host owns the layouts and the check proves them. Every loop
// iteration issues KSTEPS = 4 m64n256 wgmma that walk the tile's four 32-byte K slices (commit, keep one
// group in flight), so one iteration computes A @ B^T over the whole 128-byte K extent. The result,
// r * (A @ B^T), is written as [CTA][reg][thread], where r = ((iters - 1) % reset) + 1: the first K
// slice of every reset-th iteration runs with scale-d = 0 (D = A*B, a predicate operand of the wgmma
// itself, so the reset costs no instruction of its own), which keeps every accumulator finite and exact
// (FP16 accumulation included) through a timed launch of any length; the host picks `reset` from the
// operands and the accumulator's exact range and checks the timed launch's own output.
// Every CTA stamps itself (thread 0): clock64 and %globaltimer at entry and exit, and the timed loop's
// cycles and nanoseconds, in clk[((slot * gridDim.x) + blockIdx.x) * CLK_FIELDS + i]. The host takes the
// SM clock from cycles over globaltimer of the same interval, and the rate from the first CTA's entry to
// the last CTA's exit, so stragglers, a second wave, the prologue and the tail count as lost efficiency,
// never as a lower clock.
//
// Byte of element (r, kbyte) inside a tile (kbyte < 128):
//   no swizzle: (r/8)*1024 + (kbyte/16)*128 + (r%8)*16 + kbyte%16      (LBO 128, SBO 1024)
//   128B swz  : (r/8)*1024 + (r%8)*128 + ((kbyte/16) ^ (r%8))*16 + kbyte%16   (SBO 1024, LBO unused)
// A K slice s starts at descriptor address + s*256 (no swizzle) or + s*32 (swizzle: the hardware XORs
// address bits [4:6] with [7:9] inside each 1024-byte-aligned atom).
//
// Compile with -arch=sm_90a. Kernels are extern "C" (wgmma_<type>_<acc>_<form>, 128 threads per CTA) so
// their SASS is found by name. -DWGMMA_ONLY=<1..7> compiles one type alone (to isolate a failure).

#include "common.cuh"

typedef unsigned int u32;
typedef unsigned long long u64;

#define DEV static __device__ __forceinline__

#define A_BYTES 8192    // 64 rows x 128 B
#define B_BYTES 32768   // 256 rows x 128 B
#define KSTEPS 4        // 32-byte K slices per 128-byte row: wgmma per iteration
#define CLK_FIELDS 6    // per CTA and launch: entry cycles, exit cycles, entry ns, exit ns, loop cycles, loop ns

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

// One struct per type: accumulator registers, the ss form (two descriptors) and the rs form (four A
// registers + B descriptor). Float types: scale-d = 1 (D = A*B + D), imm-scale-a = imm-scale-b = 1;
// f16/bf16 add the transposes (ss: trans-a, trans-b; rs: trans-b only), all 0 (K-major). s8: scale-d only.
// Operand lists after the accumulators: ss (two descriptors) and rs (four A registers + B descriptor),
// each with the scale-d flag (an int turned into the predicate p) last.
#define SS128 ", %128, %129, p"
#define RS128 ", {%128, %129, %130, %131}, %132, p"
#define SS64 ", %64, %65, p"
#define RS64 ", {%64, %65, %66, %67}, %68, p"
#define PRED(N) "{ .reg .pred p; setp.ne.b32 p, %" #N ", 0; "

// One struct per type: accumulator registers, the ss and rs forms. scale-d (D = A*B + D when keep != 0,
// D = A*B when keep == 0) is the predicate p; imm-scale-a = imm-scale-b = 1; f16/bf16 add the transposes
// (ss: trans-a, trans-b; rs: trans-b only), all 0 (K-major). s8: scale-d only.
#define WG_OPS(NAME, ACC, NR, SHAPE_TYPES, DLIST, SS, RS, PS, PR, SS_TAIL, RS_TAIL, CONSTR)           \
  struct NAME {                                                                                     \
    typedef ACC acc_t; enum { NREG = NR };                                                          \
    DEV void ss(acc_t (&d)[NREG], u64 da, u64 db, int keep) {                                       \
      asm volatile(PS "wgmma.mma_async.sync.aligned." SHAPE_TYPES " " DLIST SS SS_TAIL "; }"        \
                   : CONSTR(d) : "l"(da), "l"(db), "r"(keep) : "memory");                           \
    }                                                                                               \
    DEV void rs(acc_t (&d)[NREG], const u32 (&a)[4], u64 db, int keep) {                            \
      asm volatile(PR "wgmma.mma_async.sync.aligned." SHAPE_TYPES " " DLIST RS RS_TAIL "; }"        \
                   : CONSTR(d) : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(keep)     \
                   : "memory");                                                                     \
    }                                                                                               \
  };
#define WG_F32(NAME, SHAPE_TYPES, SS_TAIL, RS_TAIL) \
  WG_OPS(NAME, float, 128, SHAPE_TYPES, D128, SS128, RS128, PRED(130), PRED(133), SS_TAIL, RS_TAIL, F128)

WG_F32(F16F32, "m64n256k16.f32.f16.f16", ", 1, 1, 0, 0", ", 1, 1, 0")
WG_F32(BF16F32, "m64n256k16.f32.bf16.bf16", ", 1, 1, 0, 0", ", 1, 1, 0")
WG_F32(TF32F32, "m64n256k8.f32.tf32.tf32", ", 1, 1", ", 1, 1")
WG_F32(E4M3F32, "m64n256k32.f32.e4m3.e4m3", ", 1, 1", ", 1, 1")
WG_F32(E5M2F32, "m64n256k32.f32.e5m2.e5m2", ", 1, 1", ", 1, 1")
// f16 accumulate: 64 registers of f16x2
WG_OPS(F16F16, u32, 64, "m64n256k16.f16.f16.f16", D64, SS64, RS64, PRED(66), PRED(69), ", 1, 1, 0, 0", ", 1, 1, 0",
       R64)
// integer variant: scale-d only
WG_OPS(S8S32, int, 128, "m64n256k32.s32.s8.s8", D128, SS128, RS128, PRED(130), PRED(133), "", "", R128)

DEV u32 smem_addr(const void* p) {
  u32 a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}

// Matrix descriptor (PTX ISA "Matrix Descriptor Format"): start address >> 4 (bits 0-13), LBO >> 4
// (16-29), SBO >> 4 (32-45), base offset 0 (tiles are 1024-byte aligned), swizzle mode (62-63: 0 none,
// 1 = 128 B). For the 128-byte swizzle K-major layout the LBO is unused (1, as CUTLASS sets it).
template <bool SW128>
DEV u64 make_desc(u32 addr) {
  const u64 lbo = SW128 ? 1 : (128 >> 4), sbo = 1024 >> 4;
  return (u64)((addr & 0x3FFFF) >> 4) | (lbo << 16) | (sbo << 32) | ((u64)(SW128 ? 1 : 0) << 62);
}

// FORM: 0 = ss_nosw, 1 = ss_sw128, 2 = rs_sw128.
template <class Op, int FORM>
DEV void wgmma_loop(const u32* __restrict__ a_img, const u32* __restrict__ b_img, typename Op::acc_t* __restrict__ out,
                    unsigned long long* __restrict__ clk, int slot, int iters, int reset) {
  typedef typename Op::acc_t acc_t;
  const long long e0 = clock_cycles<false>();
  const unsigned long long t0 = globaltimer_ns<false>();
  constexpr bool RS = FORM == 2, SW = FORM != 0;
  constexpr u32 STEP = SW ? 32 : 256;                 // bytes from one K slice to the next
  __shared__ __align__(1024) u32 smem[(A_BYTES + B_BYTES) / 4];
  const int t = threadIdx.x;
  u32 a[KSTEPS][4];                                   // rs: this thread's A fragment per K slice
  if (RS) {
#pragma unroll
    for (int s = 0; s < KSTEPS; ++s)
#pragma unroll
      for (int i = 0; i < 4; ++i) a[s][i] = a_img[(t * KSTEPS + s) * 4 + i];
    for (int i = t; i < B_BYTES / 4; i += blockDim.x) smem[A_BYTES / 4 + i] = b_img[i];
  } else {
    for (int i = t; i < A_BYTES / 4; i += blockDim.x) smem[i] = a_img[i];
    for (int i = t; i < B_BYTES / 4; i += blockDim.x) smem[A_BYTES / 4 + i] = b_img[i];
  }
  // Generic-proxy writes must be made visible to the async proxy (wgmma) before it reads them.
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();

  const u32 base = smem_addr(smem);
  const u64 da = make_desc<SW>(base), db = make_desc<SW>(base + A_BYTES);
  acc_t d[Op::NREG];
#pragma unroll
  for (int r = 0; r < Op::NREG; ++r) d[r] = acc_t(0);

  const long long c0 = clock_cycles<false>();
  const unsigned long long g0 = globaltimer_ns<false>();
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
  int phase = 0;                                      // iterations since the last reset (0: reset now)
  // Unrolled twice: the timed loop stays the kernel's largest (the SASS check reads the largest loop).
#pragma unroll 2
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int s = 0; s < KSTEPS; ++s) {
      const int keep = s > 0 || phase != 0;
      if (RS) Op::rs(d, a[s], db + s * (STEP >> 4), keep);
      else Op::ss(d, da + s * (STEP >> 4), db + s * (STEP >> 4), keep);
    }
    asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
    asm volatile("wgmma.wait_group.sync.aligned 1;" ::: "memory");
    phase = phase + 1 == reset ? 0 : phase + 1;
  }
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
  const long long c1 = clock_cycles<false>();
  const unsigned long long g1 = globaltimer_ns<false>();

#pragma unroll
  for (int r = 0; r < Op::NREG; ++r) out[((long long)blockIdx.x * Op::NREG + r) * 128 + t] = d[r];
  __syncthreads();
  if (t == 0) {
    const long long e1 = clock_cycles<false>();
    const unsigned long long t1 = globaltimer_ns<false>();
    unsigned long long* c = clk + ((long long)slot * gridDim.x + blockIdx.x) * CLK_FIELDS;
    c[0] = (unsigned long long)e0;
    c[1] = (unsigned long long)e1;
    c[2] = t0;
    c[3] = t1;
    c[4] = (unsigned long long)(c1 - c0);
    c[5] = g1 - g0;
  }
}

#define WGMMA_KERNEL(NAME, OP, FORM)                                                                   \
  extern "C" __global__ void __launch_bounds__(128, 1)                                                 \
  NAME(const u32* __restrict__ a, const u32* __restrict__ b, OP::acc_t* __restrict__ out,               \
       unsigned long long* __restrict__ clk, int slot, int iters, int reset) {                         \
    wgmma_loop<OP, FORM>(a, b, out, clk, slot, iters, reset);                                          \
  }
// -DWGMMA_FORM=<0..2> compiles one form alone (the probe's SASS check reads only the form it timed).
#if !defined(WGMMA_FORM)
#define WGMMA_FORMS(NAME, OP)           \
  WGMMA_KERNEL(NAME##_ss_nosw, OP, 0)   \
  WGMMA_KERNEL(NAME##_ss_sw128, OP, 1)  \
  WGMMA_KERNEL(NAME##_rs_sw128, OP, 2)
#elif WGMMA_FORM == 0
#define WGMMA_FORMS(NAME, OP) WGMMA_KERNEL(NAME##_ss_nosw, OP, 0)
#elif WGMMA_FORM == 1
#define WGMMA_FORMS(NAME, OP) WGMMA_KERNEL(NAME##_ss_sw128, OP, 1)
#else
#define WGMMA_FORMS(NAME, OP) WGMMA_KERNEL(NAME##_rs_sw128, OP, 2)
#endif

#if !defined(WGMMA_ONLY) || WGMMA_ONLY == 1
WGMMA_FORMS(wgmma_fp16_f32acc, F16F32)
#endif
#if !defined(WGMMA_ONLY) || WGMMA_ONLY == 2
WGMMA_FORMS(wgmma_fp16_f16acc, F16F16)
#endif
#if !defined(WGMMA_ONLY) || WGMMA_ONLY == 3
WGMMA_FORMS(wgmma_bf16_f32acc, BF16F32)
#endif
#if !defined(WGMMA_ONLY) || WGMMA_ONLY == 4
WGMMA_FORMS(wgmma_tf32_f32acc, TF32F32)
#endif
#if !defined(WGMMA_ONLY) || WGMMA_ONLY == 5
WGMMA_FORMS(wgmma_fp8e4m3_f32acc, E4M3F32)
#endif
#if !defined(WGMMA_ONLY) || WGMMA_ONLY == 6
WGMMA_FORMS(wgmma_fp8e5m2_f32acc, E5M2F32)
#endif
#if !defined(WGMMA_ONLY) || WGMMA_ONLY == 7
WGMMA_FORMS(wgmma_int8_s32acc, S8S32)
#endif
