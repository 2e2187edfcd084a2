"""Issue 33 (31st session): why does gpu.sparse's sweep read FP8 2:4 at 16384 ~2.5% under the library search's plan
with the same config 20, three processes each way? In ONE process, timed exactly as the probe times its point
(build_runner over the rotating operand sets, settle 0.25 s, sustain 0.4 s), in ROUNDS rounds of alternating order:
  sweep        the sweep's plan, A compressed once by the default plan before the sweep (as the probe does)
  sweep.recmp  the same plan, A compressed again by that plan (fresh buffers)
  library      cusparseLtMatmulSearch's plan (A compressed by the plan before its search, as the probe does)
  library.recmp the library plan, A compressed again by the searched plan
Outputs compared with the library plan's; NVML SM clock, power and throttle read after each window.
   python3 .ab/s31_sparse.py OUT_JSON [prec ...]"""
import json
import sys
import time
from types import SimpleNamespace

import cupy as cp
import numpy as np

from hwprobe.probes.compute import gemm_common as gc
from hwprobe.probes.compute import sparse as S
from hwprobe.probes.compute.cublas import build_runner, settle_runner
from hwprobe.timing import time_cuda

try:
    import pynvml as nv
    nv.nvmlInit()
    H = nv.nvmlDeviceGetHandleByIndex(0)
except Exception:       # noqa: BLE001
    H = None


def nvml():
    if H is None:
        return {}
    return {"mhz": nv.nvmlDeviceGetClockInfo(H, nv.NVML_CLOCK_SM), "w": nv.nvmlDeviceGetPowerUsage(H) / 1000,
            "thr": nv.nvmlDeviceGetCurrentClocksThrottleReasons(H), "temp": nv.nvmlDeviceGetTemperature(H, 0)}


out = sys.argv[1]
precs = sys.argv[2:] or ["fp8", "int8"]
lt, cs, handle = S._libs(SimpleNamespace(device=SimpleNamespace(cc_major=9, arch="sm_90")))
ROUNDS, N = 4, 16384
L2 = 50 << 20
res = []


def recompressed(g):
    """(call(i), keep): g's plan over A compressed again by that plan, one fresh buffer per operand set."""
    csize, bsize = lt.sp_mma_compressed_size(handle, g.plan)
    cbuf = cp.empty(max(int(bsize), 1), cp.uint8)
    acs = []
    for a, _, _, _ in g.ops:
        ac = cp.empty(max(int(csize), 1), cp.uint8)
        lt.sp_mma_compress(handle, g.plan, a.data.ptr, ac.data.ptr, cbuf.data.ptr, cp.cuda.get_current_stream().ptr)
        acs.append(ac)
    same = [bool((ac[: g.ops[i][3].size] == g.ops[i][3]).all()) if ac.size == g.ops[i][3].size else False
            for i, ac in enumerate(acs)]
    streams = np.zeros(1, np.uint64)

    def call(i):
        _, b, c, _ = g.ops[i]
        streams[0] = cp.cuda.get_current_stream().ptr
        lt.matmul(handle, g.plan, g.alpha.ctypes.data, acs[i].data.ptr, b.data.ptr, g.beta.ctypes.data, c.data.ptr,
                  c.data.ptr, g.ws.data.ptr, streams.ctypes.data, 1)
    return call, {"compressed_bytes": int(csize), "default_plan_bytes": g.compressed_bytes,
                  "identical_to_default_compression": same, "keep": (acs, cbuf)}


for prec in precs:
    spec = S.SPECS[prec]
    sets = gc.rotation_sets(gc.gemm_bytes(N, N, N, gc.ITEMSIZE[spec.storage], gc.ITEMSIZE[spec.out]), L2)
    t0 = time.perf_counter()
    gs = S.SparseGemm(cp, lt, cs, handle, spec, N, N, N, sets, search="sweep")
    ts = time.perf_counter() - t0
    t0 = time.perf_counter()
    gl = S.SparseGemm(cp, lt, cs, handle, spec, N, N, N, sets, search="cusparselt")
    tl = time.perf_counter() - t0
    rs_call, rs_info = recompressed(gs)
    rl_call, rl_info = recompressed(gl)
    calls = {"sweep": gs.call, "sweep.recmp": rs_call, "library": gl.call, "library.recmp": rl_call}
    outs = {"sweep": gs, "sweep.recmp": gs, "library": gl, "library.recmp": gl}
    diffs = {}
    for k, f in calls.items():
        f(0)
        cp.cuda.Device().synchronize()
        diffs[k] = cp.asnumpy(outs[k].ops[0][2]).astype(np.float64)
    ref = diffs["library"]
    rel = {k: float(np.abs(v - ref).max() / max(np.abs(ref).max(), 1e-30)) for k, v in diffs.items()}
    runners = {k: build_runner(cp, f, sets) for k, f in calls.items()}
    rates = {k: [] for k in calls}
    tel = {k: [] for k in calls}
    order = list(calls)
    for r in range(ROUNDS):
        for k in (order if r % 2 == 0 else order[::-1]):
            rn = runners[k]
            timing = settle_runner(cp, rn, (S.SETTLE_S, S.SUSTAIN_S))
            s = time_cuda(rn.fn, warmup=timing["warmup"], repeats=timing["repeats"], cp=cp)
            rates[k].append(round(2 * N ** 3 * rn.reps / float(np.median(s)) / 1e12, 1))
            tel[k].append(nvml())
    row = {"prec": prec, "n": N, "sets": sets, "sweep_chosen": gs.chosen, "library_chosen": gl.chosen,
           "sweep_setup_s": round(ts, 2), "library_setup_s": round(tl, 2),
           "sweep_timings_us": {c: round(t * 1e6, 1) for c, t in gs.timings.items()},
           "sweep_settled_us": {c: round(t * 1e6, 1) for c, t in gs.settled.items()},
           "recompressed": {"sweep": {k: v for k, v in rs_info.items() if k != "keep"},
                            "library": {k: v for k, v in rl_info.items() if k != "keep"}},
           "rel_diff_vs_library": rel,
           "rates": rates, "median": {k: float(np.median(v)) for k, v in rates.items()}, "nvml": tel}
    print(json.dumps({k: row[k] for k in ("prec", "sweep_chosen", "library_chosen", "median", "rates",
                                          "recompressed", "rel_diff_vs_library")}), flush=True)
    res.append(row)
    json.dump(res, open(out, "w"), indent=1)
    gs.close()
    gl.close()
    cp.get_default_memory_pool().free_all_blocks()
