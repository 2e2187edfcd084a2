"""Issue 33 (34th session, from s30_splitk.py): energy per op and sustained rate, not only time.
Original: Issue 33 (30th session): does cuSPARSELt's search beat our sweep at FP8 16384 with the same config 20 because it
also sets SPLIT_K_MODE (2 where a fresh selection has 1)? And INT8 16384: configs 25 and 17 per mode. Each variant on
its own selection and plan (CONFIG_ID, then SPLIT_K_MODE), its own compressed A, timed in settled windows (0.3 s) in
ROUNDS interleaved rounds of alternating order, beside the library-searched plan; outputs compared with the
library plan's.   python3 .ab/s30_splitk.py OUT_JSON"""
import json
import sys
from types import SimpleNamespace

import cupy as cp
import numpy as np

from hwprobe.probes.compute import sparse as S
from hwprobe.timing import time_cuda

out = sys.argv[1]
lt, cs, handle = S._libs(SimpleNamespace(device=SimpleNamespace(cc_major=9, arch="sm_90")))
A = lt.MatmulAlgAttribute
ROUNDS, SETTLE_S, WINDOW_S = 4, 1.0, 1.5
NAMES = ("CONFIG_ID", "SPLIT_K", "SPLIT_K_MODE", "SPLIT_K_BUFFERS")
res = []


def attr(alg, a, value=None):
    buf = np.zeros(1, dtype=lt.get_matmul_alg_attribute_dtype(a))
    if value is not None:
        buf[0] = value
        lt.matmul_alg_set_attribute(handle, alg, a, buf.ctypes.data, buf.itemsize)
        return value
    lt.matmul_alg_get_attribute(handle, alg, a, buf.ctypes.data, buf.itemsize)
    return int(buf[0])


def caller(g, alg, plan):
    csize, bsize = lt.sp_mma_compressed_size(handle, plan)
    ac, cbuf = cp.empty(max(int(csize), 1), cp.uint8), cp.empty(max(int(bsize), 1), cp.uint8)
    a, b, _, _ = g.ops[0]
    c = cp.zeros_like(g.ops[0][2])
    stream = cp.cuda.get_current_stream().ptr
    lt.sp_mma_compress(handle, plan, a.data.ptr, ac.data.ptr, cbuf.data.ptr, stream)
    ws = cp.empty(max(int(lt.matmul_get_workspace(handle, plan)), 1), cp.uint8)
    streams = np.array([stream], dtype=np.uint64)

    def call():
        lt.matmul(handle, plan, g.alpha.ctypes.data, ac.data.ptr, b.data.ptr, g.beta.ctypes.data, c.data.ptr,
                  c.data.ptr, ws.data.ptr, streams.ctypes.data, 1)
    call.keep = (ac, cbuf, ws, streams, c)
    call.attrs = {n.lower(): attr(alg, getattr(A, n)) for n in NAMES}
    return call


import statistics
import threading
import time

import pynvml as nv

nv.nvmlInit()
nh = nv.nvmlDeviceGetHandleByIndex(0)


def sustained(f, per):
    for _ in range(max(1, int(SETTLE_S / per))):
        f()
    cp.cuda.get_current_stream().synchronize()
    sm, stop = [], threading.Event()

    def loop():
        while not stop.is_set():
            sm.append(nv.nvmlDeviceGetClockInfo(nh, nv.NVML_CLOCK_SM))
            time.sleep(0.01)
    count = max(10, int(WINDOW_S / per))
    ev = [cp.cuda.Event() for _ in range(count + 1)]
    th = threading.Thread(target=loop)
    e0, t0 = nv.nvmlDeviceGetTotalEnergyConsumption(nh), time.perf_counter()
    th.start()
    ev[0].record()
    for i in range(count):
        f()
        ev[i + 1].record()
    ev[-1].synchronize()
    stop.set()
    th.join()
    span, e1 = time.perf_counter() - t0, nv.nvmlDeviceGetTotalEnergyConsumption(nh)
    ts = [cp.cuda.get_elapsed_time(ev[i], ev[i + 1]) * 1e-3 for i in range(count)]
    return statistics.median(ts), statistics.median(sm), (e1 - e0) * 1e-3 / count, (e1 - e0) * 1e-3 / span


for prec, n, cids in (("fp8", 16384, (20,)), ("int8", 16384, (25,))):
    spec = S.SPECS[prec]
    g = S.SparseGemm(cp, lt, cs, handle, spec, n, n, n, 1, search="cusparselt")
    variants = {"library": caller(g, g.alg, g.plan)}
    made = []
    for cid in cids:
        for mode in (1, 2):
            alg = lt.matmul_alg_selection_init(handle, g.desc, lt.MatmulAlg.DEFAULT)
            try:
                attr(alg, A.CONFIG_ID, cid)
                attr(alg, A.SPLIT_K_MODE, mode)
                plan = lt.matmul_plan_init(handle, g.desc, alg)
                made.append((alg, plan))
                variants[f"id{cid}.mode{mode}"] = caller(g, alg, plan)
            except Exception as e:      # noqa: BLE001
                print(prec, cid, mode, "refused:", e, flush=True)
    for f in variants.values():
        f(); f()
    cp.cuda.Device().synchronize()
    ref = cp.asnumpy(variants["library"].keep[4]).astype(np.float64)
    diff = {k: float(np.abs(cp.asnumpy(f.keep[4]).astype(np.float64) - ref).max() / max(np.abs(ref).max(), 1e-30))
            for k, f in variants.items()}
    t1 = {k: min(time_cuda(f, warmup=1, repeats=2, cp=cp)) for k, f in variants.items()}
    order = list(variants)
    for r in range(ROUNDS):
        for k in (order[r % 3:] + order[:r % 3]):
            t, sm, j_call, watts = sustained(variants[k], t1[k])
            row = {"prec": prec, "variant": k, "round": r, "attrs": variants[k].attrs, "diff": diff[k],
                   "tflops": round(2 * n ** 3 / t / 1e12, 1), "sm_mhz": sm,
                   "tflops_per_ghz": round(2 * n ** 3 / t / 1e12 / (sm / 1e3), 1),
                   "pj_per_flop": round(j_call / (2 * n ** 3) * 1e12, 4), "watts": round(watts, 1)}
            print(json.dumps(row), flush=True)
            res.append(row)
            json.dump(res, open(out, "w"), indent=1)
    for alg, plan in made:
        lt.matmul_plan_destroy(plan)
        lt.matmul_alg_selection_destroy(alg)
    g.close()
