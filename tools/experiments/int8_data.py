"""INT8 library GEMM vs operand distribution: rate, SM clock and power under the power cap.

Tensor-core power depends on how many operand bits toggle; under a power cap that moves the clock and so the
rate. Distributions: full-range uniform (worst case), quantized normals (what calibrated INT8 tensors look like:
max-calibration maps ~4 sigma to 127), narrow uniform, and zeros (a lower bound on power, reference only).
"""
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
from hwprobe.probes.compute.cublaslt import LtGemm  # noqa: E402

OUT = os.environ.get("OUT", "/tmp")
DUR = float(os.environ.get("DUR", "4"))


def normal(sigma):
    return lambda rs, shape: cp.clip(cp.rint(rs.standard_normal(shape, dtype=cp.float32) * sigma), -127, 127)


DISTS = {
    "uniform127": lambda rs, shape: rs.randint(-127, 128, size=shape),
    "normal32": normal(32.0),
    "uniform8": lambda rs, shape: rs.randint(-8, 9, size=shape),
    "zeros": lambda rs, shape: cp.zeros(shape, dtype=cp.int32),
}
_orig = gg.random_operand


def use(dist):
    def f(cp_, kind, shape, seed, scale=1.0):
        if kind != "int8":
            return _orig(cp_, kind, shape, seed, scale)
        return DISTS[dist](cp.random.RandomState(seed), shape).astype(cp.int8)
    gg.random_operand = f


env = gemm_env()
poll = Poll()
rows = []
v = gc.variant("int8.tn")
sizes = [int(x) for x in os.environ.get("SIZES", "8192,12288,16384").split(",")]
apis = os.environ.get("APIS", "gemmex,lt").split(",")
for n in sizes:
    for api in apis:
        for dist in DISTS:
            use(dist)
            cp.get_default_memory_pool().free_all_blocks()
            with gg.cublas_mode(env, v.math):
                g = (LtGemm if api == "lt" else gg.CublasGemm)(env, v, n, n, n)
                r = gg.build_runner(cp, g.call, g.sets, set_stream=g.set_stream, target_s=0.1,
                                    graph_unavailable=getattr(env, "graph_unavailable", ""))
                err = g.check(8) if dist != "zeros" else 0.0
                samples = []
                t0 = time.perf_counter()
                while time.perf_counter() - t0 < DUR:
                    s, e = cp.cuda.Event(), cp.cuda.Event()
                    s.record()
                    r.fn()
                    e.record()
                    e.synchronize()
                    samples.append((time.perf_counter(), cp.cuda.get_elapsed_time(s, e) * 1e-3))
                t1 = time.perf_counter()
                if hasattr(g, "close"):
                    g.close()
            ops = gc.gemm_flops(n, n, n) * r.reps
            rates = np.array([ops / dt for _, dt in samples])
            late = [ops / dt for t, dt in samples if t > t0 + DUR / 2]
            row = {"n": n, "api": api, "dist": dist, "rate_med": float(np.median(rates)),
                   "rate_max": float(rates.max()),
                   "rate_first": float(rates[0]), "rate_late_med": float(np.median(late)) if late else None,
                   "samples": len(samples), "rel_err": err, **poll.window(t0, t1),
                   "late": poll.window(t0 + DUR / 2, t1), "algo": getattr(g, "best", None)}
            rows.append(row)
            print(f"n={n} {api:6s} {dist:10s} med {row['rate_med']/1e15:.3f} late {row['rate_late_med']/1e15:.3f} "
                  f"max {row['rate_max']/1e15:.3f} P/s  clk {row.get('sm_mhz')} late {row['late'].get('sm_mhz')} MHz "
                  f"pw {row.get('power_w')} W thr {row.get('throttle')}", flush=True)
            time.sleep(1.0)
poll.stop()
json.dump(rows, open(os.path.join(OUT, "int8_data.json"), "w"), indent=1)
