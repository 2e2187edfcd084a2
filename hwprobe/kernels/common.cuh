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
