#!/usr/bin/env python3
"""40th session, issue 33: what gpu.gemm_fp8's ceiling windows see. The FP8 cuBLASLt ceiling (e4m3, 16384 and 8192,
nvmath Matmul as gpu.gemm_fp8 builds it) read 1442-1516 TFLOP/s across one lease's runs of the same code: a window of
10 calls sits at one of the power limiter's levels by chance.

Each record: the GPU left to idle (NVML's averaged power under 1.5x the lowest seen, at most 5 s: the runner's settle
before a probe), 150 ms of the GEMM (autotune's and the runner's pilot calls), a rest of 0, 0.3 or 1 s, then 1.5 s of
back-to-back calls with a CUDA event after each (every call's time), and NVML's SM clock every 10 ms beside. Shuffled,
three of each. Clocks, power and modes are only read. Writes JSON lines to argv[1].
"""

from __future__ import annotations

import json
import random
import sys
import threading
import time

import cupy as cp
import nvmath
import pynvml as nv
import torch

from hwprobe.probes.compute.cublaslt import fp8_matmul

OUT = sys.argv[1]
nv.nvmlInit()
H = nv.nvmlDeviceGetHandleByIndex(0)


def power_w() -> float:
    return nv.nvmlDeviceGetPowerUsage(H) * 1e-3


def idle(floor: list[float]) -> dict:
    t0 = time.monotonic()
    while True:
        p = power_w()
        floor[0] = min(floor[0], p)
        if p <= 1.5 * floor[0] or time.monotonic() - t0 > 5.0:
            return {"idle_w": round(p, 1), "waited_s": round(time.monotonic() - t0, 2),
                    "temp_c": nv.nvmlDeviceGetTemperature(H, nv.NVML_TEMPERATURE_GPU)}
        time.sleep(0.1)


def record(g, n: int, rest: float, floor: list[float]) -> dict:
    start = idle(floor)
    per = g.per_call
    for _ in range(max(1, round(0.15 / per))):
        g.call()
    cp.cuda.get_current_stream().synchronize()
    time.sleep(rest)
    calls = max(10, round(1.5 / per))
    ev = [cp.cuda.Event() for _ in range(calls + 1)]
    clocks: list[tuple[float, int]] = []
    stop = threading.Event()

    def poll():
        t0 = time.perf_counter()
        while not stop.is_set():
            clocks.append((round(time.perf_counter() - t0, 4), nv.nvmlDeviceGetClockInfo(H, nv.NVML_CLOCK_SM)))
            time.sleep(0.01)

    th = threading.Thread(target=poll)
    th.start()
    ev[0].record()
    for i in range(calls):
        g.call()
        ev[i + 1].record()
    ev[-1].synchronize()
    stop.set()
    th.join()
    ms = [cp.cuda.get_elapsed_time(ev[i], ev[i + 1]) for i in range(calls)]
    return {"n": n, "rest_s": rest, "start": start, "call_ms": [round(x, 4) for x in ms],
            "tflops": [round(2 * n ** 3 / (x * 1e-3) / 1e12, 1) for x in ms], "nvml_sm_mhz": clocks,
            "end_power_w": round(power_w(), 1)}


def main() -> None:
    mats = {}
    for n in (16384, 8192):
        g = fp8_matmul(cp, nvmath, torch, n, n, n, "e4m3", "e4m3")
        for _ in range(3):
            g.call()
        cp.cuda.get_current_stream().synchronize()
        t0 = time.perf_counter()
        for _ in range(10):
            g.call()
        cp.cuda.get_current_stream().synchronize()
        g.per_call = (time.perf_counter() - t0) / 10
        mats[n] = g
        g.check(16)
    plan = [(n, r) for n in mats for r in (0.0, 0.3, 1.0) for _ in range(3)]
    random.Random(40).shuffle(plan)
    floor = [power_w()]
    with open(OUT, "w") as f:
        for n, r in plan:
            rec = record(mats[n], n, r, floor)
            f.write(json.dumps(rec) + "\n")
            f.flush()
            t = sorted(rec["tflops"])
            print(f"n={n} rest={r} start={rec['start']} median {t[len(t) // 2]} max {t[-1]} first10 "
                  f"{rec['tflops'][:10]}", flush=True)
    for g in mats.values():
        g.check(16)
        g.close()


if __name__ == "__main__":
    main()
