// Per-SM L2 hit latency, all SMs in one launch, taking turns so that only one SM loads at a time.
//
// One block of 32 threads per SM (the host asks for enough dynamic shared memory that two blocks cannot share an
// SM). Thread 0 takes a ticket (atomicAdd) when its block starts; ticket t waits until flag[t] is set, runs its
// chases, then sets flag[t + 1]. A block waits only for blocks that started before it, so the turns can never
// deadlock, whatever the scheduler does. Each waiting block polls its own 128-byte flag line with a nanosleep
// between polls, so the waiting SMs add almost no L2 traffic.
//
// In its turn, ticket t chases `steps` pointers from starts[t] (a stretch of a random cycle over 128-byte lines
// that no other turn visits), timing every load alone: c0 = clock64; p = ld.global.cg [p]; a shared-memory store
// of p (which waits for the load); c1 = clock64. lat[(t * 2 + pass) * steps + i] = c1 - c0 of step i, for pass 0
// (the first touch of the stretch) and pass 1 (the same lines again). A third pass over the stretch, untimed per
// step, gives the plain cycles of the dependent chain (plain[t]), so the host can remove the per-step timing
// overhead (pass 1 and pass 3 load the same lines in the same state). smid[t] = the SM, tail[t] = the final pointer (checked on the
// host), ns[t * 4 + 0..3] = globaltimer and clock64 at the start and end of the turn (the SM's clock).

#include "common.cuh"

typedef unsigned int u32;
typedef unsigned long long u64;

static __device__ __forceinline__ u64 ld_cg(u64 p) {
    u64 q;
    asm volatile("ld.global.cg.u64 %0, [%1];" : "=l"(q) : "l"(p) : "memory");
    return q;
}

#define FLAG_STRIDE 32   // words: one 128-byte line per flag

extern "C" __global__ void l2map(const u64* __restrict__ starts, int steps, u32* __restrict__ ticket,
                                 u32* flags, u32* __restrict__ smid, u32* __restrict__ lat,
                                 u64* __restrict__ plain, u64* __restrict__ tail, u64* __restrict__ ns) {
    extern __shared__ u32 slat[];          // 2 x steps entries (the rest of the dynamic allocation only reserves the SM)
    __shared__ volatile u64 sink;
    if (threadIdx.x != 0) return;
    const u32 t = atomicAdd(ticket, 1u);
    volatile u32* my = flags + (u64)t * FLAG_STRIDE;
    while (*my == 0) __nanosleep(500);
    __threadfence();
    u32 s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    const u64 t0 = globaltimer_ns(), k0 = (u64)clock_cycles();
    u64 p = 0;
    for (int pass = 0; pass < 2; ++pass) {   // pass 0: first touch of the stretch; pass 1: the same lines again
        p = starts[t];
        for (int i = 0; i < steps; ++i) {
            const u64 c0 = (u64)clock_cycles();
            p = ld_cg(p);
            sink = p;                          // waits for the load
            const u64 c1 = (u64)clock_cycles();
            slat[pass * steps + i] = (u32)(c1 - c0);
        }
    }
    const u64 end1 = p;
    p = starts[t];
    const u64 c0 = (u64)clock_cycles();
#pragma unroll 4
    for (int i = 0; i < steps; ++i) p = ld_cg(p);
    sink = p;
    const u64 c1 = (u64)clock_cycles();
    const u64 t1 = globaltimer_ns(), k1 = (u64)clock_cycles();
    for (int i = 0; i < 2 * steps; ++i) lat[(u64)t * 2 * steps + i] = slat[i];
    smid[t] = s;
    plain[t] = c1 - c0;
    tail[t] = end1 == p ? p : 0;           // both passes must end on the same line
    ns[4 * t] = t0;
    ns[4 * t + 1] = t1;
    ns[4 * t + 2] = k0;
    ns[4 * t + 3] = k1;
    __threadfence();
    *(volatile u32*)(flags + (u64)(t + 1) * FLAG_STRIDE) = 1u;
}
