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

// L2 read bandwidth, "a region per block": the working set is nregions regions of region_vecs 16-byte vectors
// (whole rows of blockDim.x * U vectors: U independent loads in flight per thread, no index wrap, no dependent
// address math). Block v = (blockIdx.x + off) mod gridDim.x reads `iters` regions, the k-th being
// (v + k * gridDim.x) mod nregions. With nregions a multiple of gridDim.x (the host's private plan) every block
// owns its regions: no two requests in flight anywhere ask for the same line, so every byte counted is a byte
// the L2 served (requests for a line another SM is already fetching are merged on the way, and a pattern that
// makes them reads far more than L2 delivers). `off` changes from launch to launch, so a block's regions move
// to another SM each launch and over the launches every SM reads the whole set: data that all SMs share.
// With a flat grid, iters = 1 and off = 0, block b reads region b mod nregions: the established cache
// benchmark's pattern, kept for comparison. LD: 0 ld.global.cg (L2 only), 1 ld.global.L1::no_allocate, 2 plain
// ld.global (may hit L1: comparison only). Every word of buf is 1: a block's sum is iters * region_vecs * 4.
// (Plain, not volatile, asm: ptxas may then issue all U loads before the first add.)
template <int LD>
__device__ __forceinline__ uint4 ld_l2(const uint4* p) {
    uint4 v;
    if constexpr (LD == 0) {
        asm("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    } else if constexpr (LD == 1) {
        asm("ld.global.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
            : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    } else {
        asm("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    }
    return v;
}

template <int U, int LD>
__global__ void __launch_bounds__(U >= 16 ? 512 : 1024) l2_region(
        const uint4* __restrict__ buf, unsigned long long region_vecs, unsigned long long nregions, unsigned iters,
        unsigned off, unsigned* __restrict__ out) {
    const unsigned long long nblocks = gridDim.x;
    const unsigned long long v = (blockIdx.x + (unsigned long long)off) % nblocks;
    const unsigned long long row = (unsigned long long)blockDim.x * U;
    const unsigned long long rows = region_vecs / row;
    unsigned a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (unsigned k = 0; k < iters; ++k) {
        const unsigned long long r = (v + k * nblocks) % nregions;
        for (unsigned long long i = 0; i < rows; ++i) {
            const uint4* p = buf + r * region_vecs + i * row + threadIdx.x;
            uint4 x[U];
#pragma unroll
            for (int u = 0; u < U; ++u) x[u] = ld_l2<LD>(p + u * blockDim.x);
#pragma unroll
            for (int u = 0; u < U; ++u) { a0 += x[u].x; a1 += x[u].y; a2 += x[u].z; a3 += x[u].w; }
        }
    }
    const unsigned s = block_sum<unsigned>(a0 + a1 + a2 + a3);
    if (threadIdx.x == 0) out[blockIdx.x] = s;
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
    const long long c0 = clock_cycles();
    const unsigned long long t0 = globaltimer_ns();
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
        const long long c1 = clock_cycles();
        const unsigned long long t1 = globaltimer_ns();
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
    const long long c0 = clock_cycles();
    const unsigned long long t0 = globaltimer_ns();
#pragma unroll 4
    for (long long i = 0; i < steps; ++i) p = ld_ptr<CG>(p);
    sink = p;
    const long long c1 = clock_cycles();
    const unsigned long long t1 = globaltimer_ns();
    out[slot * 4 + 0] = p;
    out[slot * 4 + 1] = (unsigned long long)(c1 - c0);
    out[slot * 4 + 2] = t1 - t0;
}

// Shared-memory load latency: one thread follows a ring of 32-bit shared addresses (ring[i] = the address of
// ring[(i + stride) % n]) with ld.shared.u32 p, [p]: a dependent chain with no address arithmetic.
// out[0..3] = final address, clock64 cycles, globaltimer ns, the ring's start address.
extern "C" __global__ void smem_chase(unsigned n, unsigned stride, unsigned long long warm, unsigned long long steps,
                                      unsigned long long* __restrict__ out) {
    extern __shared__ __align__(16) unsigned ring[];
    const unsigned base = (unsigned)__cvta_generic_to_shared(ring);
    for (unsigned i = threadIdx.x; i < n; i += blockDim.x) ring[i] = base + 4u * ((i + stride) % n);
    __syncthreads();
    if (threadIdx.x != 0) return;
    unsigned p = base;
    for (unsigned long long i = 0; i < warm; ++i) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(p) :: "memory");
    const long long c0 = clock_cycles();
    const unsigned long long t0 = globaltimer_ns();
#pragma unroll 16
    for (unsigned long long i = 0; i < steps; ++i) asm volatile("ld.shared.u32 %0, [%0];" : "+r"(p) :: "memory");
    out[0] = p;  // waits for the last load, so the clock stops after it
    const long long c1 = clock_cycles();
    const unsigned long long t1 = globaltimer_ns();
    out[1] = (unsigned long long)(c1 - c0);
    out[2] = t1 - t0;
    out[3] = base;
}
