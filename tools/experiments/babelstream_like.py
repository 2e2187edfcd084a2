"""BabelStream's CUDA method re-created for a same-machine comparison with gpu.dram (no network on the lent
machine, so BabelStream itself cannot be fetched and built there).

Its semantics, from its CUDA back end: double arrays, TBSIZE = 1024 threads per block, a grid of
ceil(N / 1024) blocks, one element per thread (a grid-stride loop that runs once); per iteration copy
(c = a), mul (b = s c), add (c = a + b), triad (a = b + s c) and dot (SMs x 4 blocks), each synchronized;
100 iterations, the first dropped; bandwidth = bytes moved / time with copy and mul counting 2 N x 8 B,
add and triad 3 N x 8 B, and BabelStream's headline figure is the best (shortest) iteration. Results are
checked against the values the kernels must produce.
"""
import json
import os

import cupy as cp
import numpy as np

OUT = os.environ.get("OUT", "/tmp")
TB = 1024
SRC = r"""
extern "C" __global__ void copy_k(const double* a, double* c, long long n) {
    for (long long i = threadIdx.x + (long long)blockDim.x * blockIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        c[i] = a[i];
}
extern "C" __global__ void mul_k(double* b, const double* c, double s, long long n) {
    for (long long i = threadIdx.x + (long long)blockDim.x * blockIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        b[i] = s * c[i];
}
extern "C" __global__ void add_k(const double* a, const double* b, double* c, long long n) {
    for (long long i = threadIdx.x + (long long)blockDim.x * blockIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        c[i] = a[i] + b[i];
}
extern "C" __global__ void triad_k(double* a, const double* b, const double* c, double s, long long n) {
    for (long long i = threadIdx.x + (long long)blockDim.x * blockIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        a[i] = b[i] + s * c[i];
}
extern "C" __global__ void dot_k(const double* a, const double* b, double* sums, long long n) {
    __shared__ double sm[1024];
    double t = 0.0;
    for (long long i = threadIdx.x + (long long)blockDim.x * blockIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
        t += a[i] * b[i];
    sm[threadIdx.x] = t;
    for (int off = blockDim.x / 2; off > 0; off /= 2) {
        __syncthreads();
        if (threadIdx.x < off) sm[threadIdx.x] += sm[threadIdx.x + off];
    }
    if (threadIdx.x == 0) sums[blockIdx.x] = sm[0];
}
"""
mod = cp.RawModule(code=SRC)
K = {k: mod.get_function(k) for k in ("copy_k", "mul_k", "add_k", "triad_k", "dot_k")}
sms = cp.cuda.Device().attributes["MultiProcessorCount"]
S = 0.4
rows = []
for log2n in (25, 29):
    n = 1 << log2n
    a, b, c = cp.full(n, 0.1), cp.full(n, 0.2), cp.zeros(n)
    sums = cp.zeros(sms * 4)
    grid = (n + TB - 1) // TB
    nn = np.int64(n)
    calls = {   # name -> (kernel, grid, args, arrays moved)
        "copy": ("copy_k", grid, (a, c, nn), 2),
        "mul": ("mul_k", grid, (b, c, np.float64(S), nn), 2),
        "add": ("add_k", grid, (a, b, c, nn), 3),
        "triad": ("triad_k", grid, (a, b, c, np.float64(S), nn), 3),
        "dot": ("dot_k", sms * 4, (a, b, sums, nn), 2),
    }
    times = {k: [] for k in calls}
    ga, gb, gc_ = 0.1, 0.2, 0.0
    for _ in range(100):
        for name, (kern, g, args, _) in calls.items():
            s, e = cp.cuda.Event(), cp.cuda.Event()
            s.record()
            K[kern]((g,), (TB,), args)
            e.record()
            e.synchronize()
            times[name].append(cp.cuda.get_elapsed_time(s, e) * 1e-3)
        gc_ = ga
        gb = S * gc_
        gc_ = ga + gb
        ga = gb + S * gc_
    ok = bool(cp.allclose(a, ga) and cp.allclose(b, gb) and cp.allclose(c, gc_))
    dot_ok = abs(float(sums.sum()) - ga * gb * n) <= 1e-8 * abs(ga * gb * n)
    for name, (_, _, _, arrays) in calls.items():
        t = np.array(times[name][1:])
        nbytes = arrays * n * 8
        row = {"n": n, "kernel": name, "best_gbps": nbytes / t.min() / 1e9, "avg_gbps": nbytes / t.mean() / 1e9,
               "median_gbps": nbytes / np.median(t) / 1e9, "checked": ok and dot_ok}
        rows.append(row)
        print(f"2^{log2n} {name:6s} best {row['best_gbps']:8.1f} GB/s  median {row['median_gbps']:8.1f}  "
              f"avg {row['avg_gbps']:8.1f}  checked={row['checked']}", flush=True)
    a = b = c = None
    cp.get_default_memory_pool().free_all_blocks()
json.dump(rows, open(os.path.join(OUT, "babelstream_like.json"), "w"), indent=1)
