"""A second process that shares the GPU, for hwprobe's shared-GPU checks: `mem` holds a share of the free
memory, `sm` keeps every SM busy with a long-running kernel. Runs until killed.

    python tools/gpu_hog.py mem 0.9   |   python tools/gpu_hog.py sm
"""
import sys
import time

import cupy as cp

mode = sys.argv[1]
if mode == "mem":
    share = float(sys.argv[2]) if len(sys.argv) > 2 else 0.9
    free = cp.cuda.runtime.memGetInfo()[0]
    held = cp.empty(int(free * share), dtype=cp.uint8)
    held[:: 1 << 20] = 1
    print(f"holding {held.nbytes / 2**30:.1f} GiB of {free / 2**30:.1f} GiB free", flush=True)
    while True:
        time.sleep(1)
spin = cp.RawKernel(r'''
extern "C" __global__ void spin(float* x, long long n) {
    float a = x[threadIdx.x];
    for (long long i = 0; i < n; ++i) a = a * 0.9999f + 0.0001f;
    x[threadIdx.x] = a;
}''', "spin")
x = cp.ones(1024, dtype=cp.float32)
sms = cp.cuda.Device().attributes["MultiProcessorCount"]
print(f"keeping {sms} SMs busy", flush=True)
while True:
    spin((sms * 8,), (1024,), (x, cp.int64(2_000_000)))
    cp.cuda.Stream.null.synchronize()
