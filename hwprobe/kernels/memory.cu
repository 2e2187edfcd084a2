// DRAM streaming kernels (BabelStream semantics) with 16-byte vector accesses.
//
// Arrays are double, accessed as double2 (16 B). Work is split in tiles of blockDim.x * U vectors, so each
// thread has U independent 16 B loads in flight before its stores. Tiles are handed out in chunks of `chunk`
// consecutive tiles: block b takes chunks b, b + gridDim.x, ... So chunk = 1 with a persistent grid is the
// classic grid-stride loop, chunk = 1 with one block per tile is a flat BabelStream-style launch, and
// chunk = ntiles / gridDim.x gives each block one large contiguous range (block-contiguous tiling, better DRAM
// page locality when reads and writes mix). The host makes the vector count a multiple of every tile size it
// launches, so no per-element bounds checks are needed.
// LH picks the load flavour, SH the store flavour (cache hints), so the probe can keep the fastest.

// Load hints: 0 plain (const __restrict__ lets ptxas use the read-only path), 1 streaming (.cs, evict first),
// 2 non-coherent, no L1 allocation, 256 B L2 prefetch, 3 no L1 allocation + an L2 evict-first cache policy
// (createpolicy, sm_80+) + 256 B L2 prefetch.
template <int LH>
__device__ __forceinline__ double2 ld16(const double2* __restrict__ p) {
    double2 v;
    if constexpr (LH == 0) {
        v = *p;
    } else if constexpr (LH == 1) {
        asm("ld.global.cs.v2.f64 {%0, %1}, [%2];" : "=d"(v.x), "=d"(v.y) : "l"(p));
    } else if constexpr (LH == 2) {
        asm("ld.global.nc.L1::no_allocate.L2::256B.v2.f64 {%0, %1}, [%2];" : "=d"(v.x), "=d"(v.y) : "l"(p));
    } else {
        asm("{\n\t.reg .b64 pol;\n\t"
            "createpolicy.fractional.L2::evict_first.b64 pol, 1.0;\n\t"
            "ld.global.L1::no_allocate.L2::cache_hint.L2::256B.v2.f64 {%0, %1}, [%2], pol;\n\t}"
            : "=d"(v.x), "=d"(v.y) : "l"(p));
    }
    return v;
}

// Store hints: 0 plain (write-back), 1 streaming (.cs, evict first), 2 no L1 allocation + an L2 evict-first
// cache policy (createpolicy, sm_80+).
template <int SH>
__device__ __forceinline__ void st16(double2* __restrict__ p, double2 v) {
    if constexpr (SH == 0) {
        *p = v;
    } else if constexpr (SH == 1) {
        asm volatile("st.global.cs.v2.f64 [%0], {%1, %2};" :: "l"(p), "d"(v.x), "d"(v.y) : "memory");
    } else {
        asm volatile("{\n\t.reg .b64 pol;\n\t"
                     "createpolicy.fractional.L2::evict_first.b64 pol, 1.0;\n\t"
                     "st.global.L1::no_allocate.L2::cache_hint.v2.f64 [%0], {%1, %2}, pol;\n\t}"
                     :: "l"(p), "d"(v.x), "d"(v.y) : "memory");
    }
}

// The chunked tile loop shared by every stream kernel (t = the tile index).
#define FOR_TILES(t)                                                                                     \
    for (unsigned long long c_ = blockIdx.x; c_ * chunk < ntiles; c_ += gridDim.x)                      \
        for (unsigned long long t = c_ * chunk, e_ = min(t + chunk, ntiles); t < e_; ++t)

#include "common.cuh"

// read: sum of every element; one partial per block (the host adds the partials).
template <int U, int LH>
__global__ void __launch_bounds__(1024) stream_read(const double2* __restrict__ a, unsigned long long ntiles,
                                                    unsigned long long chunk, double* __restrict__ partial) {
    double acc[U];
#pragma unroll
    for (int u = 0; u < U; ++u) acc[u] = 0.0;
    const unsigned long long tile = (unsigned long long)blockDim.x * U;
    FOR_TILES(t) {
        const double2* p = a + t * tile + threadIdx.x;
        double2 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = ld16<LH>(p + u * blockDim.x);
#pragma unroll
        for (int u = 0; u < U; ++u) acc[u] += v[u].x + v[u].y;
    }
    double s = 0.0;
#pragma unroll
    for (int u = 0; u < U; ++u) s += acc[u];
    s = block_sum<double>(s);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}

// write: fill with a constant.
template <int U, int SH>
__global__ void __launch_bounds__(1024) stream_write(double2* __restrict__ b, unsigned long long ntiles,
                                                     unsigned long long chunk, double x) {
    const unsigned long long tile = (unsigned long long)blockDim.x * U;
    const double2 v = make_double2(x, x);
    FOR_TILES(t) {
        double2* p = b + t * tile + threadIdx.x;
#pragma unroll
        for (int u = 0; u < U; ++u) st16<SH>(p + u * blockDim.x, v);
    }
}

// Where vector u of a thread lies in its tile. W = 0: block-interleaved (u * blockDim.x + thread; each load
// instruction of the block covers blockDim.x * 16 B). W = 1: warp-contiguous (each warp owns 32 * U vectors of
// the tile, so a warp reads a 512 * U byte burst, e.g. 4 KiB at U = 8, then writes one of the same size).
template <int U, int W>
__device__ __forceinline__ unsigned long long vec_at(unsigned long long tile_start, int u) {
    if constexpr (W == 0) return tile_start + threadIdx.x + (unsigned long long)u * blockDim.x;
    return tile_start + (threadIdx.x >> 5) * (32ull * U) + u * 32 + (threadIdx.x & 31);
}

// copy: dst = src
template <int U, int LH, int SH, int W>
__global__ void __launch_bounds__(1024) stream_copy(const double2* __restrict__ src, double2* __restrict__ dst,
                                                    unsigned long long ntiles, unsigned long long chunk) {
    const unsigned long long tile = (unsigned long long)blockDim.x * U;
    FOR_TILES(t) {
        double2 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = ld16<LH>(src + vec_at<U, W>(t * tile, u));
#pragma unroll
        for (int u = 0; u < U; ++u) st16<SH>(dst + vec_at<U, W>(t * tile, u), v[u]);
    }
}

// scale: dst = s * src
template <int U, int LH, int SH, int W>
__global__ void __launch_bounds__(1024) stream_scale(const double2* __restrict__ src, double2* __restrict__ dst,
                                                     unsigned long long ntiles, unsigned long long chunk,
                                                     double s) {
    const unsigned long long tile = (unsigned long long)blockDim.x * U;
    FOR_TILES(t) {
        double2 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = ld16<LH>(src + vec_at<U, W>(t * tile, u));
#pragma unroll
        for (int u = 0; u < U; ++u)
            st16<SH>(dst + vec_at<U, W>(t * tile, u), make_double2(s * v[u].x, s * v[u].y));
    }
}

// triad: dst = b + s * c
template <int U, int LH, int SH>
__global__ void __launch_bounds__(1024) stream_triad(const double2* __restrict__ b, const double2* __restrict__ c,
                                                     double2* __restrict__ dst, unsigned long long ntiles,
                                                     unsigned long long chunk, double s) {
    const unsigned long long tile = (unsigned long long)blockDim.x * U;
    FOR_TILES(t) {
        const unsigned long long off = t * tile + threadIdx.x;
        double2 vb[U], vc[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            vb[u] = ld16<LH>(b + off + u * blockDim.x);
            vc[u] = ld16<LH>(c + off + u * blockDim.x);
        }
#pragma unroll
        for (int u = 0; u < U; ++u)
            st16<SH>(dst + off + u * blockDim.x, make_double2(vb[u].x + s * vc[u].x, vb[u].y + s * vc[u].y));
    }
}

// Bulk-copy (TMA, sm_90+) copy and scale: the copy engine of each SM moves large contiguous chunks, so DRAM sees
// long read bursts and long write bursts instead of interleaved 16 B requests. Block b streams chunks
// [b * per_block, (b + 1) * per_block) through `stages` shared-memory buffers of `chunk_bytes` each:
// thread 0 issues cp.async.bulk global -> shared (completing on that stage's mbarrier), waits, issues
// cp.async.bulk shared -> global, and refills the previous stage once its store has read it (wait_group.read 1),
// so stages - 1 loads and one or two stores stay in flight. OP 1 (scale) multiplies each chunk in shared memory
// with the whole block before the store (fence.proxy.async makes the generic-proxy writes visible to the bulk
// store). The host makes the array a multiple of chunk_bytes; chunk_bytes is a multiple of 16.
#define TMA_MAX_STAGES 16

__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

template <int OP>
__global__ void __launch_bounds__(1024) tma_stream(const char* __restrict__ src, char* __restrict__ dst,
                                                   unsigned long long nchunks, unsigned long long per_block,
                                                   unsigned chunk_bytes, int stages, double s) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    extern __shared__ __align__(128) unsigned char buf[];
    __shared__ __align__(8) unsigned long long bar[TMA_MAX_STAGES];
    const unsigned long long first = blockIdx.x * per_block;
    if (first >= nchunks) return;  // the same for every thread of the block
    const unsigned long long n = min(per_block, nchunks - first);
    src += first * chunk_bytes;
    dst += first * chunk_bytes;
    const unsigned buf0 = smem_u32(buf), bar0 = smem_u32(bar);
    const bool leader = threadIdx.x == 0;
    if (leader) {
        for (int i = 0; i < stages; ++i) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar0 + 8 * i));
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    if (OP == 0 && !leader) return;
    auto load = [&](unsigned long long i) {
        const unsigned st = (unsigned)(i % stages), b = bar0 + 8 * st;
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(b), "r"(chunk_bytes) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(buf0 + st * chunk_bytes), "l"(src + i * chunk_bytes), "r"(chunk_bytes), "r"(b)
                     : "memory");
    };
    if (leader)
        for (unsigned long long i = 0; i < n && i < (unsigned long long)stages; ++i) load(i);
    for (unsigned long long i = 0; i < n; ++i) {
        const unsigned st = (unsigned)(i % stages);
        const unsigned parity = (unsigned)((i / stages) & 1);
        mbarrier_wait(bar0 + 8 * st, parity);
        if constexpr (OP == 1) {
            double2* v = reinterpret_cast<double2*>(buf + (size_t)st * chunk_bytes);
            for (unsigned j = threadIdx.x; j < chunk_bytes / 16; j += blockDim.x) {
                const double2 x = v[j];
                v[j] = make_double2(s * x.x, s * x.y);
            }
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            __syncthreads();
        }
        if (leader) {
            asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
                         :: "l"(dst + i * chunk_bytes), "r"(buf0 + st * chunk_bytes), "r"(chunk_bytes) : "memory");
            asm volatile("cp.async.bulk.commit_group;" ::: "memory");
            if (i >= 1 && i - 1 + stages < n) {  // refill the previous stage once its store has read it
                asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
                load(i - 1 + stages);
            }
        }
    }
    if (leader) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#else
    __trap();
#endif
}

// The check pattern: p(i) = (i mod 1024) * 0.5 + 1, exact in double, so sums and small multiples are exact.
__device__ __forceinline__ double pattern(unsigned long long i) { return (double)(i & 1023ull) * 0.5 + 1.0; }

extern "C" __global__ void init_pattern(double* __restrict__ x, unsigned long long n, double mult) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        x[i] = mult * pattern(i);
}

// Counts elements with x[i] != mult * p(i) + add (exact comparison: every expected value is exact).
extern "C" __global__ void count_mismatch(const double* __restrict__ x, unsigned long long n, double mult,
                                          double add, unsigned long long* __restrict__ bad) {
    unsigned long long local = 0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        local += x[i] != mult * pattern(i) + add;
    if (local) atomicAdd(bad, local);
}
