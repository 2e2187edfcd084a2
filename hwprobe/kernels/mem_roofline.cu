// Roofline kernels: arithmetic intensity set at run time.
//
// Each thread reads 16-byte vectors of a large array (grid-stride, 4 vectors in flight), runs every lane
// through m dependent multiply-adds x = x * ca + cb (the 4 vectors give 8-16 independent chains per thread),
// then adds the lane into an accumulator, so no load and no FMA is dead. FLOPs per 16 B vector:
// lanes * (m * flops_per_fma + flops_per_add); the host computes the exact intensity (hwprobe.probes.memory.plan).
// One value per block goes to `out` (the host sums them and checks against a host model of the chain).
#include <cuda_fp16.h>

#define ROOF_U 4

#include "common.cuh"

// The array has a multiple of (grid threads * ROOF_U) vectors (the host sizes it), so there is no tail.
#define ROOF_LOOP_BEGIN(VEC)                                                                          \
    const unsigned long long T = (unsigned long long)gridDim.x * blockDim.x;                          \
    const unsigned long long g = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;           \
    for (unsigned long long i = g; i < nvec; i += T * ROOF_U) {                                       \
        VEC v[ROOF_U];                                                                                \
        _Pragma("unroll") for (int u = 0; u < ROOF_U; ++u) v[u] = a[i + u * T];

#define ROOF_LOOP_END }

extern "C" __global__ void __launch_bounds__(256) roof_fp32(const float4* __restrict__ a, unsigned long long nvec,
                                                            int m, float ca, float cb, double* __restrict__ out) {
    float acc[4] = {0.f, 0.f, 0.f, 0.f};
    ROOF_LOOP_BEGIN(float4)
    float x[4 * ROOF_U];
#pragma unroll
    for (int u = 0; u < ROOF_U; ++u) {
        x[4 * u] = v[u].x; x[4 * u + 1] = v[u].y; x[4 * u + 2] = v[u].z; x[4 * u + 3] = v[u].w;
    }
#pragma unroll 8
    for (int j = 0; j < m; ++j) {
#pragma unroll
        for (int k = 0; k < 4 * ROOF_U; ++k) x[k] = fmaf(x[k], ca, cb);
    }
#pragma unroll
    for (int k = 0; k < 4 * ROOF_U; ++k) acc[k & 3] += x[k];
    ROOF_LOOP_END
    const double s = block_sum<double>((double)acc[0] + acc[1] + acc[2] + acc[3]);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}

extern "C" __global__ void __launch_bounds__(256) roof_fp64(const double2* __restrict__ a, unsigned long long nvec,
                                                            int m, double ca, double cb, double* __restrict__ out) {
    double acc[2] = {0.0, 0.0};
    ROOF_LOOP_BEGIN(double2)
    double x[2 * ROOF_U];
#pragma unroll
    for (int u = 0; u < ROOF_U; ++u) { x[2 * u] = v[u].x; x[2 * u + 1] = v[u].y; }
#pragma unroll 8
    for (int j = 0; j < m; ++j) {
#pragma unroll
        for (int k = 0; k < 2 * ROOF_U; ++k) x[k] = fma(x[k], ca, cb);
    }
#pragma unroll
    for (int k = 0; k < 2 * ROOF_U; ++k) acc[k & 1] += x[k];
    ROOF_LOOP_END
    const double s = block_sum<double>(acc[0] + acc[1]);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}

// half2 lanes: 4 per 16 B vector; each HFMA2 is 2 FMAs (4 FLOPs); the lanes are summed in fp32 (2 FADDs).
extern "C" __global__ void __launch_bounds__(256) roof_fp16x2(const uint4* __restrict__ a, unsigned long long nvec,
                                                              int m, float ca_f, float cb_f,
                                                              double* __restrict__ out) {
    const __half2 ca = __float2half2_rn(ca_f), cb = __float2half2_rn(cb_f);
    float acc[2] = {0.f, 0.f};
    ROOF_LOOP_BEGIN(uint4)
    __half2 x[4 * ROOF_U];
#pragma unroll
    for (int u = 0; u < ROOF_U; ++u) {
        const unsigned w[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
#pragma unroll
        for (int l = 0; l < 4; ++l) x[4 * u + l] = *reinterpret_cast<const __half2*>(&w[l]);
    }
#pragma unroll 8
    for (int j = 0; j < m; ++j) {
#pragma unroll
        for (int k = 0; k < 4 * ROOF_U; ++k) x[k] = __hfma2(x[k], ca, cb);
    }
#pragma unroll
    for (int k = 0; k < 4 * ROOF_U; ++k) {
        const float2 f = __half22float2(x[k]);
        acc[0] += f.x;
        acc[1] += f.y;
    }
    ROOF_LOOP_END
    const double s = block_sum<double>((double)acc[0] + acc[1]);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}

// int32: x = x * ca + cb (IMAD, mod 2^32); lanes are summed in 64 bits so the total is exact.
extern "C" __global__ void __launch_bounds__(256) roof_int32(const uint4* __restrict__ a, unsigned long long nvec,
                                                             int m, unsigned ca, unsigned cb,
                                                             double* __restrict__ out) {
    unsigned long long acc = 0;
    ROOF_LOOP_BEGIN(uint4)
    unsigned x[4 * ROOF_U];
#pragma unroll
    for (int u = 0; u < ROOF_U; ++u) {
        x[4 * u] = v[u].x; x[4 * u + 1] = v[u].y; x[4 * u + 2] = v[u].z; x[4 * u + 3] = v[u].w;
    }
#pragma unroll 8
    for (int j = 0; j < m; ++j) {
#pragma unroll
        for (int k = 0; k < 4 * ROOF_U; ++k) x[k] = x[k] * ca + cb;
    }
#pragma unroll
    for (int k = 0; k < 4 * ROOF_U; ++k) acc += x[k];
    ROOF_LOOP_END
    // The block total is written as the bits of a uint64 (exact mod 2^64); the host views `out` as uint64.
    __shared__ unsigned long long warp_sums[32];
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned long long s = 0;
        for (int w = 0; w < (int)((blockDim.x + 31) >> 5); ++w) s += warp_sums[w];
        reinterpret_cast<unsigned long long*>(out)[blockIdx.x] = s;
    }
}
