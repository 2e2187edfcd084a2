"""FP16/BF16 gemmEx: burst rate after idle vs settled rate, per operand distribution.

The issue quotes "cuBLAS gemmEx FP16 reached about 900 TFLOP/s" on an H200, above gpu.gemm's 760-810. This
asks where such a figure comes from: each point idles IDLE seconds (the clock recovers to its maximum), then
runs CALLS single calls back to back, each timed by its own CUDA event pair (no host gaps), then settles
SETTLE seconds and times the same calls again. It reports the first calls, the best call and the settled
median, with NVML's clock and power over each phase.
"""
import itertools
import json
import os
import sys
import time

import cupy as cp
import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from expkit import Poll, gemm_env  # noqa: E402

from hwprobe.probes.compute import cublas as gg  # noqa: E402
from hwprobe.probes.compute import gemm_common as gc  # noqa: E402
from hwprobe.timing import time_cuda  # noqa: E402

OUT = os.environ.get("OUT", "/tmp")
IDLE, SETTLE, CALLS = float(os.environ.get("IDLE", "2")), float(os.environ.get("SETTLE", "2")), 60


def timed_calls(g, count: int, sets: int) -> np.ndarray:
    """Seconds of each of ``count`` back-to-back calls, each between its own CUDA events (no host gaps)."""
    i = itertools.count()
    return np.array(time_cuda(lambda: g.call(next(i) % sets), warmup=0, repeats=count, cp=cp))


env = gemm_env()
poll = Poll(period=0.01)
rows = []
sizes = [int(x) for x in os.environ.get("SIZES", "8192").split(",")]
for n in sizes:
    for name in os.environ.get("VARIANTS", "fp16.f32acc,fp16.f16acc,bf16").split(","):
        v = gc.variant(name)
        for data in os.environ.get("DATA", "uniform,normal,zeros").split(","):
            cp.get_default_memory_pool().free_all_blocks()
            with gg.cublas_mode(env, v.math):
                g = gg.CublasGemm(env, v, n, n, n, data=data)
                g.call(0)
                cp.cuda.get_current_stream().synchronize()
                err = g.check(8) if data != "zeros" else 0.0
                time.sleep(IDLE)
                t0 = time.perf_counter()
                burst = timed_calls(g, CALLS, g.sets)
                t1 = time.perf_counter()
                t_end = t1 + SETTLE
                while time.perf_counter() < t_end:
                    timed_calls(g, 8, g.sets)
                t2 = time.perf_counter()
                settled = timed_calls(g, CALLS, g.sets)
                t3 = time.perf_counter()
            flops = gc.gemm_flops(n, n, n)
            r_b, r_s = flops / burst, flops / settled
            row = {"n": n, "variant": name, "data": data, "rel_err": err, "sets": g.sets,
                   "burst_first5_tflops": float(np.median(r_b[:5]) / 1e12), "burst_max_tflops": float(r_b.max() / 1e12),
                   "burst_med_tflops": float(np.median(r_b) / 1e12),
                   "burst_ms": float(burst.sum() * 1e3), "settled_med_tflops": float(np.median(r_s) / 1e12),
                   "settled_max_tflops": float(r_s.max() / 1e12),
                   "nvml_idle": poll.window(t0 - 0.3, t0), "nvml_burst": poll.window(t0, t1),
                   "nvml_settled": poll.window(t2, t3), "burst_tflops": [round(x / 1e12, 1) for x in r_b]}
            rows.append(row)
            print(f"n={n} {name:12s} {data:8s} burst first5 {row['burst_first5_tflops']:.0f} max "
                  f"{row['burst_max_tflops']:.0f} med {row['burst_med_tflops']:.0f} ({row['burst_ms']:.0f} ms) | "
                  f"settled med {row['settled_med_tflops']:.0f} max {row['settled_max_tflops']:.0f} TFLOP/s | "
                  f"idle {row['nvml_idle'].get('sm_mhz')} burst {row['nvml_burst'].get('sm_mhz')} "
                  f"settled {row['nvml_settled'].get('sm_mhz')} MHz {row['nvml_settled'].get('power_w')} W "
                  f"{row['nvml_settled'].get('throttle')} err {err:.2g}", flush=True)
poll.stop()
json.dump(rows, open(os.path.join(OUT, "fp16_burst.json"), "w"), indent=1)
