"""DRAM copy on the SMs: how far burst size, block size and the dst/src offset move the read+write rate.

Flat grids, warp-contiguous bursts (each warp reads 32*U*16 B, then writes them), U in 8..32, and the
destination placed at several offsets from the source in one allocation (DRAM bank/channel interplay).
Every variant's output is checked. Rate = 2 x bytes per array / time (read + write counted).
"""
import json
import os
import sys
import time

import cupy as cp
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from expkit import Poll  # noqa: E402

OUT = os.environ.get("OUT", "/tmp")
SRC = r"""
template <int U>
__global__ void __launch_bounds__(256) copy_wc(const double2* src, double2* dst) {
    const unsigned long long base = (unsigned long long)blockIdx.x * blockDim.x * U
                                    + (threadIdx.x >> 5) * (32ull * U) + (threadIdx.x & 31);
    double2 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = src[base + u * 32];
    asm volatile("" ::: "memory");   // every load issued before the first store
#pragma unroll
    for (int u = 0; u < U; ++u) dst[base + u * 32] = v[u];
}
// block-contiguous: the whole block's loads of one u are one contiguous blockDim*16 B run
template <int U>
__global__ void __launch_bounds__(256) copy_bc(const double2* src, double2* dst) {
    const unsigned long long base = (unsigned long long)blockIdx.x * blockDim.x * U + threadIdx.x;
    double2 v[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = src[base + u * blockDim.x];
    asm volatile("" ::: "memory");
#pragma unroll
    for (int u = 0; u < U; ++u) dst[base + u * blockDim.x] = v[u];
}
// two tiles per block, software pipelined: loads of tile 2 issued before stores of tile 1
template <int U>
__global__ void __launch_bounds__(256) copy_pipe(const double2* src, double2* dst,
                                                  unsigned long long tiles_per_block) {
    const unsigned long long tile = (unsigned long long)blockDim.x * U;
    unsigned long long t = (unsigned long long)blockIdx.x * tiles_per_block;
    const unsigned long long off = (threadIdx.x >> 5) * (32ull * U) + (threadIdx.x & 31);
    double2 v[U], w[U];
#pragma unroll
    for (int u = 0; u < U; ++u) v[u] = src[t * tile + off + u * 32];
    for (unsigned long long i = 1; i < tiles_per_block; ++i) {
#pragma unroll
        for (int u = 0; u < U; ++u) w[u] = src[(t + i) * tile + off + u * 32];
        asm volatile("" ::: "memory");
#pragma unroll
        for (int u = 0; u < U; ++u) dst[(t + i - 1) * tile + off + u * 32] = v[u];
#pragma unroll
        for (int u = 0; u < U; ++u) v[u] = w[u];
    }
#pragma unroll
    for (int u = 0; u < U; ++u) dst[(t + tiles_per_block - 1) * tile + off + u * 32] = v[u];
}
"""
US = (4, 8, 16, 32)
names = [f"copy_wc<{u}>" for u in US] + [f"copy_bc<{u}>" for u in US] + [f"copy_pipe<{u}>" for u in (8, 16)]
mod = cp.RawModule(code=SRC, options=("-std=c++17",), name_expressions=names)
K = {nm: mod.get_function(nm) for nm in names}

ARR = int(os.environ.get("ARR_GIB", "4")) << 30
n16 = ARR // 16
pool = cp.cuda.Memory(2 * ARR + (64 << 20))     # src at 0, dst at ARR + pad
base_ptr = pool.ptr
src = cp.ndarray((n16 * 2,), dtype=cp.float64, memptr=cp.cuda.MemoryPointer(pool, 0))
src[:] = cp.arange(n16 * 2, dtype=cp.float64)
poll = Poll()
rows = []


def dst_view(pad):
    return cp.ndarray((n16 * 2,), dtype=cp.float64, memptr=cp.cuda.MemoryPointer(pool, ARR + pad))


def bench(name, pad, block, extra=(), tiles=1, reps=10):
    u = int(name.split("<")[1].rstrip(">"))
    per_block = block * u * tiles
    grid = n16 // per_block
    assert grid * per_block == n16
    dst = dst_view(pad)
    dst.fill(-1.0)
    args = (src, dst) + extra
    k = K[name]
    k((grid,), (block,), args)
    cp.cuda.Device().synchronize()
    ok = bool(cp.array_equal(dst, src))
    ts = []
    t0 = time.perf_counter()
    for _ in range(5):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        for _ in range(reps):
            k((grid,), (block,), args)
        e.record()
        e.synchronize()
        ts.append(cp.cuda.get_elapsed_time(s, e) * 1e-3 / reps)
    t1 = time.perf_counter()
    gbps = 2 * ARR / np.median(ts) / 1e9
    best = 2 * ARR / min(ts) / 1e9
    row = {"kernel": name, "pad": pad, "block": block, "tiles": tiles, "gbps_med": gbps, "gbps_best": best, "ok": ok,
           **poll.window(t0, t1)}
    rows.append(row)
    print(f"{name:14s} pad {pad:>9d} block {block:4d} tiles {tiles:3d}: {gbps:7.1f} GB/s (best {best:7.1f}) ok={ok} "
          f"mem/sm clk {row.get('sm_mhz')} pw {row.get('power_w')}", flush=True)
    return gbps


# 1. burst size x block size, pad 0
for u in US:
    for block in (64, 128, 256):
        bench(f"copy_wc<{u}>", 0, block)
        bench(f"copy_bc<{u}>", 0, block)
best = max((r for r in rows), key=lambda r: r["gbps_med"])
print("best so far", best, flush=True)
# 2. dst offsets with the best shape
for pad in (256, 1024, 4096, 16384, 65536, 1 << 20, (1 << 20) + 4096, 2 << 20, (16 << 20) + 8192, 33 << 20):
    bench(best["kernel"], pad, best["block"])
# 3. pipelined persistent-ish blocks
for u in (8, 16):
    for block in (128, 256):
        for tiles in (2, 4, 16):
            bench(f"copy_pipe<{u}>", 0, block, (cp.uint64(tiles),), tiles=tiles)
# 4. the copy engine / driver D2D path on the same arrays
dst = dst_view(0)
ts = []
for _ in range(5):
    s, e = cp.cuda.Event(), cp.cuda.Event()
    s.record()
    for _ in range(5):
        cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, ARR, cp.cuda.runtime.memcpyDeviceToDevice, 0)
    e.record()
    e.synchronize()
    ts.append(cp.cuda.get_elapsed_time(s, e) * 1e-3 / 5)
print(f"cudaMemcpyAsync D2D {ARR >> 30} GiB: {2 * ARR / np.median(ts) / 1e9:.1f} GB/s "
      f"(best {2 * ARR / min(ts) / 1e9:.1f})", flush=True)
rows.append({"kernel": "memcpy_d2d", "gbps_med": 2 * ARR / np.median(ts) / 1e9, "gbps_best": 2 * ARR / min(ts) / 1e9})
poll.stop()
json.dump(rows, open(os.path.join(OUT, "copy_variants.json"), "w"), indent=1)
