// Device helpers shared by the .cu files here; hwprobe.kernels.source() inlines `#include "common.cuh"`
// (NVRTC then needs no include path).
#pragma once

// Sum over the block; the result is valid in thread 0. Works for any blockDim.x up to 1024.
template <typename T>
__device__ __forceinline__ T block_sum(T s) {
    __shared__ T warp_sums[32];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = s;
    __syncthreads();
    s = T(0);
    if (warp == 0) {
        const int nw = (blockDim.x + 31) >> 5;
        s = lane < nw ? warp_sums[lane] : T(0);
        for (int o = 16; o > 0; o >>= 1) s += __shfl_down_sync(0xffffffffu, s, o);
    }
    return s;
}

// Timers: %globaltimer in nanoseconds, clock64 in the SM's cycles. FENCED (the default) adds a "memory" clobber, so
// the read is an ordering point the compiler keeps loads and stores on their side of (the memory kernels time single
// loads between two reads); the compute kernels' stamps and the clock sentinel read them unfenced.
template <bool FENCED = true>
__device__ __forceinline__ unsigned long long globaltimer_ns() {
    unsigned long long t;
    if constexpr (FENCED) asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) :: "memory");
    else asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

template <bool FENCED = true>
__device__ __forceinline__ long long clock_cycles() {
    long long c;
    if constexpr (FENCED) asm volatile("mov.u64 %0, %%clock64;" : "=l"(c) :: "memory");
    else asm volatile("mov.u64 %0, %%clock64;" : "=l"(c));
    return c;
}

// Wait until the mbarrier at shared address `bar` completes the phase of parity `parity`.
__device__ __forceinline__ void mbarrier_wait(unsigned bar, unsigned parity) {
    asm volatile("{\n\t.reg .pred done;\n"
                 "wait_%=:\n\t"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
                 "@!done bra wait_%=;\n\t}"
                 :: "r"(bar), "r"(parity) : "memory");
}
