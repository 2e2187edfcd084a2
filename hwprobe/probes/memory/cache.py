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

from hwprobe import keys as K
from hwprobe.curves import effective_capacity, plateau_exit, step_inside
from hwprobe.errors import Skip, VerificationError
from hwprobe.kernels import compile_ahead
from hwprobe.measurement import Measurement
from hwprobe.probes.base import probe
from hwprobe.probes.memory import l2plan
from hwprobe.probes.memory.common import CACHE_KERNELS, blocks_per_sm, budget_bytes, info, release, time_call
from hwprobe.probes.memory.plan import log_sizes, refine_between
from hwprobe.timing import clock_mhz, policy
from hwprobe.vocab import ExecUnit, Kind

L1_SWEEP_FACTOR = 8        # the per-SM sweep goes to 8x the L1/shared array
EXIT_DROP = 0.10           # a level's capacity: where bandwidth first falls 10% below its plateau
L2_SWEEP_TO = 2            # the all-SM sweeps go to 2x L2
STREAM_BLOCK = 512         # sweep_read<1>'s block in the L2 stream pattern
PER_SM_BLOCK = 1024
LOADS_PER_ITER = 4         # sweep_read unrolls 4 loads of 16 B per iteration
SMEM_BLOCK, SMEM_VECS = 256, 8  # must match mem_cache.cu


def _module() -> tuple:
    """``load``'s arguments for mem_cache.cu with the sweep and L2-plan kernels (run loads it, compile_ahead early)."""
    return ("mem_cache.cu", (), CACHE_KERNELS + l2plan.kernel_names())


@probe(name="gpu.cache", target="gpu", family="memory", ahead=compile_ahead(_module),
       summary="L1/L2 bandwidth and capacity from working-set sweeps, L2 near/far partitions, shared-memory bandwidth")
def run(ctx, per_octave: int | None = None, refine: bool = True, shared: bool = True,
        screen: bool = True) -> Iterator[Measurement]:
    """``per_octave``: sweep points per doubling of the working set (default 4, quick 3). ``refine``: add
    points inside each knee's bracket before estimating capacity. ``shared``: measure shared memory too.
    ``screen``: try the L2 pattern's variants first and sweep with the fastest (off: the first variant)."""
    from hwprobe.kernels import load

    release()
    dev = ctx.device
    ppo = per_octave or (3 if ctx.quick else 4)
    need = max(dev.sms * L1_SWEEP_FACTOR * l1_reported(dev), L2_SWEEP_TO * dev.l2_bytes + (4 << 20))
    if need > budget_bytes():
        raise Skip(f"the sweeps need {need / 2**20:.0f} MiB, more than 25% of free device memory")
    mod = load(*_module())
    yield from _l1(ctx, mod, ppo, refine)
    release()
    yield from _l2(ctx, mod, ppo, refine, screen)
    release()
    if shared:
        yield from _shared(ctx, mod)


def _l1(ctx, mod, ppo: int, refine: bool) -> Iterator[Measurement]:
    """Per-SM sweep: block b (one per SM) reads its own set through L1, carve-out set to the largest L1."""
    import cupy as cp

    dev = ctx.device
    l1_guess = l1_reported(dev)
    l1_hi = L1_SWEEP_FACTOR * l1_guess
    k_l1 = mod.get_function("sweep_read<0>")
    carve_note = _max_l1(k_l1)
    region_vecs = l1_hi // 16
    buf = cp.ones(dev.sms * region_vecs * 4, dtype=cp.uint32)   # every word 1: the check counts the loads
    out = cp.zeros(max(dev.sms, 1) * 64, dtype=cp.uint32)

    def per_sm_point(size: int, iters: int | None = None, target: float = policy.rule("sweep").sample_s):
        nvec = size // 16
        grid, block = dev.sms, PER_SM_BLOCK

        def make(it: int):
            args = (buf, cp.uint32(nvec), cp.uint64(region_vecs), cp.int32(1), cp.uint64(it), out)
            return lambda: k_l1((grid,), (block,), args)

        it = iters or _iters_for(make, target)
        work = grid * block * it * LOADS_PER_ITER * 16
        return make(it), work, _count_check(out, grid, block * it * LOADS_PER_ITER * 4), it

    sizes = log_sizes(4 << 10, l1_hi, ppo, align=256)
    pts = yield from _sweep(ctx, "per_sm", sizes, per_sm_point)
    if refine:
        pts = yield from _refine(ctx, "per_sm", pts, per_sm_point, _l1_window(pts, l1_guess))
    yield from _report_l1(ctx, pts, per_sm_point, l1_guess, carve_note)


def _l2(ctx, mod, ppo: int, refine: bool, screen: bool) -> Iterator[Measurement]:
    """All-SM sweeps: the L2 ceiling with the fastest screened pattern that never has two requests in flight
    for one line; the shared-data curve (private rows moved to other SMs every launch) for the effective
    capacity; the peer benchmark's pattern over 2-20 MiB for comparison; a latency-bound curve that shows the
    near/far partition step."""
    import cupy as cp

    dev = ctx.device
    l2 = dev.l2_bytes
    lo, hi = l2plan.l2_window(l2)
    big = cp.ones((L2_SWEEP_TO * l2 + (4 << 20)) // 4, dtype=cp.uint32)
    out = cp.zeros(1 << 22, dtype=cp.uint32)
    run_l2 = L2Runner(ctx, mod, big, out)
    stream = run_l2.stream()
    screened = _screen(run_l2, stream, l2) if screen else []
    ok = [r for r in screened if r.get("median_bps")]
    best = max(ok, key=lambda r: r["median_bps"])["variant"] if ok else "stream"
    if best == "stream":
        point = stream
        sizes = log_sizes(max(l2 // 32, stream.min_size), L2_SWEEP_TO * l2, ppo, align=1 << 16)
    else:
        planned = l2plan.sweep_plan([best], log_sizes(l2 // 32, L2_SWEEP_TO * l2, ppo, align=1 << 16), dev.sms)
        point, sizes = run_l2.private([best], planned), list(planned)
    pts = yield from _sweep(ctx, "device", sizes, point)
    if best != "stream" and sum(lo <= s <= hi for s in pts) < 3:
        # the winning private-rows plan left too few sizes inside the window (a quick sweep of a 50 MiB L2):
        # the stream kernel runs at any size, so it takes the ceiling here, and says so
        ctx.log(f"{best}: too few planned sizes inside {lo / 2**20:.1f}-{hi / 2**20:.1f} MiB; stream kernel instead")
        best, point = "stream", stream
        pts = yield from _sweep(ctx, "device", log_sizes(max(l2 // 32, stream.min_size), L2_SWEEP_TO * l2, ppo,
                                                         align=1 << 16), point)
    if refine and best == "stream":
        pts = yield from _refine(ctx, "device", pts, point, (lo, hi))
    yield from _report_merge_free(ctx, pts, point, l2, screened)
    cap_plan = l2plan.sweep_plan([l2plan.CAPACITY], log_sizes(l2 // 16, L2_SWEEP_TO * l2, 2 * ppo, align=1 << 16),
                                 dev.sms)
    cap = yield from _sweep(ctx, "shared_data", list(cap_plan), run_l2.private([l2plan.CAPACITY], cap_plan),
                            repeats=2)
    yield from _report_capacity(ctx, cap, l2)
    # the established benchmark's 512 KiB regions where the window holds 16 of them, else one row (128 KiB: a
    # small L2); sizes in whole regions, so a point's size is the set it really reads
    region = l2plan.PEER_REGION if hi >= 16 * l2plan.PEER_REGION else l2plan.PEER.row_bytes
    peer_sizes = sorted({max(region, s // region * region) for s in (*log_sizes(int(lo), int(hi), 2), int(hi))})
    flat_point = run_l2.peer(region)
    flat = yield from _sweep(ctx, "flat_grid", peer_sizes, flat_point, repeats=2)
    yield from _report_l2(ctx, flat, flat_point, l2)
    # the benchmark's own figure: its plain loads over its own sets (25 in 2-20 MiB), so the median is its median
    window = l2plan.peer_window(l2)
    plain = run_l2.peer(region, l2plan.PEER_PLAIN)
    bench = yield from _sweep(ctx, "peer_method", l2plan.peer_sizes(*window, region), plain, repeats=2)
    yield from _report_peer(ctx, bench, plain, window)
    low = yield from _sweep(ctx, "latency_bound", log_sizes(l2 // 16, L2_SWEEP_TO * l2, ppo + 1, align=1 << 16),
                            run_l2.low_mlp(), repeats=2)
    yield _partition_finding(ctx, low, l2)


class L2Runner:
    """Launches of l2_region as sweep points: each returns (fn, work, check, iters) for _sweep / _ceiling.
    Every call of fn moves the blocks' regions to other SMs (the ``off`` argument), so the set is data that all
    SMs share, while no two requests in flight ask for the same line (the private plan)."""

    def __init__(self, ctx, mod, big, out):
        self.ctx, self.mod, self.big, self.out = ctx, mod, big, out
        self.calls = 0

    def _launcher(self, v: l2plan.L2Variant, plan: l2plan.RegionPlan, rotate: bool):
        import cupy as cp

        k = self.mod.get_function(v.kernel)

        def make(it: int, grid: int | None = None):
            g = grid or plan.grid

            def fn() -> None:
                self.calls += 1
                off = (self.calls * 7919) % g if rotate else 0
                k((g,), (v.block,), (self.big, cp.uint64(plan.region_vecs), cp.uint64(plan.nregions), cp.uint32(it),
                                     cp.uint32(off), self.out))
            return fn
        return make

    def _checked(self, plan: l2plan.RegionPlan, it: int, grid: int) -> Callable[[], None]:
        want = l2plan.block_sum(plan, it)

        def check() -> None:
            got = self.out[:grid].get()
            wrong = int(np.count_nonzero(got != want))
            if wrong:
                raise VerificationError(f"{wrong} of {grid} blocks read a wrong sum (want {want}, got {got[0]})")
        return check

    def stream(self):
        """sweep_read<1>: every thread walks the whole set, neighbouring threads on neighbouring vectors, the
        grid's window (grid x 512 x 16 B) moving along it: no two requests in flight for one vector once the set
        is larger than the window (min_size)."""
        import cupy as cp

        sms = self.ctx.device.sms
        k = self.mod.get_function("sweep_read<1>")
        grid = sms * min(blocks_per_sm(k, STREAM_BLOCK, fallback=2), 2048 // STREAM_BLOCK)

        def point(size: int, iters: int | None = None, target: float = policy.rule("sweep").sample_s):
            nvec = size // 16

            def make(it: int):
                args = (self.big, cp.uint32(nvec), cp.uint64(0), cp.int32(0), cp.uint64(it), self.out)
                return lambda: k((grid,), (STREAM_BLOCK,), args)

            it = iters or _iters_for(make, target)
            work = grid * STREAM_BLOCK * it * LOADS_PER_ITER * 16
            return make(it), work, _count_check(self.out, grid, STREAM_BLOCK * it * LOADS_PER_ITER * 4), it
        point.label = (f"stream: every thread walks the whole set, {STREAM_BLOCK} threads x {grid // sms} blocks/SM, "
                       f"{LOADS_PER_ITER} x 16 B ld.global.cg per step, neighbouring threads on neighbouring vectors")
        point.min_size = grid * STREAM_BLOCK * 16
        return point

    def private(self, ranked: list[l2plan.L2Variant], planned: dict[int, l2plan.L2Variant] | None = None):
        sms = self.ctx.device.sms
        planned = planned or {}

        def point(size: int, iters: int | None = None, target: float = policy.rule("sweep").sample_s, variant=None):
            v = variant or planned.get(size) or l2plan.choose(ranked, size, sms)
            plan = l2plan.private_plan(size, v, sms)
            make = self._launcher(v, plan, rotate=True)
            it = iters or _iters_for(make, target, probe_iters=2, lo=2)
            point.label = f"{v.label()}; set {plan.set_bytes} B"
            return make(it), l2plan.launch_bytes(plan, it), self._checked(plan, it, plan.grid), it
        return point

    def low_mlp(self):
        v, sms = l2plan.LOW_MLP, self.ctx.device.sms

        def point(size: int, iters: int | None = None, target: float = policy.rule("sweep").sample_s):
            plan = l2plan.shared_plan(size, v, sms, l2plan.LOW_MLP_REGION)
            make = self._launcher(v, plan, rotate=True)
            it = iters or _iters_for(make, target, probe_iters=2, lo=2)
            return make(it), l2plan.launch_bytes(plan, it), self._checked(plan, it, plan.grid), it
        point.label = v.label()
        return point

    def peer(self, region: int = l2plan.PEER_REGION, v: l2plan.L2Variant = l2plan.PEER):

        def point(size: int, iters: int | None = None, target: float = policy.rule("sweep").sample_s):
            plan = l2plan.shared_plan(size, v, 1, region)
            make = self._launcher(v, plan, rotate=False)
            probe = 4 * self.ctx.device.sms
            grid = min(iters or _iters_for(lambda g: make(1, g), target, probe_iters=probe, lo=probe),
                       self.out.size)
            flat = l2plan.RegionPlan(plan.region_vecs, plan.nregions, grid, False)
            return make(1, grid), l2plan.launch_bytes(flat, 1), self._checked(flat, 1, grid), grid
        point.label = (f"flat grid, block b reads region b mod n ({region >> 10} KiB), {v.block} threads x {v.unroll} "
                       f"loads of 16 B, {l2plan.LOADS[v.load]}")
        return point


def _screen(run_l2: L2Runner, stream, l2: int) -> list[dict]:
    """The stream kernel and each variant of l2plan.SCREEN (private plan) at two sizes well inside L2 that every
    variant can own (0.28 and 0.33 of L2), two timed calls each after a warm-up, the output checked; records
    with the median rate, or the error."""
    from hwprobe.timing import time_cuda

    sms = run_l2.ctx.device.sms
    sizes = [max(int(0.28 * l2), max(v.min_set(sms) for v in l2plan.SCREEN)), l2 // 3]
    private = run_l2.private(list(l2plan.SCREEN))
    recs = []
    screen = policy.rule("l2_screen")
    for v in ("stream", *l2plan.SCREEN):
        rec: dict = {"variant": v, **({"label": stream.label} if v == "stream" else v.as_dict())}
        try:
            rates = []
            for size in sizes:
                fn, work, check, _ = stream(size, target=screen.sample_s) if v == "stream" else \
                    private(size, target=screen.sample_s, variant=v)
                t = float(np.median(time_cuda(fn, warmup=1, repeats=screen.max_samples)))
                check()
                rates.append(work / t)
            rec["gbps"] = [round(r / 1e9, 1) for r in rates]
            rec["median_bps"] = float(np.median(rates))
        except Exception as e:  # a variant that fails to launch or to verify is recorded and skipped
            rec["error"] = f"{type(e).__name__}: {e}"
        recs.append(rec)
    return recs


# ---------------------------------------------------------------------------------------------------------------

def _max_l1(kernel) -> str:
    """Ask for the smallest shared-memory carve-out (largest L1) for the L1 sweep kernel."""
    try:
        kernel.preferred_shared_memory_carveout = 0
        return "preferred shared-memory carve-out set to 0% (largest L1)"
    except Exception as e:
        return f"could not set the shared-memory carve-out ({type(e).__name__}: {e}); L1 may look smaller"


def _iters_for(make: Callable[[int], Callable[[], None]], target: float, probe_iters: int = 64, lo: int = 16) -> int:
    """Iterations so one call lasts ``target``: time a short call, scale (kernel time is linear in iters)."""
    from hwprobe.timing import iterations_for

    f = make(probe_iters)
    f()
    t = time_call(f)
    return iterations_for(t / probe_iters, target, lo=lo, hi=1 << 31)


def _count_check(out, grid: int, per_block: int) -> Callable[[], None]:
    """Every word read is 1, so each block's sum is the number of words it read (mod 2^32)."""
    expected = per_block % (1 << 32)

    def fn() -> None:
        got = out[:grid].get()
        wrong = int(np.count_nonzero(got != expected))
        if wrong:
            raise VerificationError(f"{wrong} of {grid} blocks read a wrong sum (want {expected}, got {got[0]})")
    return fn


def _sweep(ctx, scope: str, sizes: list[int], point, repeats: int = 3) -> Iterator[Measurement]:
    """Measure each size as a "sweep" point; returns {size: bandwidth} for the knee analysis."""
    pts: dict[int, float] = {}
    for size in sizes:
        try:
            fn, work, check, it = point(size)
            params = {K.WORKING_SET_BYTES: size, K.SCOPE: scope, "iters": it}
            if getattr(point, "label", None):
                params[K.VARIANT] = point.label
            m = ctx.measure(f"cache.sweep.{scope}.{size}", fn, work=work, unit="B/s", kind=Kind.SWEEP, check=check,
                            warmup=1, repeats=repeats, exec_unit=ExecUnit.CUDA_CORE, params=params,
                            bytes_counted="bytes requested by 16-byte loads (all SMs)")
            if m.verified is not False:
                pts[size] = m.value
            yield m
        except Exception as e:
            yield info(ctx, f"cache.sweep.{scope}.{size}", f"sweep point {size} B failed", e,
                       params={K.WORKING_SET_BYTES: size, K.SCOPE: scope})
    return pts


def l1_reported(dev) -> int:
    """The unified L1/shared array per SM: the arch table's size (the device reports only the shared part)."""
    from hwprobe.specs.theory import arch_facts

    facts = arch_facts(dev.arch) or {}
    return int(facts.get("l1_smem_bytes_per_sm") or dev.l1_smem_bytes_per_sm or dev.smem_per_sm_bytes or 256 << 10)


def _l1_window(pts: dict[int, float], l1: int) -> tuple[float, float]:
    """Sizes surely inside L1: the smallest swept up to half the L1/shared array."""
    return (min(pts) if pts else 0.0), l1 / 2


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


def _ceiling(ctx, metric: str, point, size: int, level: str, scope: str, notes: list[str], **extra) -> Measurement:
    fn, work, check, it = point(size, target=policy.rule("stream").sample_s)
    params = {K.WORKING_SET_BYTES: size, K.SCOPE: scope, "iters": it, **extra}
    if getattr(point, "label", None):
        params["variant_label"] = point.label
    return ctx.measure(metric, fn, work=work, unit="B/s", kind=Kind.MEMORY, check=check, level=level,
                       exec_unit=ExecUnit.CUDA_CORE, bytes_counted="bytes requested by 16-byte loads (all SMs)",
                       params=params, notes=notes)


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
    size = min(ex.size, l1_reported)          # a cache never holds more than it has: the exit past it is the rule's
    if ex.size > l1_reported:
        notes.append(f"the curve's exit ({ex.size / 1024:.1f} KiB) lies past the physical {l1_reported / 1024:.0f} KiB "
                     "(the 10% rule fires a step late): reported at the physical size")
    yield ctx.derived("cache.l1.capacity", size, unit="B", kind=Kind.CAPACITY, level="l1",
                      params={"bracket": list(ex.bracket), K.REPORTED_BYTES: l1_reported, "drop": EXIT_DROP,
                              "plateau_bps": ex.level, "value_after_bps": ex.after, "exit_bytes": ex.size},
                      notes=notes)


def _report_merge_free(ctx, pts: dict[int, float], point, l2: int, screened: list[dict]) -> Iterator[Measurement]:
    """cache.l2.read.merge_free: the median of the 2-20 MiB points of the fastest pattern in which no line is ever
    requested twice at once, re-measured at the size whose value it is. A floor under what the L2 serves: every
    byte counted is a byte an L2 slice sent."""
    lo, hi = l2plan.l2_window(l2)
    mid, inside = _median_point(pts, lo, hi)
    if mid is None or len(inside) < 3:       # a median of three points inside the window at least
        yield info(ctx, "cache.l2.read.merge_free", "too few device sweep points inside 2-20 MiB",
                   f"{len(inside)} points")
        return
    vals = [pts[s] for s in inside]
    ok = [r for r in screened if r.get("median_bps")]
    notes = [f"median of {len(inside)} sweep points between {lo / 2**20:.1f} and {hi / 2**20:.1f} MiB = "
             f"{float(np.median(vals)) / 1e12:.2f} TB/s (range {min(vals) / 1e12:.2f}-{max(vals) / 1e12:.2f}); "
             f"re-measured at {mid / 2**20:.1f} MiB",
             f"pattern: {point.label}; the fastest of {len(ok)} patterns screened, each with no two requests in "
             "flight for one line, so no request is coalesced with another on the way; at these set sizes that "
             "leaves too few bytes in flight to keep the L2's ports as busy as cache.l2.read does"]
    m = _ceiling(ctx, "cache.l2.read.merge_free", point, mid, "l2", "device", notes,
                 ceiling=False, sweep_median_bps=float(np.median(vals)),
                 screened=[{k: (v if k != "variant" else str(v)) for k, v in r.items()} for r in screened])
    yield m


def _report_l2(ctx, flat: dict[int, float], point, l2: int) -> Iterator[Measurement]:
    """cache.l2.read: the flat-grid pattern (ld.global.cg) at the largest set of the 2-20 MiB window."""
    lo, hi = l2plan.l2_window(l2)
    inside = sorted(s for s in flat if lo <= s <= hi)
    if len(inside) < 3:
        yield info(ctx, "cache.l2.read", "too few flat-grid sweep points inside 2-20 MiB", f"{len(inside)} points")
        return
    vals = [flat[s] for s in inside]
    top = inside[-1]
    yield _ceiling(ctx, "cache.l2.read", point, top, "l2", "device", [
        f"{point.label}, at the largest set of the {lo / 2**20:.1f}-{hi / 2**20:.1f} MiB window "
        f"({top / 2**20:.1f} MiB): the fewest blocks reading one region at once. Blocks of different SMs that "
        "read one line at the same moment are served once by the L2 (the request coalescer multicasts the "
        "data); Nsight Compute counted 0.5% (H200, 20 MiB) and 0.8% (H100, 16 MiB) of the bytes coalesced there, "
        "against 8-18% at 2-4 MiB, so at this size the bytes counted are what the L2 slices sent, within 1%",
        f"the same pattern's median over the window: {float(np.median(vals)) / 1e12:.2f} TB/s"],
        sweep_median_bps=float(np.median(vals)))


def _report_peer(ctx, pts: dict[int, float], point, window: tuple[float, float]) -> Iterator[Measurement]:
    """cache.l2.read.peer_method: the established cache benchmark's figure (gpu-benches' gpu-l2-cache, median
    over its sets in 2-20 MiB), measured its way: plain loads, its sets, the median point measured again."""
    mid, inside = _median_point(pts, *window)
    if len(inside) < 3:
        yield info(ctx, "cache.l2.read.peer_method", "too few peer-method sweep points", f"{len(inside)} points")
        return
    vals = [pts[s] for s in inside]
    yield _ceiling(ctx, "cache.l2.read.peer_method", point, mid, "l2", "device", [
        f"the established cache benchmark's figure (gpu-benches gpu-l2-cache): its pattern and its kind of load "
        f"({point.label}) over its {len(inside)} sets in {window[0] / 2**20:.1f}-{window[1] / 2**20:.1f} MiB, "
        f"the median set ({mid / 2**20:.1f} MiB) measured again. It counts bytes requested: loads that hit L1 and "
        "requests the L2 coalescer merged for several SMs count as L2 bandwidth (Nsight Compute on the benchmark "
        "itself, H100: 1.1% L1 hits and 3.2% merged at 8 MiB, 1.7% and 14.5% at 2 MiB), so it can read above the "
        "L2's theory; kept beside cache.l2.read, never a ceiling"],
        ceiling=False, sweep_median_bps=float(np.median(vals)))


def _report_capacity(ctx, pts: dict[int, float], l2: int) -> Iterator[Measurement]:
    """The physical L2 (device-reported) and the effective capacity for data all SMs share (the shared-data
    curve's plateau exit, never above the physical size)."""
    lo, hi = l2plan.l2_window(l2)
    yield ctx.derived("cache.l2.capacity", l2, unit="B", kind=Kind.CAPACITY, level="l2",
                      params={K.PRIMARY: True, "source": "device-reported (cudaDevAttrL2CacheSize)"},
                      notes=["physical L2 as the device reports it; gpu.latency's single-SM sweep cross-checks it "
                             "(latency.l2.capacity)"])
    sizes = sorted(pts)
    eff = effective_capacity(sizes, [pts[s] for s in sizes], lo, hi, l2, drop=EXIT_DROP) if len(sizes) >= 6 else None
    if eff is None:
        yield info(ctx, "cache.l2.capacity.effective", "the shared-data sweep never falls 10% below its plateau",
                   f"{len(sizes)} points")
        return
    notes = [f"effective capacity for data all SMs share = where the all-SM read bandwidth of the shared-data curve "
             f"({l2plan.CAPACITY.label()}, every block's rows moved to another SM each launch) first falls "
             f"{EXIT_DROP:.0%} below its 2-20 MiB plateau ({eff.exit.level / 1e12:.2f} TB/s; confirmed by the next "
             f"point), between {eff.exit.bracket[0] / 2**20:.1f} and {eff.exit.bracket[1] / 2**20:.1f} MiB, "
             f"log-interpolated: {eff.exit.size / 2**20:.1f} MiB = {eff.exit.size / l2:.2f} of the reported "
             f"{l2 / 2**20:.0f} MiB"]
    if eff.clamped:
        notes.append("the curve left its plateau only past the physical size (a cache that replaces lines "
                     "randomly keeps hitting a little past its size): reported as the physical size")
    yield ctx.derived("cache.l2.capacity.effective", eff.value, unit="B", kind=Kind.CAPACITY, level="l2",
                      params={"bracket": list(eff.exit.bracket), K.REPORTED_BYTES: l2, "drop": EXIT_DROP,
                              "plateau_bps": eff.exit.level, "value_after_bps": eff.exit.after,
                              "exit_bytes": eff.exit.size, "clamped": eff.clamped, K.PRIMARY: False,
                              K.CURVE: [{"bytes": s, "bps": pts[s]} for s in sizes]},
                      notes=notes)


def _partition_finding(ctx, low: dict[int, float], l2: int) -> Measurement:
    """The near/far step in the latency-bound all-SM curve: its rate follows one SM's latency, which steps up
    where the set outgrows what an SM's near partition keeps for it."""
    sizes = sorted(low)
    curve = [{"bytes": s, "bps": low[s]} for s in sizes]
    split = step_inside(sizes, [low[s] for s in sizes], l2, band=0.10, min_step=1.3, plateau_points=2) \
        if len(sizes) >= 6 else None
    variant = l2plan.LOW_MLP.as_dict()
    if split is None:
        return ctx.derived("cache.l2.partitions", 0.0, unit="", kind=Kind.INFO, level="l2",
                           params={K.CURVE: curve, K.VARIANT: variant},
                           notes=["no near/far step in the latency-bound all-SM read curve inside L2"])
    text = (f"near/far L2 step in bandwidth: with {variant['bytes_in_flight_per_sm']} B of loads in flight per SM "
            f"(latency-bound) the all-SM read rate falls {split.ratio:.2f}x, from {split.upper.level / 1e12:.2f} to "
            f"{split.lower.level / 1e12:.2f} TB/s, at {split.size / 2**20:.1f} MiB ({split.size / l2:.2f} of L2): "
            "past it the lines come from the far partition at about twice the latency. At full MLP the rate is "
            "bound by L2 throughput, not latency, and the step does not show.")
    return ctx.derived("cache.l2.partitions", split.size, unit="B", kind=Kind.INFO, level="l2",
                       params={K.CURVE: curve, K.VARIANT: variant, "split_fraction": split.size / l2,
                               "near_bps": split.upper.level, "far_bps": split.lower.level, "ratio": split.ratio},
                       notes=[text])


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

        iters = _iters_for(make, policy.rule("stream").sample_s)
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
            kind=Kind.MEMORY, check=check, level="shared", exec_unit=ExecUnit.CUDA_CORE,
            bytes_counted="bytes loaded from shared memory (16 B per thread per LDS.128)",
            params={"blocks_per_sm": per_sm, "block": SMEM_BLOCK, "iters": iters, "access": "ld.shared.v4.u32"},
            notes=["theory: 128 B/clk/SM on Volta and later"],
        )
        cyc, ns = (int(x) for x in clk.get())
        if cyc and ns:      # the last launch's own clock (block 0's clock64 over globaltimer): theory uses it
            m.params[K.KERNEL_SM_MHZ] = round(float(clock_mhz(cyc, ns)), 1)
        yield m
    except Exception as e:
        yield info(ctx, "cache.shared.read", "shared-memory bandwidth failed", e)
