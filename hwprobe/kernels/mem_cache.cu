// Cache-level kernels: read bandwidth against working-set size, shared-memory bandwidth, pointer-chase latency.

// 16-byte loads: CG=0 is a plain load (cached in L1 by default on sm_70+), CG=1 goes to L2 only
// (ld.global.cg). The addresses depend on runtime strides, so the compiler cannot merge repeated reads.
template <int CG>
__device__ __forceinline__ uint4 ld16(const uint4* p) {
    if constexpr (CG == 0) return *p;
    else return __ldcg(p);
}

#include "common.cuh"

// Reads a working set of nvec 16-byte vectors over and over: 4 * iters loads per thread.
// per_block=1: block b reads its own set at buf + b * region_vecs (the set per SM is what is swept);
// per_block=0: every thread of the grid reads the one shared set (device scope, the L2 range).
// Thread g starts at g mod nvec and steps by (threads in scope) mod nvec, wrapping with one subtraction,
// so consecutive threads read consecutive vectors (coalesced) and every vector of the set is read.
template <int CG>
__global__ void __launch_bounds__(1024) sweep_read(const uint4* __restrict__ buf, unsigned nvec,
                                                   unsigned long long region_vecs, int per_block,
                                                   unsigned long long iters, unsigned* __restrict__ out) {
    const uint4* base = per_block ? buf + blockIdx.x * region_vecs : buf;
    const unsigned long long g = per_block ? threadIdx.x : blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;
    const unsigned long long nthreads = per_block ? blockDim.x : (unsigned long long)gridDim.x * blockDim.x;
    unsigned idx = (unsigned)(g % nvec);
    const unsigned step = (unsigned)(nthreads % nvec);
    unsigned a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (unsigned long long k = 0; k < iters; ++k) {
#pragma unroll
        for (int u = 0; u < 4; ++u) {
            const uint4 v = ld16<CG>(base + idx);
            a0 += v.x; a1 += v.y; a2 += v.z; a3 += v.w;
            idx += step;
            idx = idx >= nvec ? idx - nvec : idx;
        }
    }
    const unsigned s = block_sum<unsigned>(a0 + a1 + a2 + a3);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
}

__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t) :: "memory");
    return t;
}

__device__ __forceinline__ long long cycles() {
    long long c;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(c) :: "memory");
    return c;
}

// Shared-memory read bandwidth: 128-bit conflict-free loads (a warp reads 512 contiguous bytes).
// Word w of the block's 32 KiB holds w; out[thread] = iters * sum of the words the thread reads (mod 2^32).
// Block 0's thread 0 writes the SM cycles and nanoseconds of its loop to clk[0..1]: the clock the launch ran at.
#define SMEM_BLOCK 256
#define SMEM_VECS_PER_THREAD 8
extern "C" __global__ void __launch_bounds__(SMEM_BLOCK) smem_read(unsigned long long iters,
                                                                   unsigned* __restrict__ out,
                                                                   unsigned long long* __restrict__ clk) {
    __shared__ uint4 s[SMEM_BLOCK * SMEM_VECS_PER_THREAD];
    for (int j = 0; j < SMEM_VECS_PER_THREAD; ++j) {
        const unsigned v = threadIdx.x + j * SMEM_BLOCK;
        s[v] = make_uint4(4 * v, 4 * v + 1, 4 * v + 2, 4 * v + 3);
    }
    __syncthreads();
    const unsigned addr = (unsigned)__cvta_generic_to_shared(s) + threadIdx.x * 16;
    unsigned a0 = 0, a1 = 0;
    const long long c0 = cycles();
    const unsigned long long t0 = global_ns();
    for (unsigned long long k = 0; k < iters; ++k) {
#pragma unroll
        for (int j = 0; j < SMEM_VECS_PER_THREAD; ++j) {
            unsigned x, y, z, w;
            // ld.volatile: ptxas must issue every load (a plain ld.shared at a loop-invariant address was
            // merged across the unrolled iterations: 8 LDS.128 per 4 iterations, 4x too few bytes moved).
            asm volatile("ld.volatile.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                         : "=r"(x), "=r"(y), "=r"(z), "=r"(w) : "r"(addr + j * SMEM_BLOCK * 16) : "memory");
            a0 += x + y;
            a1 += z + w;
        }
    }
    out[blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x] = a0 + a1;
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        const long long c1 = cycles();
        const unsigned long long t1 = global_ns();
        clk[0] = (unsigned long long)(c1 - c0);
        clk[1] = t1 - t0;
    }
}

// Pointer chase: each slot holds the address of the next one (a random cycle built on the host).
// One thread chases; `warm` untimed steps first (they fill L1/L2 for the cache points), then `steps` timed
// ones. out[slot*4 + 0..2] = final pointer, clock64 cycles, globaltimer nanoseconds of the timed part.
template <int CG>
__device__ __forceinline__ unsigned long long ld_ptr(unsigned long long p) {
    // Global-space loads (a pointer made from an integer would become a slower generic LD).
    unsigned long long q;
    if constexpr (CG == 0) asm volatile("ld.global.u64 %0, [%1];" : "=l"(q) : "l"(p));
    else asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(q) : "l"(p));
    return q;
}

template <int CG>
__global__ void chase(unsigned long long p, long long warm, long long steps, unsigned long long* __restrict__ out,
                      int slot) {
    __shared__ volatile unsigned long long sink;
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    for (long long i = 0; i < warm; ++i) p = ld_ptr<CG>(p);
    sink = p;  // the store waits for the last load, so the clock starts after it
    const long long c0 = cycles();
    const unsigned long long t0 = global_ns();
#pragma unroll 4
    for (long long i = 0; i < steps; ++i) p = ld_ptr<CG>(p);
    sink = p;
    const long long c1 = cycles();
    const unsigned long long t1 = global_ns();
    out[slot * 4 + 0] = p;
    out[slot * 4 + 1] = (unsigned long long)(c1 - c0);
    out[slot * 4 + 2] = t1 - t0;
}
