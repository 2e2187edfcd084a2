"""Sustained rate of every cuBLASLt INT8 heuristic algorithm at the power cap (is any more energy-efficient
than the short-burst autotune pick?). Random full-range operands, each algorithm 0.6 s after 0.3 s settle."""
import functools
import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
from expkit import Poll, gemm_env, sustained  # noqa: E402

from hwprobe.probes.compute import cublas as gg  # noqa: E402
from hwprobe.probes.compute import gemm_common as gc  # noqa: E402
from hwprobe.probes.compute.cublaslt import LtGemm  # noqa: E402

OUT = os.environ.get("OUT", "/tmp")


env = gemm_env()
poll = Poll()
v = gc.variant("int8.tn")
rows = []
for n in (8192, 16384):
    with gg.cublas_mode(env, v.math):
        g = LtGemm(env, v, n, n, n)
        ops = gc.gemm_flops(n, n, n)
        for i in sorted(g.timings, key=g.timings.get):
            ptr = g._algo_ptr(i)
            rate, w = sustained(functools.partial(g._matmul, ptr), g.sets, ops, poll, 0.3, 0.6)
            row = {"n": n, "algo": i, "autotune_s": g.timings[i], "burst_rate": ops / g.timings[i], "sustained": rate,
                   "sm_mhz": w.get("sm_mhz"), "power_w": w.get("power_w"), "best_pick": i == g.best}
            rows.append(row)
            print(f"n={n} algo {i:2d} burst {row['burst_rate']/1e15:.3f} sustained {rate/1e15:.3f} P/s "
                  f"clk {w.get('sm_mhz')} pw {w.get('power_w')}{' <- autotune pick' if i == g.best else ''}",
                  flush=True)
        g.close()
poll.stop()
json.dump(rows, open(os.path.join(OUT, "int8_algos.json"), "w"), indent=1)
print("best sustained:", max(rows, key=lambda r: r["sustained"]))
