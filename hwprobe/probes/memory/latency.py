"""gpu.latency: load-to-use latency of L1, L2 and DRAM by pointer chasing.

One thread follows a random cycle of pointers, one per 128-byte line (so no two steps share a line), and
times the chase in-kernel with clock64 (cycles) and %globaltimer (ns). L1: a small set with plain loads after
an in-kernel warm-up pass. L2: a set well inside L2 with ld.global.cg (L1 bypassed), pre-warmed. DRAM: a set
>> L2 whose cycle visits 2 MiB pages in random order and the lines of a page in random order, so each step
misses the caches but not the TLB; a fully random order over the same set is reported beside it (TLB misses).

L2 sweep: the same L2 chase over sets from L2/16 to past L2. One SM sees its near L2 partition first; where
the set outgrows what that partition keeps for it (A100/H100: about half of L2), the chase is served from
the far partition, and the latency steps up inside L2. Such a step is reported as ``latency.l2_far``.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from hwprobe.curves import step_inside
from hwprobe.errors import Skip, VerificationError
from hwprobe.measurement import Measurement
from hwprobe.probes.base import probe
from hwprobe.probes.memory.chase import next_slots, page_local_cycle, random_cycle, slot_after
from hwprobe.probes.memory.common import CACHE_KERNELS, budget_bytes, info, release
from hwprobe.probes.memory.plan import log_sizes

STRIDE = 128               # bytes between slots: one L1/L2 line
PAGE = 2 << 20             # large-page size the TLB-friendly order stays within
OUT_SLOTS = 64             # calls recorded per point (warm-up + repeats must fit)
SWEEP_FROM, SWEEP_TO = 1 / 16, 2.0   # L2 latency sweep, in units of the reported L2
FAR_STEP = 1.10            # a latency step inside L2 counts as near/far when the plateaus differ this much


@probe(name="gpu.latency", target="gpu", family="memory",
       summary="Load-to-use latency (cycles and ns) of L1, L2 and DRAM by single-thread pointer chasing")
def run(ctx, l1_kib: int = 16, l2_mib: int | None = None, dram_mib: int | None = None,
        seed: int = 0, l2_sweep: bool = True) -> Iterator[Measurement]:
    """``l1_kib``: L1 set (default 16 KiB). ``l2_mib``: L2 set (default L2/4, at most 16 MiB).
    ``dram_mib``: DRAM set (default 8x L2, at least 512 MiB; quick 4x L2). ``l2_sweep``: latency vs set size
    across L2 (finds a near/far partition step)."""
    import cupy as cp

    from hwprobe.kernels import load

    release()
    dev = ctx.device
    rng = np.random.default_rng(seed)
    l2_set = (l2_mib << 20) if l2_mib else min(dev.l2_bytes // 4, 16 << 20)
    dram_set = (dram_mib << 20) if dram_mib else (4 * dev.l2_bytes if ctx.quick else max(8 * dev.l2_bytes, 512 << 20))
    dram_set = max(PAGE, dram_set // PAGE * PAGE)
    budget = budget_bytes()
    if dram_set > budget:
        dram_set = budget // PAGE * PAGE
        if dram_set < 2 * dev.l2_bytes:
            raise Skip(f"a DRAM chase set of 2x L2 does not fit in 25% of free memory ({budget / 2**20:.0f} MiB)")
    mod = load("mem_cache.cu", name_expressions=CACHE_KERNELS)
    out = cp.zeros(OUT_SLOTS * 4, dtype=cp.uint64)
    quick = ctx.quick
    # warm: in-kernel warm-up steps (None = one full pass); prewarm: one full pass in a launch before timing;
    # advance: each call continues the cycle where the previous stopped (DRAM: never revisit a line).
    points = [
        dict(metric="latency.l1", level="l1", set_bytes=l1_kib << 10, order="random", cg=0,
             steps=20_000 if quick else 100_000, warm=None, prewarm=False, advance=False),
        dict(metric="latency.l2", level="l2", set_bytes=l2_set, order="random", cg=1,
             steps=5_000 if quick else 20_000, warm=0, prewarm=True, advance=False),
        dict(metric="latency.dram", level="dram", set_bytes=dram_set, order="page_local", cg=1,
             steps=1_000 if quick else 4_000, warm=0, prewarm=False, advance=True),
        dict(metric="latency.dram.random", level=None, set_bytes=dram_set, order="random", cg=1,
             steps=1_000 if quick else 4_000, warm=0, prewarm=False, advance=True),
    ]
    for pt in points:
        try:
            yield _chase(ctx, mod, out, rng, **pt)
        except Exception as e:
            yield info(ctx, pt["metric"], f"pointer chase over {pt['set_bytes']} B failed", e, level=pt["level"])
        release()
    if l2_sweep:
        yield from _l2_sweep(ctx, mod, out, rng, min(int(SWEEP_TO * dev.l2_bytes), budget))


def far_step(sizes, seconds, l2: int):
    """The near/far step in an L2 latency curve: latency plateaus are flat to ~1%, so a 6% band, a 10%
    step, and two points are enough for the far plateau (the far half of L2 is one octave)."""
    return step_inside(sizes, [1 / s for s in seconds], l2, band=0.06, min_step=FAR_STEP, plateau_points=2)


def _l2_sweep(ctx, mod, out, rng, top: int) -> Iterator[Measurement]:
    """L2 chase latency vs set size; the curve goes into ``latency.l2.sweep``, a step inside L2 into
    ``latency.l2_far`` (the chase at a size in the middle of the far plateau, a real measurement).

    Each point walks its whole cycle once (prewarm), then the timed calls go on along the cycle: the steady
    state of a cyclic walk over the set, where a set larger than a cache level misses it on every step (the
    lines come back in the order they were evicted). Restarting each call at the same place would time only
    the few thousand lines one call visits, which always fit."""
    l2 = ctx.device.l2_bytes
    sizes = log_sizes(int(SWEEP_FROM * l2), top, per_octave=3 if ctx.quick else 6, align=1 << 16)
    chases: dict[int, Measurement] = {}
    for size in sizes:
        try:
            m = _chase(ctx, mod, out, rng, metric=f"latency.l2.sweep.{size}", level=None, set_bytes=size,
                       order="random", cg=1, steps=2_000 if ctx.quick else 4_000, warm=0, prewarm=True,
                       advance=True, repeats=3)
        except Exception as e:
            yield info(ctx, "latency.l2.sweep", f"pointer chase over {size} B failed", e)
            return
        finally:
            release()
        if m.valid:
            chases[size] = m
    curve = [{"bytes": s, "ns": m.value * 1e9, "cycles": m.params["cycles"]} for s, m in chases.items()]
    split = far_step(list(chases), [m.value for m in chases.values()], l2)
    text = ", ".join(f"{p['bytes'] / 2**20:.1f} MiB {p['ns']:.0f} ns" for p in curve)
    params = {"curve": curve, "l2_bytes": l2, "far_step_min": FAR_STEP,
              "unverified_bytes": [s for s in sizes if s not in chases]}
    if split is None:
        yield ctx.derived("latency.l2.sweep", 0.0, unit="", kind="info", params=params,
                          notes=[f"no near/far step in the L2 chase latency up to {0.9 * l2 / 2**20:.0f} MiB "
                                 f"(steps of at least {FAR_STEP - 1:.0%} sought): {text}"])
        return
    on_far = [s for s in chases if split.lower.lo_size <= s <= split.lower.hi_size]
    far_size = on_far[len(on_far) // 2]     # the middle of the far plateau
    step = (f"L2 chase latency steps {split.ratio:.2f}x at {split.size / 2**20:.1f} MiB "
            f"({split.size / l2:.2f} of L2): near partition {1e9 / split.upper.level:.0f} ns, far "
            f"{1e9 / split.lower.level:.0f} ns")
    params["split_bytes"] = split.size
    yield ctx.derived("latency.l2.sweep", split.size, unit="B", kind="info", params=params, notes=[f"{step};", text])
    far = chases[far_size]
    far.metric, far.level = "latency.l2_far", "l2_far"
    far.notes.append(step)
    yield far


def _chase(ctx, mod, out, rng, *, metric: str, level: str | None, set_bytes: int, order: str, cg: int, steps: int,
           warm: int | None, prewarm: bool, advance: bool, repeats: int | None = None) -> Measurement:
    import cupy as cp

    order_kind = order
    n = set_bytes // STRIDE
    order = random_cycle(n, rng) if order_kind == "random" else page_local_cycle(n, PAGE // STRIDE, rng)
    buf = cp.zeros(n * STRIDE // 8, dtype=cp.uint64)
    base = int(buf.data.ptr)
    ptrs = np.uint64(base) + next_slots(order).astype(np.uint64) * np.uint64(STRIDE)
    buf.reshape(n, STRIDE // 8)[:, 0] = cp.asarray(ptrs)
    warm_steps = n if warm is None else warm        # L1: one pass in the same kernel (L1 starts cold)
    k = mod.get_function(f"chase<{cg}>")
    calls: list[int] = []                           # start position (in `order`) of each call

    def launch(start_pos: int, w: int, s: int, slot: int) -> None:
        p = np.uint64(base + int(order[start_pos % n]) * STRIDE)
        k((1,), (32,), (p, np.int64(w), np.int64(s), out, np.int32(slot)))

    if prewarm:  # L2 keeps lines across launches: one full pass fills it
        launch(0, n, 0, OUT_SLOTS - 1)
    stride_calls = warm_steps + steps if advance else 0

    def fn() -> None:
        i = len(calls)
        start = i * stride_calls
        calls.append(start)
        launch(start, warm_steps, steps, i % (OUT_SLOTS - 1))

    warmup, repeats = 1, repeats or (3 if ctx.quick else 5)
    m = ctx.measure(metric, fn, work=steps, unit="s", kind="latency", warmup=warmup, repeats=repeats, level=level,
                    exec_unit="cuda_core")
    res = out.get().reshape(OUT_SLOTS, 4)
    timed = list(range(warmup, warmup + repeats))
    bad = [i for i in timed
           if int(res[i % (OUT_SLOTS - 1), 0]) != base + slot_after(order, calls[i] + warm_steps + steps) * STRIDE]
    cycles = np.array([res[i % (OUT_SLOTS - 1), 1] / steps for i in timed], dtype=float)
    ns = np.array([res[i % (OUT_SLOTS - 1), 2] / steps for i in timed], dtype=float)
    sm_mhz = m.clocks.sm_mhz if m.clocks and m.clocks.sm_mhz else None
    cyc = float(np.median(cycles))
    if np.all(ns > 0):
        sec, src = float(np.median(ns)) * 1e-9, "globaltimer"
        best = float(ns.min()) * 1e-9
    elif sm_mhz:
        sec, src = cyc / (sm_mhz * 1e6), "cycles / sampled SM clock"
        best = float(cycles.min()) / (sm_mhz * 1e6)
    else:
        raise VerificationError("no in-kernel time and no SM clock to convert cycles")
    m.value, m.best = sec, best
    m.params = {
        "cycles": cyc, "cycles_min": float(cycles.min()), "steps": steps, "warm_steps": warm_steps,
        "working_set_bytes": set_bytes, "stride_bytes": STRIDE, "order": order_kind,
        "load": "ld.global.cg (L1 bypassed)" if cg else "ld.global (L1 cached)", "ns_source": src,
        "event_s_per_step": float(np.median(m.samples_s)) / (warm_steps + steps),
    }
    if sm_mhz:
        m.params["ns_from_cycles"] = cyc / sm_mhz * 1e3
        if src == "globaltimer" and abs(cyc / sm_mhz * 1e3 - sec * 1e9) > 0.1 * sec * 1e9:
            m.notes.append("globaltimer and clock64/SM-clock disagree by > 10% (clock changed during the chase?)")
    if order_kind == "page_local":
        m.notes.append("TLB-friendly: 2 MiB pages in random order, lines within a page in random order")
    elif set_bytes > 4 * ctx.device.l2_bytes:
        m.notes.append("fully random over a set >> L2: includes TLB misses")
    m.verified = not bad
    if bad:
        m.valid = False
        m.flags.append(f"verification_failed: {len(bad)} chases ended at the wrong pointer")
    return m
