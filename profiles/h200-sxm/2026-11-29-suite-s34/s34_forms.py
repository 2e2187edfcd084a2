"""Issue 33 (34th session): do the wgmma operand forms, tied per SM clock, differ in rate under the power cap?
Each precision's three forms at 2 blocks/SM, in ROUNDS rounds of rotating order. Per (form, round):
  probe-like: settle 0.3 s, then ten 10-ms launches timed by CUDA events (gpu.wgmma's INSTRUCTION rule);
  sustained:  1.5 s more, timed by events, NVML energy over it (J per op), NVML SM clock median.
Every form's layout is checked first (lau.check).   python3 .ab/s34_forms.py OUT_JSON"""
import json
import statistics
import sys
import time
from functools import partial

import cupy as cp
import numpy as np
import pynvml as n

from hwprobe.probes.compute import mma as M

ROUNDS = 3
n.nvmlInit()
h = n.nvmlDeviceGetHandleByIndex(0)
sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
out, rows = sys.argv[1], []


def clocks_during(fn):
    sm, t = [], []
    import threading
    stop = threading.Event()

    def loop():
        while not stop.is_set():
            sm.append(n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM))
            t.append(n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU))
            time.sleep(0.01)
    th = threading.Thread(target=loop)
    e0 = n.nvmlDeviceGetTotalEnergyConsumption(h)
    t0 = time.perf_counter()
    th.start()
    res = fn()
    stop.set()
    th.join()
    span = time.perf_counter() - t0
    e1 = n.nvmlDeviceGetTotalEnergyConsumption(h)
    return res, statistics.median(sm) if sm else None, (e1 - e0) * 1e-3, span, max(t) if t else None


def timed(launch, iters, count):
    s = [cp.cuda.Event() for _ in range(count + 1)]
    s[0].record()
    for i in range(count):
        launch(iters)
        s[i + 1].record()
    s[-1].synchronize()
    return [cp.cuda.get_elapsed_time(s[i], s[i + 1]) * 1e-3 for i in range(count)]


for v in M.variants("wgmma"):
    mod, _ = M._module(v)
    lau = M._Launcher(cp, v, mod, sms)
    cfgs = [c for c in M.WGMMA_CONFIGS if c[1] == 2]
    for c in cfgs:
        lau.check(c)
    launches = {c: lau.make(c) for c in cfgs}
    first = launches[cfgs[0]]
    iters = M.calibrate(lambda k: M._median_time(partial(first, k)), 0.010)
    work = float(first.units * M.ops_per_iteration(v) * iters)
    per = M._median_time(partial(first, iters))
    for r in range(ROUNDS):
        order = cfgs[r % 3:] + cfgs[:r % 3]
        for c in order:
            L = launches[c]
            for _ in range(max(1, int(0.3 / per))):
                L(iters)
            cp.cuda.get_current_stream().synchronize()
            ts, sm1, _, _, temp = clocks_during(lambda: timed(L, iters, 10))
            sus, sm2, joules, span, temp2 = clocks_during(lambda: timed(L, iters, max(10, int(1.5 / per))))
            row = {"metric": v.metric, "form": c[0], "round": r,
                   "probe_rate": work / statistics.median(ts) / 1e12, "probe_sm_mhz": sm1,
                   "sus_rate": work / statistics.median(sus) / 1e12, "sus_sm_mhz": sm2,
                   "sus_power_w": joules / span, "pj_per_op": joules / (work * len(sus)) * 1e12, "temp_c": temp2}
            print(json.dumps({k: (round(x, 2) if isinstance(x, float) else x) for k, x in row.items()}), flush=True)
            rows.append(row)
            json.dump(rows, open(out, "w"), indent=1)
    for c, L in launches.items():
        print(v.metric, c[0], "timed output:", lau.check_timed(L, iters)[:80], flush=True)
