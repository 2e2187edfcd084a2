"""Latency paths on the device, each checked: shared-memory latency; why latency.dram.random ran faster than the
page-local chase (L2 lines left by the set's own initialisation? TLB reach?); the per-SM L2 latency map in both
modes, its raw per-load cycles kept for analysis (l2map_<mode>.npz) and rendered (l2map_<mode>.png); and the
Hopper paths (distributed shared memory, TMA by tile size) through gpu.hopper_mem.
"""
import json
import os
import time

import cupy as cp
import numpy as np

from hwprobe import device, probes
from hwprobe.kernels import load
from hwprobe.probes.memory import hopper, l2map, latency
from hwprobe.probes.memory.common import CACHE_KERNELS, release
from hwprobe.specs.live import device_theory
from hwprobe.timing import sampler_for

OUT = os.environ.get("OUT", "/tmp")
WORK = os.path.join(OUT, "work") if os.path.isdir(os.path.join(OUT, "work")) else OUT
MIB, GIB = 1 << 20, 1 << 30

dev = device.select("0")
sampler = sampler_for(dev)
theory = device_theory(dev)


def ctx_for(name, quick=False):
    return probes.ProbeContext(target="gpu", device=dev, sampler=sampler, probe_name=name, quick=quick)


def show(m):
    p = {k: v for k, v in m.params.items() if k not in ("map", "variants")}
    print(f"  {m.metric:34s} {m.kind:8s} {m.value:.4g} {m.unit} verified={m.verified} valid={m.valid} "
          f"status={m.status} {m.reason} params={p}")


def dram_latency():
    print("== DRAM chase: page-local vs random, L2 flushed or not, set size")
    ctx = ctx_for("gpu.latency")
    mod = load("mem_cache.cu", name_expressions=CACHE_KERNELS)
    out = cp.zeros(latency.OUT_SLOTS * 4, dtype=cp.uint64)
    rng = np.random.default_rng(0)
    rows = []
    for order in ("page_local", "random"):   # the committed probe's way: pointers written in slot order, no flush
        cyc = old_way(mod, out, order, 512 * MIB, np.random.default_rng(1))
        rows.append({"set_mib": 512, "old_way": True, "order": order, "cycles": cyc})
        print(f"  set    512 MiB old way (slot-order writes, no flush) {order:10s} {cyc:7.1f} cycles")
    cases = [(512 * MIB, None, False), (512 * MIB, None, True)]
    cases += [(s, 60_000, True) for s in (2 * GIB, 8 * GIB, 32 * GIB)]
    for set_bytes, visit, flush in cases:
        for order in ("page_local", "random"):
            try:
                m = latency._chase(ctx, mod, out, rng, metric=f"x.{order}", level=None, set_bytes=set_bytes,
                                   order=order, cg=1, steps=4000, warm=0, prewarm=False, advance=True, flush=flush,
                                   visit=visit)
                rows.append({"set_mib": set_bytes // MIB, "visit": visit, "flush": flush, "order": order,
                             "cycles": m.params["cycles"], "ns": m.value * 1e9, "verified": m.verified})
                print(f"  set {set_bytes // MIB:6d} MiB visit {visit or 'all':>6} flush {flush!s:5} {order:10s} "
                      f"{m.params['cycles']:7.1f} cycles {m.value * 1e9:6.1f} ns verified={m.verified}")
            except Exception as e:
                print(f"  set {set_bytes // MIB} {order} failed: {type(e).__name__}: {e}")
            release()
    return rows


def old_way(mod, out, order_kind, set_bytes, rng, steps=4000, calls=6):
    """The chase as gpu.latency built it until now: a full cycle, pointers written in slot (address) order, so
    the last ~L2 of addresses stays in L2; no flush. Cycles per step of `calls` back-to-back calls."""
    from hwprobe.probes.memory.chase import next_slots, page_local_cycle, random_cycle

    n = set_bytes // 128
    order = random_cycle(n, rng) if order_kind == "random" else page_local_cycle(n, (2 << 20) // 128, rng)
    buf = cp.zeros(n * 16, dtype=cp.uint64)
    base = int(buf.data.ptr)
    buf.reshape(n, 16)[:, 0] = cp.asarray(np.uint64(base) + next_slots(order).astype(np.uint64) * np.uint64(128))
    k = mod.get_function("chase<1>")
    cyc = []
    for i in range(calls):
        p = np.uint64(base + int(order[(i * steps) % n]) * 128)
        k((1,), (32,), (p, np.int64(0), np.int64(steps), out, np.int32(i)))
    res = out.get().reshape(-1, 4)
    cyc = [res[i, 1] / steps for i in range(1, calls)]
    buf = None
    release()
    return float(np.median(cyc))


def smem():
    print("== shared-memory latency")
    ctx = ctx_for("gpu.latency")
    mod = load("mem_cache.cu", name_expressions=CACHE_KERNELS)
    show(latency._shared_latency(ctx, mod))


def l2maps():
    res = {}
    for mode in ("fresh", "chunk"):
        ctx = ctx_for("gpu.l2map")
        t0 = time.perf_counter()
        try:
            raw, n = l2map.collect(ctx, 512, mode)
        except Exception as e:
            print(f"== l2map {mode} failed: {type(e).__name__}: {e}")
            continue
        took = time.perf_counter() - t0
        np.savez_compressed(os.path.join(WORK, f"l2map_{mode}.npz"), **{k: np.asarray(v) for k, v in raw.items()})
        ms = list(l2map._report(ctx, raw, 512, mode, n))
        print(f"== l2map {mode}: collect {took:.2f} s, launch {raw['launch_s'] * 1e3:.1f} ms")
        for m in ms:
            show(m)
            if m.kind == "map":
                t = m.params["map"]
                print(l2map.map_text(t)[:2500])
                l2map.plot_sm_map(t, os.path.join(WORK, f"l2map_{mode}.png"), f"H200 L2 hit latency per SM ({mode})")
                res[mode] = {"near": m.params["near_spread"], "far": m.params["far_spread"]}
        lat = raw["lat"].reshape(len(raw["smid"]), 2, 512).astype(float)
        for p in (0, 1):
            h, e = np.histogram(lat[:, p].ravel(), bins=24, range=(0, 1200))
            print(f"  pass {p} histogram (cycles, 50/bin): " + " ".join(str(x) for x in h))
    return res


def hopper_paths():
    print("== gpu.hopper_mem")
    ctx = ctx_for("gpu.hopper_mem")
    t0 = time.perf_counter()
    ms = list(hopper.run(ctx))
    for m in ms:
        show(m)
    print(f"  ({time.perf_counter() - t0:.1f} s)")
    return [{"metric": m.metric, "value": m.value, "params": m.params, "verified": m.verified} for m in ms]


def main():
    t0 = time.time()
    out = {}
    for name, fn in (("smem", smem), ("l2map", l2maps), ("hopper", hopper_paths), ("dram", dram_latency)):
        try:
            out[name] = fn()
        except Exception as e:
            import traceback

            traceback.print_exc()
            print(f"{name} failed: {type(e).__name__}: {e}")
    print(f"total {time.time() - t0:.0f} s")
    with open(os.path.join(WORK, "mem_paths.json"), "w") as f:
        json.dump(out, f, default=str)


if __name__ == "__main__":
    main()
    sampler.close()
