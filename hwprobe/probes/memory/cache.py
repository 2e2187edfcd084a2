"""gpu.cache: read bandwidth against working-set size, the knees that give L1 and L2 capacity, and the
bandwidth of each level (L1, L2 and, where a step shows inside L2, its near and far partitions), plus
shared-memory bandwidth per SM.

Two sweeps: per SM (each block, one per SM, reads its own set through L1, with the L1/shared carve-out set to
the largest L1, up to 8x the L1/shared array) and device-wide (every thread reads one shared set with
ld.global.cg, so L1 is bypassed and L2 is what is swept, up to 4x L2 where DRAM takes over). A level's capacity
is where the curve first falls 10% below its plateau (hwprobe.curves.plateau_exit); the bracketing pair
of sizes is refined before the capacity is reported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from hwprobe.curves import plateau_exit, step_inside
from hwprobe.errors import Skip, VerificationError
from hwprobe.measurement import Measurement
from hwprobe.probes.base import probe
from hwprobe.probes.memory.common import CACHE_KERNELS, blocks_per_sm, budget_bytes, info, release, time_call
from hwprobe.probes.memory.plan import log_sizes, refine_between
from hwprobe.timing import clock_mhz

L1_SWEEP_FACTOR = 8        # the per-SM sweep goes to 8x the L1/shared array
EXIT_DROP = 0.10           # a level's capacity: where bandwidth first falls 10% below its plateau
SWEEP_S = 0.002            # one timed call per sweep point
CEILING_S = 0.004          # one timed call for a level's ceiling
PER_SM_BLOCK = 1024
DEVICE_BLOCK = 512
LOADS_PER_ITER = 4         # sweep_read unrolls 4 loads of 16 B per iteration
SMEM_BLOCK, SMEM_VECS = 256, 8  # must match mem_cache.cu


@probe(name="gpu.cache", target="gpu", family="memory",
       summary="L1/L2 bandwidth and capacity from a working-set sweep, L2 partitions, shared-memory bandwidth")
def run(ctx, per_octave: int | None = None, refine: bool = True, shared: bool = True) -> Iterator[Measurement]:
    """``per_octave``: sweep points per doubling of the working set (default 4, quick 3). ``refine``: add
    points inside each knee's bracket before estimating capacity. ``shared``: measure shared memory too."""
    import cupy as cp

    from hwprobe.kernels import load

    release()
    dev = ctx.device
    ppo = per_octave or (3 if ctx.quick else 4)
    l1_guess = l1_reported(dev)
    l1_hi = L1_SWEEP_FACTOR * l1_guess
    l2_hi = 4 * dev.l2_bytes
    need = max(dev.sms * l1_hi, l2_hi)
    if need > budget_bytes():
        raise Skip(f"the sweeps need {need / 2**20:.0f} MiB, more than 25% of free device memory")
    mod = load("mem_cache.cu", name_expressions=CACHE_KERNELS)

    # --- per-SM sweep (L1) --------------------------------------------------------------------------------
    k_l1 = mod.get_function("sweep_read<0>")
    carve_note = _max_l1(k_l1)
    region_vecs = l1_hi // 16
    buf = cp.ones(dev.sms * region_vecs * 4, dtype=cp.uint32)   # every word 1: the check counts the loads
    out = cp.zeros(max(dev.sms, 1) * 64, dtype=cp.uint32)

    def per_sm_point(size: int, iters: int | None = None, target: float = SWEEP_S):
        nvec = size // 16
        grid, block = dev.sms, PER_SM_BLOCK

        def make(it: int):
            args = (buf, cp.uint32(nvec), cp.uint64(region_vecs), cp.int32(1), cp.uint64(it), out)
            return lambda: k_l1((grid,), (block,), args)

        it = iters or _iters_for(make, target)
        work = grid * block * it * LOADS_PER_ITER * 16
        return make(it), work, _count_check(out, grid, block * it * LOADS_PER_ITER * 4), it

    sizes = log_sizes(4 << 10, l1_hi, ppo, align=256)
    l1_pts = yield from _sweep(ctx, "per_sm", sizes, per_sm_point)
    if refine:
        l1_pts = yield from _refine(ctx, "per_sm", l1_pts, per_sm_point, _l1_window(l1_pts, l1_guess))
    yield from _report_l1(ctx, l1_pts, per_sm_point, l1_guess, carve_note)
    buf = None

    # --- device-wide sweep (L2, then DRAM) ----------------------------------------------------------------
    k_l2 = mod.get_function("sweep_read<1>")
    big = cp.ones(l2_hi // 4, dtype=cp.uint32)
    grid_l2 = dev.sms * min(blocks_per_sm(k_l2, DEVICE_BLOCK, fallback=2), 2048 // DEVICE_BLOCK)
    out_l2 = cp.zeros(grid_l2, dtype=cp.uint32)

    def device_point(size: int, iters: int | None = None, target: float = SWEEP_S):
        nvec = size // 16

        def make(it: int):
            args = (big, cp.uint32(nvec), cp.uint64(0), cp.int32(0), cp.uint64(it), out_l2)
            return lambda: k_l2((grid_l2,), (DEVICE_BLOCK,), args)

        it = iters or _iters_for(make, target)
        work = grid_l2 * DEVICE_BLOCK * it * LOADS_PER_ITER * 16
        return make(it), work, _count_check(out_l2, grid_l2, DEVICE_BLOCK * it * LOADS_PER_ITER * 4), it

    # Below grid x block x 16 B, threads of one step read the same vectors (a step's window wraps the set), so
    # the rate is not L2 bandwidth (the H200 showed a noisy 12-18 TB/s there): the sweep starts above it.
    start = max(512 << 10, grid_l2 * DEVICE_BLOCK * 16)
    sizes = log_sizes(start, l2_hi, ppo, align=4096)
    l2_pts = yield from _sweep(ctx, "device", sizes, device_point)
    if refine:
        l2_pts = yield from _refine(ctx, "device", l2_pts, device_point, _l2_window(dev.l2_bytes))
    yield from _report_l2(ctx, l2_pts, device_point, dev.l2_bytes)
    big = None
    release()

    if shared:
        yield from _shared(ctx, mod)


# ---------------------------------------------------------------------------------------------------------------

def _max_l1(kernel) -> str:
    """Ask for the smallest shared-memory carve-out (largest L1) for the L1 sweep kernel."""
    try:
        kernel.preferred_shared_memory_carveout = 0
        return "preferred shared-memory carve-out set to 0% (largest L1)"
    except Exception as e:
        return f"could not set the shared-memory carve-out ({type(e).__name__}: {e}); L1 may look smaller"


def _iters_for(make: Callable[[int], Callable[[], None]], target: float) -> int:
    """Iterations so one call lasts ``target``: time a short call, scale (kernel time is linear in iters)."""
    from hwprobe.timing import iterations_for

    probe_iters = 64
    f = make(probe_iters)
    f()
    t = time_call(f)
    return iterations_for(t / probe_iters, target, lo=16, hi=1 << 31)


def _count_check(out, grid: int, per_block: int) -> Callable[[], None]:
    """Every word read is 1, so each block's sum is the number of words it read (mod 2^32)."""
    expected = per_block % (1 << 32)

    def fn() -> None:
        got = out[:grid].get()
        wrong = int(np.count_nonzero(got != expected))
        if wrong:
            raise VerificationError(f"{wrong} of {grid} blocks read a wrong sum (want {expected}, got {got[0]})")
    return fn


def _sweep(ctx, scope: str, sizes: list[int], point) -> Iterator[Measurement]:
    """Measure each size as a "sweep" point; returns {size: bandwidth} for the knee analysis."""
    pts: dict[int, float] = {}
    for size in sizes:
        try:
            fn, work, check, it = point(size)
            m = ctx.measure(f"cache.sweep.{scope}.{size}", fn, work=work, unit="B/s", kind="sweep", check=check,
                            warmup=1, repeats=3, exec_unit="cuda_core",
                            params={"working_set_bytes": size, "scope": scope, "iters": it},
                            bytes_counted="bytes requested by 16-byte loads (all SMs)")
            if m.verified is not False:
                pts[size] = m.value
            yield m
        except Exception as e:
            yield info(ctx, f"cache.sweep.{scope}.{size}", f"sweep point {size} B failed", e,
                       params={"working_set_bytes": size, "scope": scope})
    return pts


def l1_reported(dev) -> int:
    """The unified L1/shared array per SM: the arch table's size (the device reports only the shared part)."""
    from hwprobe.specs.theory import arch_facts

    facts = arch_facts(dev.arch) or {}
    return int(facts.get("l1_smem_bytes_per_sm") or dev.l1_smem_bytes_per_sm or dev.smem_per_sm_bytes or 256 << 10)


def _l1_window(pts: dict[int, float], l1: int) -> tuple[float, float]:
    """Sizes surely inside L1: the smallest swept up to half the L1/shared array."""
    return (min(pts) if pts else 0.0), l1 / 2


def _l2_window(l2: int) -> tuple[float, float]:
    """Sizes surely inside L2 and well above L1 x SMs: L2/30 to L2/3 (2-20 MiB on a 60 MiB L2)."""
    return l2 / 30, l2 / 3


def _exit(pts: dict[int, float], window: tuple[float, float]):
    sizes = sorted(pts)
    if len(sizes) < 4:
        return None
    return plateau_exit(sizes, [pts[s] for s in sizes], *window, drop=EXIT_DROP)


def _refine(ctx, scope: str, pts: dict[int, float], point, window: tuple[float, float]) -> Iterator[Measurement]:
    """Measure extra sizes inside the bracket where the curve leaves its plateau, so the capacity is resolved
    to a few percent."""
    ex = _exit(pts, window)
    if ex is None:
        return pts
    extra = [s for s in refine_between(int(ex.bracket[0]), int(ex.bracket[1]), align=256) if s not in pts]
    more = yield from _sweep(ctx, scope, extra, point)
    return {**pts, **more}


def _ceiling(ctx, metric: str, point, size: int, level: str, scope: str, notes: list[str]) -> Measurement:
    fn, work, check, it = point(size, target=CEILING_S)
    return ctx.measure(metric, fn, work=work, unit="B/s", kind="memory", check=check, level=level,
                       exec_unit="cuda_core", bytes_counted="bytes requested by 16-byte loads (all SMs)",
                       params={"working_set_bytes": size, "scope": scope, "iters": it}, notes=notes)


def _best_in(pts: dict[int, float], lo: float, hi: float) -> int | None:
    inside = [s for s in pts if lo <= s <= hi]
    return max(inside, key=lambda s: pts[s]) if inside else None


def _median_point(pts: dict[int, float], lo: float, hi: float) -> tuple[int | None, list[int]]:
    """The size whose value is the (lower) median of the points in [lo, hi], and those sizes."""
    inside = sorted((s for s in pts if lo <= s <= hi), key=lambda s: pts[s])
    return (inside[(len(inside) - 1) // 2] if inside else None), sorted(inside)


def _report_l1(ctx, pts: dict[int, float], point, l1_reported: int, carve_note: str) -> Iterator[Measurement]:
    if len(pts) < 6:
        yield info(ctx, "cache.l1", "too few per-SM sweep points for plateau detection", f"{len(pts)} points")
        return
    lo, hi = _l1_window(pts, l1_reported)
    best = _best_in(pts, lo, hi)
    if best is None:
        yield info(ctx, "cache.l1", "no per-SM sweep point inside L1", f"{lo:.0f}-{hi:.0f} B")
        return
    yield _ceiling(ctx, "cache.l1.read", point, best, "l1", "per_sm",
                   [f"best point of the L1 plateau ({lo / 1024:.0f}-{hi / 1024:.0f} KiB per SM)", carve_note])
    ex = _exit(pts, (lo, hi))
    if ex is None:
        yield info(ctx, "cache.l1.capacity", "the per-SM sweep never falls 10% below its plateau",
                   "L1 larger than the sweep?")
        return
    notes = [carve_note,
             f"capacity = where bandwidth first falls {EXIT_DROP:.0%} below the plateau "
             f"({ex.level / 1e12:.2f} TB/s, median of {lo / 1024:.0f}-{hi / 1024:.0f} KiB), between "
             f"{ex.bracket[0] / 1024:.1f} and {ex.bracket[1] / 1024:.1f} KiB, log-interpolated",
             f"L1/shared array per SM (arch table): {l1_reported / 1024:.0f} KiB; measured/reported "
             f"{ex.size / l1_reported:.2f} (the L1 part is the array minus the shared carve-out, which the kernel's "
             f"own static shared memory keeps >= the smallest step)"]
    yield ctx.derived("cache.l1.capacity", ex.size, unit="B", kind="capacity", level="l1",
                      params={"bracket": list(ex.bracket), "reported_bytes": l1_reported, "drop": EXIT_DROP,
                              "plateau_bps": ex.level, "value_after_bps": ex.after},
                      notes=notes)


def _report_l2(ctx, pts: dict[int, float], point, l2_reported: int) -> Iterator[Measurement]:
    if len(pts) < 6:
        yield info(ctx, "cache.l2", "too few device sweep points for plateau detection", f"{len(pts)} points")
        return
    lo, hi = _l2_window(l2_reported)
    # L2 bandwidth: the median of the sweep points between L2/30 and L2/3 (robust to the odd fast point), then
    # re-measured at the size whose value is that median, with a longer sample.
    mid, inside = _median_point(pts, lo, hi)
    if mid is not None:
        vals = [pts[s] for s in inside]
        notes = [f"L2 plateau: median of {len(inside)} sweep points between {lo / 2**20:.1f} and "
                 f"{hi / 2**20:.1f} MiB = {float(np.median(vals)) / 1e12:.2f} TB/s (range "
                 f"{min(vals) / 1e12:.2f}-{max(vals) / 1e12:.2f}); re-measured at {mid / 2**20:.1f} MiB"]
        yield _ceiling(ctx, "cache.l2.read", point, mid, "l2", "device", notes)
    ex = _exit(pts, (lo, hi))
    if ex is None:
        yield info(ctx, "cache.l2.capacity", "the device sweep never falls 10% below its L2 plateau",
                   "L2 larger than the sweep?")
    else:
        yield ctx.derived(
            "cache.l2.capacity", ex.size, unit="B", kind="capacity", level="l2",
            params={"bracket": list(ex.bracket), "reported_bytes": l2_reported, "drop": EXIT_DROP,
                    "plateau_bps": ex.level, "value_after_bps": ex.after},
            notes=[f"capacity = where bandwidth first falls {EXIT_DROP:.0%} below the L2 plateau "
                   f"({ex.level / 1e12:.2f} TB/s), between {ex.bracket[0] / 2**20:.1f} and "
                   f"{ex.bracket[1] / 2**20:.1f} MiB, log-interpolated",
                   f"device-reported L2 {l2_reported / 2**20:.0f} MiB; measured/reported "
                   f"{ex.size / l2_reported:.2f}"])
    # Near/far partitions: only a clear step (two plateaus >= 15% apart) with both sides inside L2.
    sizes = sorted(s for s in pts if s >= lo)
    split = step_inside(sizes, [pts[s] for s in sizes], l2_reported)
    if split is None:
        yield ctx.derived("cache.l2.partitions", 0.0, unit="", kind="info", level="l2",
                          notes=[f"no near/far split seen: no bandwidth step between {lo / 2**20:.1f} MiB and "
                                 f"{0.9 * l2_reported / 2**20:.0f} MiB in this all-SM read sweep (gpu.latency's "
                                 f"single-SM L2 sweep is where partitions show: latency.l2.sweep)"])
        return
    n_best = _best_in(pts, split.upper.lo_size, split.upper.hi_size)
    f_best = _best_in(pts, split.lower.lo_size, split.lower.hi_size)
    note = (f"step inside L2 at {split.size / 2**20:.1f} MiB ({split.size / l2_reported:.2f} of L2): data in the "
            f"near partition vs data also served from the far one")
    yield _ceiling(ctx, "cache.l2_near.read", point, n_best, "l2_near", "device", [note])
    yield _ceiling(ctx, "cache.l2_far.read", point, f_best, "l2_far", "device", [note])


def _shared(ctx, mod) -> Iterator[Measurement]:
    """Shared-memory read bandwidth: 128-bit conflict-free LDS, all SMs, bytes = 16 per lane per load."""
    import cupy as cp

    dev = ctx.device
    try:
        k = mod.get_function("smem_read")
        per_sm = blocks_per_sm(k, SMEM_BLOCK, fallback=4)
        grid = dev.sms * per_sm
        out = cp.zeros(grid * SMEM_BLOCK, dtype=cp.uint32)
        clk = cp.zeros(2, dtype=cp.uint64)

        def make(it: int):
            args = (cp.uint64(it), out, clk)
            return lambda: k((grid,), (SMEM_BLOCK,), args)

        iters = _iters_for(make, CEILING_S)
        t = np.arange(SMEM_BLOCK, dtype=np.uint64)
        per_thread = sum(16 * (t + SMEM_BLOCK * j) + 6 for j in range(SMEM_VECS))
        expected = (per_thread * np.uint64(iters)) % np.uint64(1 << 32)

        def check() -> None:
            got = out.get().reshape(grid, SMEM_BLOCK).astype(np.uint64)
            wrong = int(np.count_nonzero(got != expected[None, :]))
            if wrong:
                raise VerificationError(f"{wrong} threads read wrong shared-memory sums")

        m = ctx.measure(
            "cache.shared.read", make(iters), work=grid * SMEM_BLOCK * SMEM_VECS * 16 * iters, unit="B/s",
            kind="memory", check=check, level="shared", exec_unit="cuda_core",
            bytes_counted="bytes loaded from shared memory (16 B per thread per LDS.128)",
            params={"blocks_per_sm": per_sm, "block": SMEM_BLOCK, "iters": iters, "access": "ld.shared.v4.u32"},
            notes=["theory: 128 B/clk/SM on Volta and later"],
        )
        cyc, ns = (int(x) for x in clk.get())
        if cyc and ns:      # the last launch's own clock (block 0's clock64 over globaltimer): theory uses it
            m.params["kernel_sm_mhz"] = round(float(clock_mhz(cyc, ns)), 1)
        yield m
    except Exception as e:
        yield info(ctx, "cache.shared.read", "shared-memory bandwidth failed", e)
