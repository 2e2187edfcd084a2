"""L2 read bandwidth: which access pattern reaches the L2's real rate, and where the all-SM curve leaves L2.

Third version (the first two, run on 2026-11-24, are in profiles/NOTES.md and tools/experiments/logs/): the
same l2_region kernel and variant with every block owning its rows ("private": no line requested twice at
once) against regions that co-running blocks read at once ("shared"); the established cache benchmark's own
pattern (flat grid, block b reads 512 KiB region b mod n) with ld.global.cg and with plain loads; gpu.cache's
old shared-set kernel as the reference. Every point's output is checked (every word is 1: each block's sum
counts its loads). Rate = bytes requested.
"""
import json
import os
import sys
import time

import cupy as cp
import numpy as np
from expkit import event_median_s

from hwprobe.kernels import load  # noqa: E402
from hwprobe.probes.memory import l2plan
from hwprobe.probes.memory.common import CACHE_KERNELS

OUT = os.environ.get("OUT", "/tmp")
MIB = 1 << 20
REGION = 256 << 10          # bytes per region (whole rows of block x U vectors)
dev = cp.cuda.Device()
SMS = dev.attributes["MultiProcessorCount"]
L2 = dev.attributes["L2CacheSize"]
mod = load("mem_cache.cu", name_expressions=CACHE_KERNELS + l2plan.kernel_names())
big = cp.ones(2 * L2 // 4 + (4 * MIB), dtype=cp.uint32)
outbuf = cp.zeros(1 << 22, dtype=cp.uint32)
rows = []


def occupancy(k, block):
    try:
        return int(cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(k.kernel.ptr, block, 0))
    except Exception:
        return 1


def timed(fn, reps: int = 3) -> float:
    return event_median_s(fn, reps)


def region_point(v: dict, size: int, target_s=0.002, plan_kind="private"):
    """Rate (B/s) of variant v over a set of ~size bytes, each block's sum checked. plan_kind: "private" (every
    block owns its rows: no line requested twice at once), "shared" (256 KiB regions that several co-running
    blocks read at once), "peer" (flat grid, block b reads 512 KiB region b mod n)."""
    var = l2plan.L2Variant(v["block"], v["unroll"], v["load"], v["bps"])
    k = mod.get_function(var.kernel)
    grid = SMS * v["bps"]
    if plan_kind == "private":
        plan = l2plan.private_plan(size, var, SMS)
    elif plan_kind == "shared":
        plan = l2plan.shared_plan(size, var, grid, 256 << 10)
    else:
        plan = l2plan.shared_plan(size, var, 1, l2plan.PEER_REGION)
    calls = [0]

    def launch(it, g):
        def fn():
            calls[0] += 1
            off = (calls[0] * 7919) % g if plan_kind != "peer" else 0
            k((g,), (v["block"],), (big, cp.uint64(plan.region_vecs), cp.uint64(plan.nregions), cp.uint32(it),
                                    cp.uint32(off), outbuf))
        return fn

    if plan_kind == "peer":
        g = 8 * SMS
        t = timed(launch(1, g), 1)
        g = min(int(g * target_s / t), outbuf.size)
        it = 1
    else:
        g = grid
        t = timed(launch(2, g), 1)
        it = max(2, int(2 * target_s / t))
    t = timed(launch(it, g))
    ok = bool(np.all(outbuf[:g].get() == l2plan.block_sum(plan, it)))
    return g * it * plan.region_vecs * 16 / t, plan.set_bytes, ok


def old_point(size: int, target_s=0.002):
    """gpu.cache's current device sweep (sweep_read<1>, 512 threads, 4 loads in flight, shared set)."""
    k = mod.get_function("sweep_read<1>")
    grid = SMS * min(occupancy(k, 512), 4)
    nvec = size // 16

    def launch(it):
        args = (big, cp.uint32(nvec), cp.uint64(0), cp.int32(0), cp.uint64(it), outbuf)
        return lambda: k((grid,), (512,), args)

    t = timed(launch(64), 1)
    it = max(16, int(64 * target_s / t))
    t = timed(launch(it))
    return grid * 512 * it * 4 * 16 / t, size, True


def name(v):
    return f"{l2plan.LOADS[v['load']].split()[0]:<26} U{v['unroll']:<2} b{v['block']:<4} x{v['bps']}/SM"


def main():
    t0 = time.time()
    print(f"{SMS} SMs, L2 {L2 / MIB:.0f} MiB")
    sizes = [int(2 * MIB * 2 ** (i / 4)) for i in range(0, 14)]   # 2 .. ~21 MiB
    sizes = [s for s in sizes if s <= 20 * MIB]
    old = [old_point(s)[0] for s in sizes]
    print(f"old sweep_read<1> (shared set, distinct vectors per step): median {np.median(old) / 1e12:.2f} TB/s")
    rows.append({"stage": "old", "sizes": sizes, "tbps": [x / 1e12 for x in old]})
    print("same kernel, same variant: private rows vs regions that co-running blocks share (8, 12, 16.5 MiB):")
    for v in ({"load": 1, "unroll": 4, "block": 256, "bps": 8}, {"load": 0, "unroll": 4, "block": 256, "bps": 8},
              {"load": 0, "unroll": 8, "block": 256, "bps": 4}, {"load": 0, "unroll": 4, "block": 128, "bps": 8}):
        for kind in ("private", "shared"):
            pts = []
            for s in (8 * MIB, 12 * MIB, int(16.5 * MIB) + 4096):
                try:
                    pts.append(region_point(v, s, plan_kind=kind))
                except ValueError as e:       # a private plan needs a row per block: too small a set here
                    print(f"  {kind:8s} {name(v)} {s / MIB:.1f} MiB: {e}")
            if not pts:
                continue
            print(f"  {kind:8s} {name(v)}: {[round(p[0] / 1e12, 2) for p in pts]} TB/s ok={all(p[2] for p in pts)}")
            rows.append({"stage": "private_vs_shared", "plan": kind, **v, "tbps": [p[0] / 1e12 for p in pts]})
    print("the peer benchmark's pattern (flat grid, block b reads 512 KiB region b mod n) over its own sets:")
    for ld in (0, 2):
        v = {"load": ld, "unroll": 8, "block": 1024, "bps": 1}
        pts = [region_point(v, s, plan_kind="peer") for s in l2plan.peer_sizes(*l2plan.peer_window(L2))]
        print(f"  {name(v)}: median {np.median([p[0] for p in pts]) / 1e12:.2f} TB/s "
              f"({', '.join(f'{p[1] / MIB:.1f}:{p[0] / 1e12:.2f}' for p in pts)}) ok={all(p[2] for p in pts)}")
        rows.append({"stage": "peer", **v, "sizes": [p[1] for p in pts], "tbps": [p[0] / 1e12 for p in pts]})
    print(f"total {time.time() - t0:.0f} s")
    with open(os.path.join(OUT, "work", "l2_patterns.json") if os.path.isdir(os.path.join(OUT, "work"))
              else os.path.join(OUT, "l2_patterns.json"), "w") as f:
        json.dump(rows, f)


if __name__ == "__main__":
    sys.exit(main())
