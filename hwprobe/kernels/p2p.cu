// Interconnect kernels: copies that read from or write to a peer GPU's memory, a pointer chase into peer
// memory, a two-GPU flag ping-pong, and the deterministic fill/check of buffers (peer copies and NCCL
// collectives). Compiled with NVRTC through hwprobe.kernels.load.

#include "common.cuh"

// ---- copies ------------------------------------------------------------------------------------------------
// dst[i] = src[i] for n 16-byte vectors, grid-stride, U independent vectors in flight per thread. Launched on
// the GPU that issues it: src in the peer's memory = "SM read", dst in the peer's memory = "SM write".
template <int U>
__global__ void p2p_copy(const int4* __restrict__ src, int4* __restrict__ dst, unsigned long long n) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + (U - 1) * stride < n; i += U * stride) {
        int4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = src[i + u * stride];
#pragma unroll
        for (int u = 0; u < U; ++u) dst[i + u * stride] = v[u];
    }
    for (; i < n; i += stride) dst[i] = src[i];
}

// ---- fill / check of the peer-copy pattern: word i of a buffer from GPU g is i * 2654435761 + seed(g) ----------
extern "C" __global__ void pattern_fill(unsigned int* x, unsigned long long n, unsigned int seed) {
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        x[i] = (unsigned int)i * 2654435761u + seed;
}

extern "C" __global__ void pattern_check(const unsigned int* x, unsigned long long n, unsigned int seed,
                                         unsigned long long* wrong) {
    unsigned long long bad = 0;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        bad += x[i] != (unsigned int)i * 2654435761u + seed;
    if (bad) atomicAdd(wrong, bad);
}

// ---- pointer chase: one thread follows next[] (u32 word indices) for `steps` dependent loads --------------------
// ld.global.cv: every load goes to the memory that holds the line (no stale L1 copy), here over the link.
// state[0] = the word to start from, and on return the word reached (the next launch goes on from there, so a
// long cycle is never revisited while it is timed); state[1] += globaltimer ns of the loop.
extern "C" __global__ void p2p_chase(const unsigned int* next, int steps, unsigned long long* state) {
    unsigned int j = (unsigned int)state[0];
    const unsigned long long t0 = globaltimer_ns();
    for (int s = 0; s < steps; ++s) j = __ldcv(next + j);
    const unsigned long long t1 = globaltimer_ns();
    state[0] = j;
    state[1] += t1 - t0;
}

// ---- ping-pong: two single-thread kernels, one per GPU, bounce a counter through each other's memory -----------
// Each spins on its own flag (local memory) and stores the next value into the peer's flag (a remote store).
// The initiator sends odd values and waits for the even reply. out[0] = ns for all round trips (initiator),
// out[1] = 1 if a wait ran past timeout_ns (the kernel gives up rather than hang), out[2] = last value seen.
extern "C" __global__ void p2p_pingpong(volatile unsigned int* mine, volatile unsigned int* peer, int iters,
                                        int initiator, unsigned long long timeout_ns, unsigned long long* out) {
    const unsigned long long t0 = globaltimer_ns();
    unsigned int seen = 0;
    int timed_out = 0;
    for (int k = 0; k < iters && !timed_out; ++k) {
        const unsigned int ping = 2u * k + 1u, pong = 2u * k + 2u;
        if (initiator) {
            *peer = ping;
            __threadfence_system();
        }
        const unsigned int want = initiator ? pong : ping;
        while ((seen = *mine) != want) {
            if (globaltimer_ns() - t0 > timeout_ns) { timed_out = 1; break; }
        }
        if (!initiator && !timed_out) {
            *peer = pong;
            __threadfence_system();
        }
    }
    out[0] = globaltimer_ns() - t0;
    out[1] = timed_out;
    out[2] = seen;
}

// ---- NCCL collectives: deterministic inputs and the count of wrong results (see probes/interconnect/verify.py) --
// v(q, i) = ((131 q + 7 i) mod 509) + 1, exact in float32 and in sums over up to 32768 ranks.
__device__ __forceinline__ float coll_v(long long q, long long i) {
    return (float)(((131LL * q + 7LL * i) % 509LL) + 1LL);
}

extern "C" __global__ void coll_fill(float* x, unsigned long long n, long long rank) {
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        x[i] = coll_v(rank, (long long)i);
}

extern "C" __global__ void fill_f32(float* x, unsigned long long n, float v) {
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        x[i] = v;
}

__device__ __forceinline__ float coll_sum(long long nranks, long long i, int avg) {
    double s = 0.0;
    for (long long q = 0; q < nranks; ++q) s += (double)coll_v(q, i);
    return avg ? (float)(s / (double)nranks) : (float)s;
}

// op: 0 all_reduce, 1 all_gather, 2 reduce_scatter, 3 broadcast, 4 reduce (root 0), 5 alltoall, 6 sendrecv.
// c = NCCL's count (per-rank chunk for the split ops). Averages pass within 2 ulp, everything else exactly.
// wrong[0] += wrong elements; wrong[1] = min(index of a wrong element).
extern "C" __global__ void coll_check(const float* y, unsigned long long n, int op, long long rank,
                                      long long nranks, long long c, int avg, unsigned long long* wrong) {
    unsigned long long bad = 0, first = ~0ULL;
    for (unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        const long long j = (long long)i;
        float e;
        switch (op) {
            case 0: case 4: e = coll_sum(nranks, j, avg); break;
            case 1: e = coll_v(j / c, j % c); break;
            case 2: e = coll_sum(nranks, rank * c + j, avg); break;
            case 3: e = coll_v(0, j); break;
            case 5: e = coll_v(j / c, rank * c + j % c); break;
            default: e = coll_v((rank - 1 + nranks) % nranks, j); break;
        }
        bool ok;
        if (avg && (op == 0 || op == 2 || op == 4)) {
            const float ae = fabsf(e);
            const float ulp = nextafterf(ae, __int_as_float(0x7f800000)) - ae;
            ok = fabsf(y[i] - e) <= 2.0f * ulp;
        } else {
            ok = y[i] == e;
        }
        if (!ok) { ++bad; if (i < first) first = i; }
    }
    if (bad) { atomicAdd(wrong, bad); atomicMin(wrong + 1, first); }
}
