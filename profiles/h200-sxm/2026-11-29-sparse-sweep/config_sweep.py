"""Issue 33, next session: cuSPARSELt's own search against a sweep of config ids of ours, each id on a FRESH
algorithm selection and plan (the 28th session's sweep set CONFIG_ID on the searched plan's selection and re-made the
plan: it segfaulted at id 1). Per precision at n^3: the library search's time and pick, then every id's two-launch
time, the best id's 20-launch rate beside the library pick's, the output checked.
  python3 .ab/s29_sparse.py OUT_JSON [16384[,8192]] [fp16,int8,fp8]"""
import json
import statistics
import sys
import time
from types import SimpleNamespace

import cupy as cp
import numpy as np

from hwprobe.probes.compute import sparse as S
from hwprobe.timing import time_cuda

out = sys.argv[1]
sizes = [int(x) for x in sys.argv[2].split(",")] if len(sys.argv) > 2 else [16384]
lt, cs, handle = S._libs(SimpleNamespace(device=SimpleNamespace(cc_major=9, arch="sm_90")))
A = lt.MatmulAlgAttribute
rows = []


def say(*a):
    print(*a, flush=True)


def attr(alg, a, value=None):
    buf = np.zeros(1, dtype=lt.get_matmul_alg_attribute_dtype(a))
    if value is not None:
        buf[0] = value
        lt.matmul_alg_set_attribute(handle, alg, a, buf.ctypes.data, buf.itemsize)
        return value
    lt.matmul_alg_get_attribute(handle, alg, a, buf.ctypes.data, buf.itemsize)
    return int(buf[0])


def with_config(g, cid):
    """Seconds per launch (min of 2 after 1 warm-up) of g's problem on a fresh selection with CONFIG_ID = cid."""
    alg = lt.matmul_alg_selection_init(handle, g.desc, lt.MatmulAlg.DEFAULT)
    plan = None
    try:
        attr(alg, A.CONFIG_ID, cid)
        plan = lt.matmul_plan_init(handle, g.desc, alg)
        csize, bsize = lt.sp_mma_compressed_size(handle, plan)
        ac, cbuf = cp.empty(max(int(csize), 1), cp.uint8), cp.empty(max(int(bsize), 1), cp.uint8)
        a, b, c, _ = g.ops[0]
        stream = cp.cuda.get_current_stream().ptr
        lt.sp_mma_compress(handle, plan, a.data.ptr, ac.data.ptr, cbuf.data.ptr, stream)
        ws = cp.empty(max(int(lt.matmul_get_workspace(handle, plan)), 1), cp.uint8)
        streams = np.array([stream], dtype=np.uint64)

        def call():
            lt.matmul(handle, plan, g.alpha.ctypes.data, ac.data.ptr, b.data.ptr, g.beta.ctypes.data, c.data.ptr,
                      c.data.ptr, ws.data.ptr, streams.ctypes.data, 1)

        return min(time_cuda(call, warmup=1, repeats=2, cp=cp))
    finally:
        if plan is not None:
            lt.matmul_plan_destroy(plan)
        lt.matmul_alg_selection_destroy(alg)


for n in sizes:
    for prec in (sys.argv[3].split(",") if len(sys.argv) > 3 else ("fp16", "int8", "fp8")):
        spec = S.SPECS[prec]
        say("start", n, prec)
        g = S.SparseGemm(cp, lt, cs, handle, spec, n, n, n, 1)
        r = {"n": n, "prec": prec, "search_s": round(g.search_s, 3), "pick": g.chosen,
             "max_id": attr(g.alg, A.CONFIG_MAX_ID)}
        r["pick_tflops"] = 2 * n ** 3 / statistics.median(time_cuda(lambda: g.call(0), warmup=3, repeats=20, cp=cp)) / 1e12
        say(r)
        t0, ids = time.perf_counter(), {}
        for cid in range(r["max_id"]):
            say("  id", cid)
            try:
                ids[cid] = with_config(g, cid)
            except Exception as e:          # noqa: BLE001
                ids[cid] = f"{type(e).__name__}: {e}"[:80]
            say("   ", ids[cid])
        r["sweep_s"] = round(time.perf_counter() - t0, 3)
        r["ids"] = ids
        timed = {k: v for k, v in ids.items() if isinstance(v, float)}
        r["best_id"] = min(timed, key=timed.get) if timed else None
        r["best_tflops_2launch"] = 2 * n ** 3 / timed[r["best_id"]] / 1e12 if timed else None
        say({k: v for k, v in r.items() if k != "ids"})
        g.close()
        cp.get_default_memory_pool().free_all_blocks()
        rows.append(r)
        json.dump(rows, open(out, "w"))
