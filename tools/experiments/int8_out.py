"""cuBLASLt INT8 with INT32 output (the probes' path) vs INT8 output with a float scale (s8 x s8 -> s8): does a
4x smaller epilogue write, or the kernels the heuristic offers for it, sustain more under the power cap?
Random full-range operands; each point 0.5 s settle + 2.5 s sustained (timing only: int8 output saturates)."""
import dataclasses
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from expkit import Poll, gemm_env, sustained  # noqa: E402

from hwprobe.probes.compute import cublas as gg  # noqa: E402
from hwprobe.probes.compute import gemm_common as gc  # noqa: E402
from hwprobe.probes.compute.cublaslt import LtGemm  # noqa: E402

env = gemm_env()
poll = Poll()
base = gc.variant("int8.tn")
for out in ("int32", "int8"):
    if out == "int8":
        gc.SCALE_TYPE_FOR_COMPUTE[gc.COMPUTE_32I] = gc.R_32F
        gc.SCALAR_FOR_COMPUTE[gc.COMPUTE_32I] = np.float32
        v = dataclasses.replace(base, out="int8", c_type=gc.R_8I)
    else:
        v = base
    for n in (8192, 16384):
        with gg.cublas_mode(env, v.math):
            try:
                g = LtGemm(env, v, n, n, n)
            except Exception as e:
                print(f"{out} n={n}: {type(e).__name__}: {e}", flush=True)
                continue
            if out == "int8":
                g.alpha = np.array(1.0 / (n * 4096.0), dtype=np.float32)
                g.beta = np.zeros((), dtype=np.float32)
            ops = gc.gemm_flops(n, n, n)
            rate, w = sustained(g.call, g.sets, ops, poll, 0.5, 2.5)
            print(f"{out} out n={n}: sustained {rate / 1e15:.3f} POP/s at {w.get('sm_mhz')} MHz, {w.get('power_w')} W, "
                  f"burst {ops / g.timings[g.best] / 1e15:.3f}, algo #{g.best}/{g.algorithms}", flush=True)
            g.close()
poll.stop()
