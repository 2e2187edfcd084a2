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

from hwprobe import keys as K
from hwprobe.curves import level_exit, step_inside
from hwprobe.errors import Skip, VerificationError
from hwprobe.kernels import compile_ahead
from hwprobe.measurement import Measurement
from hwprobe.probes.base import probe
from hwprobe.probes.memory.chase import (
    page_local_cycle,
    random_cycle,
    slot_after,
    sparse_page_local_cycle,
    sparse_random_cycle,
)
from hwprobe.probes.memory.common import CACHE_KERNELS, budget_bytes, info, release
from hwprobe.probes.memory.plan import log_sizes
from hwprobe.vocab import ExecUnit, Kind

STRIDE = 128               # bytes between slots: one L1/L2 line
PAGE = 2 << 20             # large-page size the TLB-friendly order stays within
PAGE_VISIT = 512           # lines a sampled page-local chase visits in each page before the next
OUT_SLOTS = 64             # calls recorded per point (warm-up + repeats must fit)
SWEEP_FROM, SWEEP_TO = 1 / 16, 2.0   # L2 latency sweep, in units of the reported L2
FAR_STEP = 1.10            # a latency step inside L2 counts as near/far when the plateaus differ this much


MODULE = ("mem_cache.cu", (), CACHE_KERNELS)   # ``load``'s arguments: run loads it, compile_ahead compiles it early


@probe(name="gpu.latency", target="gpu", family="memory", ahead=compile_ahead(MODULE),
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
    mod = load(*MODULE)
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
             steps=1_000 if quick else 4_000, warm=0, prewarm=False, advance=True, flush=True),
        dict(metric="latency.dram.random", level=None, set_bytes=random_set(dram_set, budget, quick), order="random",
             cg=1, steps=1_000 if quick else 4_000, warm=0, prewarm=False, advance=True, flush=True,
             visit=8 * (1_000 if quick else 4_000)),
    ]
    yield _shared_latency(ctx, mod)
    done: dict[str, Measurement] = {}
    for pt in points:
        try:
            done[pt["metric"]] = m = _chase(ctx, mod, out, rng, **pt)
            if pt["metric"] == "latency.dram.random" and "latency.dram" in done:
                m.notes.append(random_note(m, done["latency.dram"]))
            yield m
        except Exception as e:
            yield info(ctx, pt["metric"], f"pointer chase over {pt['set_bytes']} B failed", e, level=pt["level"])
        release()
    if l2_sweep:
        yield from _l2_sweep(ctx, mod, out, rng, min(int(SWEEP_TO * dev.l2_bytes), budget))


SMEM_RING, SMEM_STRIDE = 4096, 1031   # words in the shared-memory ring (16 KiB) and the stride (coprime)
RANDOM_SET = 8 << 30                   # the fully random DRAM chase samples lines of a set this large (TLB reach)
TLB_COST = 1.02                        # random slower than page-local by this much: TLB misses are seen


def random_set(dram_set: int, budget: int, quick: bool) -> int:
    """Set size of the fully random DRAM chase: RANDOM_SET (quick: 2 GiB) where the memory budget allows it (only
    the visited lines are written, but the whole set must be allocated), else the page-local chase's set."""
    want = (2 << 30) if quick else RANDOM_SET
    return max(dram_set, min(want, budget) // PAGE * PAGE)


def random_note(rnd: Measurement, local: Measurement) -> str:
    """What the fully random chase adds over the page-local one, both with L2 flushed: TLB misses, or none."""
    r, p = rnd.params[K.CYCLES], local.params[K.CYCLES]
    span = f"random over {rnd.params[K.WORKING_SET_BYTES] / 2**30:.1f} GiB"
    if r >= TLB_COST * p:
        return (f"{span}: {r:.0f} cycles against {p:.0f} page-local ({r / p - 1:+.1%}): includes TLB misses "
                "(the page-local chase stays in one 2 MiB page for 16384 steps)")
    return (f"{span}: {r:.0f} cycles against {p:.0f} page-local ({r / p - 1:+.1%}): no TLB-miss cost seen at this "
            "span (within the GPU TLB's reach)")


def _shared_latency(ctx, mod) -> Measurement:
    """Shared-memory load latency: one thread, a dependent chain of ld.shared.u32 (mem_cache.cu smem_chase)."""
    import cupy as cp

    try:
        k = mod.get_function("smem_chase")
        out = cp.zeros(4, dtype=cp.uint64)
        steps = 20_000 if ctx.quick else 100_000
        runs = []
        for _ in range(3):
            k((1,), (256,), (np.uint32(SMEM_RING), np.uint32(SMEM_STRIDE), np.uint64(SMEM_RING), np.uint64(steps), out),
              shared_mem=SMEM_RING * 4)
            runs.append(out.get().copy())
    except Exception as e:
        return info(ctx, "latency.shared", "shared-memory chase failed", e, level="shared")
    p, cyc, ns, base = runs[-1]
    cycles = sorted(float(r[1]) / steps for r in runs)
    m = ctx.derived("latency.shared", float(ns) / steps * 1e-9, unit="s", kind=Kind.LATENCY, level="shared",
                    exec_unit=ExecUnit.CUDA_CORE,
                    params={K.CYCLES: cycles[1], "cycles_runs": cycles, "steps": steps, "ring_bytes": SMEM_RING * 4,
                            "load": "ld.shared.u32, address = the loaded value",
                            K.KERNEL_SM_MHZ: round(float(cyc) / float(ns) * 1e3, 1)},
                    notes=["one thread, a dependent chain of 4-byte shared loads (no address arithmetic between them)"])
    want = 4 * ((steps * SMEM_STRIDE) % SMEM_RING)        # one full lap of warm-up, then `steps` strides
    m.verified = all(int(r[0]) - int(r[3]) == want for r in runs)
    if not m.verified:
        m.valid = False
        m.flags.append("verification_failed: the chase did not end on the word the ring says")
    return m


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
    curve = [{"bytes": s, "ns": m.value * 1e9, "cycles": m.params[K.CYCLES]} for s, m in chases.items()]
    split = far_step(list(chases), [m.value for m in chases.values()], l2)
    text = ", ".join(f"{p['bytes'] / 2**20:.1f} MiB {p['ns']:.0f} ns" for p in curve)
    params = {K.CURVE: curve, "l2_bytes": l2, "far_step_min": FAR_STEP,
              "unverified_bytes": [s for s in sizes if s not in chases]}
    yield l2_capacity_check(ctx, list(chases), [m.value for m in chases.values()], l2,
                            split.lower.lo_size if split else None)
    if split is None:
        yield ctx.derived("latency.l2.sweep", 0.0, unit="", kind=Kind.INFO, params=params,
                          notes=[f"no near/far step in the L2 chase latency up to {0.9 * l2 / 2**20:.0f} MiB "
                                 f"(steps of at least {FAR_STEP - 1:.0%} sought): {text}"])
        return
    on_far = [s for s in chases if split.lower.lo_size <= s <= split.lower.hi_size]
    far_size = on_far[len(on_far) // 2]     # the middle of the far plateau
    step = (f"L2 chase latency steps {split.ratio:.2f}x at {split.size / 2**20:.1f} MiB "
            f"({split.size / l2:.2f} of L2): near partition {1e9 / split.upper.level:.0f} ns, far "
            f"{1e9 / split.lower.level:.0f} ns")
    params[K.SPLIT_BYTES] = split.size
    yield ctx.derived("latency.l2.sweep", split.size, unit="B", kind=Kind.INFO, params=params, notes=[f"{step};", text])
    far = chases[far_size]
    far.metric, far.level = "latency.l2_far", "l2_far"
    far.notes.append(step)
    yield far


def l2_capacity_check(ctx, sizes, seconds, l2: int, far_from: float | None) -> Measurement:
    """The physical L2 as one SM's chase sees it: where the latency leaves its last L2 plateau (the far one,
    where there is a near/far step) for DRAM, by ``curves.level_exit`` (10% above the plateau, confirmed by the
    next point). Reported as ``latency.l2.capacity``, never above the device-reported size; "consistent" when
    the exit lies within 15% of it."""
    start = far_from if far_from is not None else (sizes[0] if sizes else 0)
    ex = level_exit(sizes, seconds, start) if len(sizes) >= 4 else None
    if ex is None:
        return info(ctx, "latency.l2.capacity", "the L2 chase latency never leaves its L2 plateau",
                    f"sizes up to {max(sizes, default=0) / 2**20:.0f} MiB", level="l2")
    consistent = abs(ex.size / l2 - 1) <= 0.15
    m = ctx.derived("latency.l2.capacity", min(ex.size, l2), unit="B", kind=Kind.CAPACITY, level="l2",
                    params={"exit_bytes": ex.size, "bracket": list(ex.bracket), K.REPORTED_BYTES: l2,
                            "consistent": consistent, K.PRIMARY: False,
                            "plateau_ns": 1e9 / ex.level, "after_ns": 1e9 / ex.after},
                    notes=[f"single-SM chase: latency leaves the L2 plateau ({1e9 / ex.level:.0f} ns) for DRAM between "
                           f"{ex.bracket[0] / 2**20:.1f} and {ex.bracket[1] / 2**20:.1f} MiB, at "
                           f"{ex.size / 2**20:.1f} MiB = {ex.size / l2:.2f} of the reported {l2 / 2**20:.0f} MiB"
                           + ("" if consistent else " (more than 15% off the reported size)")])
    if not consistent:
        m.flags.append("capacity_mismatch")
    return m


def visit_order(kind: str, n: int, rng, visit: int | None = None) -> np.ndarray:
    """The slots a chase visits, in order (a cycle): every one of the ``n`` slots (``visit`` None) or a sample of
    ``visit`` of them; "random" anywhere in the set, "page_local" one 2 MiB page at a time."""
    per_page = PAGE // STRIDE
    if visit is None:
        return random_cycle(n, rng) if kind == "random" else page_local_cycle(n, per_page, rng)
    if kind == "random":
        return sparse_random_cycle(n, visit, rng)
    return sparse_page_local_cycle(n, per_page, visit, min(per_page, PAGE_VISIT), rng)


def flush_l2(l2_bytes: int) -> None:
    """Write 2x L2 of other data, so no line of a chase set written before is still in L2."""
    import cupy as cp

    scratch = cp.empty(2 * l2_bytes // 4, dtype=cp.uint32)
    scratch.fill(0x5A5A5A5A)
    cp.cuda.get_current_stream().synchronize()


def _chase(ctx, mod, out, rng, *, metric: str, level: str | None, set_bytes: int, order: str, cg: int, steps: int,
           warm: int | None, prewarm: bool, advance: bool, repeats: int | None = None, flush: bool = False,
           visit: int | None = None) -> Measurement:
    """``flush``: write 2x L2 of other data after the chase set is built, so the set's own writes leave no line
    in L2 (DRAM points). ``visit``: chase a sample of this many slots of the set instead of all of them."""
    import cupy as cp

    n = set_bytes // STRIDE
    visits = visit_order(order, n, rng, visit)
    k_slots = len(visits)
    buf = cp.empty(n * STRIDE // 8, dtype=cp.uint64) if visit else cp.zeros(n * STRIDE // 8, dtype=cp.uint64)
    base = int(buf.data.ptr)
    ptrs = np.uint64(base) + np.roll(visits, -1).astype(np.uint64) * np.uint64(STRIDE)
    buf.reshape(n, STRIDE // 8)[cp.asarray(visits), 0] = cp.asarray(ptrs)
    if flush:
        flush_l2(ctx.device.l2_bytes)
    warm_steps = k_slots if warm is None else warm   # L1: one pass in the same kernel (L1 starts cold)
    k = mod.get_function(f"chase<{cg}>")
    calls: list[int] = []                           # start position (in `visits`) of each call

    def launch(start_pos: int, w: int, s: int, slot: int) -> None:
        p = np.uint64(base + int(visits[start_pos % k_slots]) * STRIDE)
        k((1,), (32,), (p, np.int64(w), np.int64(s), out, np.int32(slot)))

    if prewarm:  # L2 keeps lines across launches: one full pass fills it
        launch(0, k_slots, 0, OUT_SLOTS - 1)
    stride_calls = warm_steps + steps if advance else 0

    def fn() -> None:
        i = len(calls)
        start = i * stride_calls
        calls.append(start)
        launch(start, warm_steps, steps, i % (OUT_SLOTS - 1))

    warmup, repeats = 1, repeats or (3 if ctx.quick else 5)
    m = ctx.measure(metric, fn, work=steps, unit="s", kind=Kind.LATENCY, warmup=warmup, repeats=repeats, level=level,
                    exec_unit=ExecUnit.CUDA_CORE)
    res = out.get().reshape(OUT_SLOTS, 4)
    timed = list(range(warmup, warmup + repeats))
    bad = [i for i in timed
           if int(res[i % (OUT_SLOTS - 1), 0]) != base + slot_after(visits, calls[i] + warm_steps + steps) * STRIDE]
    cycles = np.array([res[i % (OUT_SLOTS - 1), 1] / steps for i in timed], dtype=float)
    ns = np.array([res[i % (OUT_SLOTS - 1), 2] / steps for i in timed], dtype=float)
    _fill(ctx, m, cycles, ns, steps=steps, warm_steps=warm_steps, set_bytes=set_bytes, order_kind=order, cg=cg)
    m.params.update(visited_slots=k_slots, l2_flushed=flush)
    if order == "page_local":
        m.notes.append("TLB-friendly: 2 MiB pages in random order, lines within a page in random order")
    if flush:
        m.notes.append("L2 flushed after the set was written (2x L2 of other data), so no step hits a line the "
                       "set's own initialisation left in L2")
    if (warmup + repeats) * stride_calls > k_slots and advance:
        m.notes.append("the timed calls wrapped around the cycle: some lines were visited twice")
    m.verified = not bad
    if bad:
        m.valid = False
        m.flags.append(f"verification_failed: {len(bad)} chases ended at the wrong pointer")
    return m


def _fill(ctx, m: Measurement, cycles, ns, *, steps: int, warm_steps: int, set_bytes: int, order_kind: str,
          cg: int) -> None:
    """Value (s per load), params and notes of a chase from its per-call cycles and globaltimer ns per step."""
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
        K.CYCLES: cyc, "cycles_min": float(cycles.min()), "steps": steps, "warm_steps": warm_steps,
        "working_set_bytes": set_bytes, "stride_bytes": STRIDE, "order": order_kind,
        "load": "ld.global.cg (L1 bypassed)" if cg else "ld.global (L1 cached)", "ns_source": src,
        "event_s_per_step": float(np.median(m.samples_s)) / (warm_steps + steps),
    }
    if sm_mhz:
        m.params["ns_from_cycles"] = cyc / sm_mhz * 1e3
        if src == "globaltimer" and abs(cyc / sm_mhz * 1e3 - sec * 1e9) > 0.1 * sec * 1e9:
            m.notes.append("globaltimer and clock64/SM-clock disagree by > 10% (clock changed during the chase?)")
