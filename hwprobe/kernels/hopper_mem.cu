// Hopper's own memory paths (sm_90): distributed shared memory (SM-to-SM inside a
// thread-block cluster: latency and bandwidth by cluster size) and the bulk copy engine (TMA, cp.async.bulk)
// loading global memory into shared memory, by tile size.
//
// Latency kernel: one thread follows a ring of 32-bit shared addresses (each word holds the address of the
// next, a stride coprime with the ring length, so every step is a dependent load with no address arithmetic).
// out[k*4 + 0..3] = final address, clock64 cycles, globaltimer ns, start address of chase k.

#include "common.cuh"

typedef unsigned int u32;
typedef unsigned long long u64;

#define DEV static __device__ __forceinline__

DEV u32 smem_addr(const void* p) { return (u32)__cvta_generic_to_shared(p); }

DEV u32 cluster_rank() {
    u32 r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

DEV u32 map_to_rank(u32 addr, u32 rank) {  // a shared::cta address -> the same offset in CTA `rank` of the cluster
    u32 out;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(out) : "r"(addr), "r"(rank));
    return out;
}

DEV void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// Distributed shared memory latency, cluster of 2: each CTA fills its ring with shared::cluster addresses (mapa
// to its own rank) and a second ring with plain shared::cta addresses. CTA 0's thread 0 then times three chases:
// [0] its own ring through ld.shared::cta, [1] its own ring through ld.shared::cluster, [2] CTA 1's ring
// through ld.shared::cluster (SM to SM). out[k*4 + 0..3] as above. Both CTAs wait at a cluster barrier at the
// end, so CTA 1's shared memory stays alive while CTA 0 reads it.
extern "C" __global__ void __cluster_dims__(2, 1, 1) dsm_chase(u32 n, u32 stride, u64 warm, u64 steps,
                                                               u64* __restrict__ out) {
    extern __shared__ __align__(16) u32 dyn[];
    u32* ring_cl = dyn;          // shared::cluster addresses
    u32* ring_cta = dyn + n;     // shared::cta addresses
    const u32 rank = cluster_rank();
    const u32 base_cl = smem_addr(ring_cl), base_cta = smem_addr(ring_cta);
    for (u32 i = threadIdx.x; i < n; i += blockDim.x) {
        const u32 nxt = 4u * ((i + stride) % n);
        ring_cl[i] = map_to_rank(base_cl + nxt, rank);
        ring_cta[i] = base_cta + nxt;
    }
    cluster_sync();
    if (rank == 0 && threadIdx.x == 0) {
        for (int k = 0; k < 3; ++k) {
            u32 p = k == 0 ? base_cta : map_to_rank(base_cl, k == 1 ? 0u : 1u);
            const u32 start = p;
            if (k == 0) {
                for (u64 i = 0; i < warm; ++i) asm volatile("ld.shared::cta.u32 %0, [%0];" : "+r"(p) :: "memory");
            } else {
                for (u64 i = 0; i < warm; ++i) asm volatile("ld.shared::cluster.u32 %0, [%0];" : "+r"(p) :: "memory");
            }
            const u64 c0 = (u64)clock_cycles(), t0 = globaltimer_ns();
            if (k == 0) {
#pragma unroll 16
                for (u64 i = 0; i < steps; ++i) asm volatile("ld.shared::cta.u32 %0, [%0];" : "+r"(p) :: "memory");
            } else {
#pragma unroll 16
                for (u64 i = 0; i < steps; ++i)
                    asm volatile("ld.shared::cluster.u32 %0, [%0];" : "+r"(p) :: "memory");
            }
            out[k * 4 + 0] = p;
            const u64 c1 = (u64)clock_cycles(), t1 = globaltimer_ns();
            out[k * 4 + 1] = c1 - c0;
            out[k * 4 + 2] = t1 - t0;
            out[k * 4 + 3] = start;
        }
    }
    cluster_sync();
}

// Distributed shared memory bandwidth, cluster of CS CTAs: every CTA fills `vecs` 16-byte vectors of its shared
// memory with (rank + 1) in every word, then all its threads read the whole buffer of the next CTA in the cluster
// (rank + 1 mod CS) `iters` times with ld.shared::cluster.v4 (4 loads in flight per thread). out[global thread]
// = the thread's sum, which the host checks: iters * (vecs / blockDim.x) * 4 * (peer + 1) (mod 2^32).
// t[block*4 + 0..3] = the block's clock64 and globaltimer at the start and end of its loop; smid[block].
template <int CS>
__global__ void __cluster_dims__(CS, 1, 1) __launch_bounds__(1024) dsm_read(u32 vecs, u64 iters, u32* __restrict__ out,
                                                                             u64* __restrict__ t, u32* __restrict__ smid) {
    extern __shared__ __align__(16) uint4 buf[];
    const u32 rank = cluster_rank();
    const u32 v0 = rank + 1;
    for (u32 i = threadIdx.x; i < vecs; i += blockDim.x) buf[i] = make_uint4(v0, v0, v0, v0);
    cluster_sync();
    const u32 peer = (rank + 1) % CS;
    const u32 base = map_to_rank(smem_addr(buf), peer) + 16u * threadIdx.x;
    const u32 per = vecs / blockDim.x;           // vectors per thread per pass (a multiple of 4)
    const u32 step = 16u * blockDim.x;
    u32 a0 = 0, a1 = 0;
    __syncthreads();
    u64 c0 = 0, t0 = 0;
    if (threadIdx.x == 0) { c0 = (u64)clock_cycles(); t0 = globaltimer_ns(); }
    for (u64 it = 0; it < iters; ++it) {
        for (u32 j = 0; j < per; j += 4) {
            u32 x[16];
#pragma unroll
            for (int u = 0; u < 4; ++u)
                asm volatile("ld.shared::cluster.v4.u32 {%0, %1, %2, %3}, [%4];"
                             : "=r"(x[4 * u]), "=r"(x[4 * u + 1]), "=r"(x[4 * u + 2]), "=r"(x[4 * u + 3])
                             : "r"(base + (j + u) * step) : "memory");
#pragma unroll
            for (int u = 0; u < 16; u += 2) { a0 += x[u]; a1 += x[u + 1]; }
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        const u64 c1 = (u64)clock_cycles(), t1 = globaltimer_ns();
        t[blockIdx.x * 4 + 0] = c0;
        t[blockIdx.x * 4 + 1] = c1;
        t[blockIdx.x * 4 + 2] = t0;
        t[blockIdx.x * 4 + 3] = t1;
        u32 s;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
        smid[blockIdx.x] = s;
    }
    out[blockIdx.x * (u64)blockDim.x + threadIdx.x] = a0 + a1;
    cluster_sync();   // no CTA leaves while a peer may still read its shared memory
}

// ---------------------------------------------------------------------------------------------------------------
// TMA (the bulk copy engine): block b loads tiles b*per_block .. (b+1)*per_block - 1 (mod ntiles, so a small
// source is re-read from L2) of `tile` bytes each from global into shared memory with cp.async.bulk, `stages`
// tiles in flight, each completing on its own mbarrier. The whole block then sums the tile (every word is 1 in
// the source, so the block's sum counts the words that arrived) and thread 0 refills the stage. out[block] =
// sum; t[block*4 + 0..3] = clock64 and globaltimer at the start and end of the block's loop.
#define TMA_MAX_STAGES 16

extern "C" __global__ void __launch_bounds__(1024) tma_load(const char* __restrict__ src, u64 ntiles, u64 per_block,
                                                             u32 tile, int stages, u32* __restrict__ out,
                                                             u64* __restrict__ t) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) unsigned char sbuf[];
    __shared__ __align__(8) u64 bar[TMA_MAX_STAGES];
    const u32 buf0 = smem_addr(sbuf), bar0 = smem_addr(bar);
    const bool leader = threadIdx.x == 0;
    const u64 first = blockIdx.x * per_block;
    if (leader) {
        for (int i = 0; i < stages; ++i) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar0 + 8 * i));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    auto load = [&](u64 i) {
        const u32 st = (u32)(i % stages), b = bar0 + 8 * st;
        const char* g = src + ((first + i) % ntiles) * tile;
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(b), "r"(tile) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(buf0 + st * tile), "l"(g), "r"(tile), "r"(b) : "memory");
    };
    u64 c0 = 0, t0 = 0;
    if (leader) {
        c0 = (u64)clock_cycles();
        t0 = globaltimer_ns();
        for (u64 i = 0; i < per_block && i < (u64)stages; ++i) load(i);
    }
    u32 acc = 0;
    for (u64 i = 0; i < per_block; ++i) {
        const u32 st = (u32)(i % stages);
        const u32 parity = (u32)((i / stages) & 1);
        mbarrier_wait(bar0 + 8 * st, parity);
        const uint4* v = reinterpret_cast<const uint4*>(sbuf + (size_t)st * tile);
        for (u32 j = threadIdx.x; j < tile / 16; j += blockDim.x) {
            const uint4 x = v[j];
            acc += x.x + x.y + x.z + x.w;
        }
        __syncthreads();   // every thread has read this stage: the copy engine may refill it
        if (leader && i + stages < per_block) load(i + stages);
    }
    __shared__ u32 red[32];
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = acc;
    __syncthreads();
    if (leader) {
        const u64 c1 = (u64)clock_cycles(), t1 = globaltimer_ns();
        u32 s = 0;
        for (u32 w = 0; w < (blockDim.x + 31) / 32; ++w) s += red[w];
        out[blockIdx.x] = s;
        t[blockIdx.x * 4 + 0] = c0;
        t[blockIdx.x * 4 + 1] = c1;
        t[blockIdx.x * 4 + 2] = t0;
        t[blockIdx.x * 4 + 3] = t1;
    }
#else
    __trap();
#endif
}
