#!/usr/bin/env python3
"""How long must a GPU rest after a power-capped load before a short library-GEMM burst reads what it reads on a
cool GPU? (issue 33: the settles before gpu.gemm's ceiling points wait on NVML's ~1-s power average.)

For each dtype: a burst on a GPU rested 5 s (the reference), then, in shuffled order and ``--reps`` times each,
``--load`` seconds of the same GEMM followed by a rest of r seconds and one burst. Beside each burst: NVML's SM clock,
temperature, its averaged power (nvmlDeviceGetPowerUsage) and its instantaneous power field where the driver has
it, read at the burst's start; and during the longest rest, a 20-ms time series of the same. Clocks, power and
modes are only read. Writes JSON (``--out``); runs only on a GPU machine.

    python3 tools/rest_burst.py --out rest_burst.json [--dtypes float16 float64] [--rests 0 0.1 0.3 0.6 1 2]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time

BURST_S = 0.05          # the burst: about as long as one ceiling point's timed samples (5-10 x 5 ms)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtypes", nargs="+", default=["float16", "float64"])
    ap.add_argument("--rests", nargs="+", type=float, default=[0.0, 0.1, 0.3, 0.6, 1.0, 2.0])
    ap.add_argument("--load", type=float, default=2.0)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--n", type=int, default=8192)
    a = ap.parse_args(argv)
    try:
        import cupy as cp
        import pynvml as nv
    except ImportError as e:
        print(f"rest_burst: needs CuPy and nvidia-ml-py on a GPU machine: {e}", file=sys.stderr)
        return 2
    nv.nvmlInit()
    h = nv.nvmlDeviceGetHandleByIndex(0)
    field = getattr(nv, "NVML_FI_DEV_POWER_INSTANT", 186)

    def state() -> dict:
        out = {"t": time.perf_counter(), "sm_mhz": nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM),
               "temp_c": nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU),
               "power_avg_w": nv.nvmlDeviceGetPowerUsage(h) / 1e3}
        try:
            v = nv.nvmlDeviceGetFieldValues(h, [field])[0]
            out["power_instant_w"] = v.value.uiVal / 1e3 if v.nvmlReturn == 0 else None
        except nv.NVMLError:
            out["power_instant_w"] = None
        return out

    results: dict = {"gpu": nv.nvmlDeviceGetName(h), "load_s": a.load, "n": a.n, "dtypes": {}}
    for dt in a.dtypes:
        results["dtypes"][dt] = one_dtype(cp, state, dt, a)
        cp.get_default_memory_pool().free_all_blocks()
    with open(a.out, "w") as f:
        json.dump(results, f, indent=1)
    return 0


def one_dtype(cp, state, dt: str, a) -> dict:
    """The rested reference burst, then every (load, rest, burst) trial of one dtype."""
    x = cp.random.default_rng(1).uniform(-1, 1, (a.n, a.n)).astype(dt)
    y = cp.random.default_rng(2).uniform(-1, 1, (a.n, a.n)).astype(dt)
    z = cp.empty_like(x)
    s, e = cp.cuda.Event(), cp.cuda.Event()
    s.record()
    cp.matmul(x, y, out=z)
    e.record()
    e.synchronize()
    calls = max(1, round(BURST_S / (cp.cuda.get_elapsed_time(s, e) / 1e3)))

    def burst() -> float:
        s.record()
        for _ in range(calls):
            cp.matmul(x, y, out=z)
        e.record()
        e.synchronize()
        return 2.0 * a.n ** 3 * calls / (cp.cuda.get_elapsed_time(s, e) / 1e3)

    def load(seconds: float) -> None:
        t_end = time.perf_counter() + seconds
        while time.perf_counter() < t_end:
            for _ in range(max(1, calls // 2)):
                cp.matmul(x, y, out=z)
            cp.cuda.get_current_stream().synchronize()

    time.sleep(5.0)
    ref_state = state()
    ref = burst()
    trials, series = [], []
    order = [r for r in a.rests for _ in range(a.reps)]
    random.Random(0).shuffle(order)
    for i, r in enumerate(order):
        load(a.load)
        end = state()
        keep = r == max(a.rests) and order.index(r) == i      # the longest rest's first trial: its series
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < r:
            st = state()
            if keep:
                series.append({"dt": round(st["t"] - t0, 3), **st})
            time.sleep(0.02)
        start = state()
        rate = burst()
        trials.append({"rest_s": r, "rate": rate, "rel_to_rested": rate / ref, "end_of_load": end,
                       "burst_start": start})
        print(f"{dt} rest {r:4.1f} s: {rate / 1e12:7.1f} TFLOP/s ({rate / ref:.3f} of rested); start "
              f"{start['sm_mhz']} MHz, {start['temp_c']} C, avg {start['power_avg_w']:.0f} W, instant "
              f"{start['power_instant_w']}", flush=True)
    print(f"{dt}: rested {ref / 1e12:.1f} TFLOP/s at {ref_state['sm_mhz']} MHz", flush=True)
    return {"calls_per_burst": calls, "rested_rate": ref, "rested_state": ref_state, "trials": trials,
            "series": series}


if __name__ == "__main__":
    sys.exit(main())
