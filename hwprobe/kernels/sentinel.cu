// Clock sentinel: the SM clock an SM runs at, from clock64 over %globaltimer, with nothing else in flight.
//
// One block of 32 threads per SM (the host launches one per SM; %smid says where each one ran). Thread 0
// waits for a globaltimer tick, reads clock64, spins until `spin_ns` of globaltimer have passed (ending on a
// tick too), reads clock64 again. Both ends sit on a tick edge, so the interval is exact to the timer's
// resolution however coarsely it ticks, and cycles / nanoseconds is the SM clock over that interval.
// out[block * 4 + i]: cycles, nanoseconds, %smid, start ns. Library kernels cannot time their own clock;
// the probes run this right before and right after a library's timed window (hwprobe.timing.sentinel).

#include "common.cuh"

typedef unsigned long long u64;

extern "C" __global__ void hwp_clock_sentinel(u64* __restrict__ out, long long spin_ns) {
  if (threadIdx.x != 0) return;
  unsigned smid;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
  const u64 prev = globaltimer_ns<false>();
  u64 g0 = prev;
  while (g0 == prev) g0 = globaltimer_ns<false>();          // start on a tick edge
  const long long c0 = clock_cycles<false>();
  u64 g1 = g0;
  while ((long long)(g1 - g0) < spin_ns) g1 = globaltimer_ns<false>();
  const long long c1 = clock_cycles<false>();
  out[blockIdx.x * 4 + 0] = (u64)(c1 - c0);
  out[blockIdx.x * 4 + 1] = g1 - g0;
  out[blockIdx.x * 4 + 2] = smid;
  out[blockIdx.x * 4 + 3] = g0;
}
