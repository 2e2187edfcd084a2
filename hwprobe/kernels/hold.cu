// Stream hold (hwprobe.timing.hold): one thread spins until the host writes a nonzero `flag` (mapped pinned host
// memory), so the stream reaches what the host queued after it only once the host says all of it is queued.
// After `timeout_ns` of globaltimer it gives up and sets *timed_out: a host that never releases it (a call that
// synchronizes the held stream) costs that long, never a hang.

#include "common.cuh"

extern "C" __global__ void hwp_hold(const volatile int* flag, long long timeout_ns, int* timed_out) {
  const unsigned long long t0 = globaltimer_ns<false>();
  while (*flag == 0) {
    if ((long long)(globaltimer_ns<false>() - t0) > timeout_ns) {
      *timed_out = 1;
      return;
    }
  }
}
