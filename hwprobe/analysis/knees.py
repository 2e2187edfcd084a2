"""Plateaus and knees in bandwidth-vs-size curves, sweep plans, and byte/FLOP accounting for memory probes.

Everything here is pure numpy so the logic that turns raw sweeps into cache sizes and ridge points is tested
on the CPU with synthetic curves. Sizes are bytes, bandwidths any positive unit (only ratios matter).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

# ---------------------------------------------------------------------------------------------------------------
# Byte accounting (BabelStream semantics: no write-allocate traffic counted)

STREAM_ARRAYS = {"read": 1, "write": 1, "copy": 2, "scale": 2, "triad": 3}


def stream_bytes(op: str, array_bytes: int) -> int:
    """Bytes one pass of ``op`` moves over arrays of ``array_bytes`` each: read 1x, write 1x, copy/scale 2x,
    triad 3x. A copy counts its read and its write."""
    if op not in STREAM_ARRAYS:
        raise ValueError(f"unknown stream op {op!r}; known: {', '.join(STREAM_ARRAYS)}")
    return STREAM_ARRAYS[op] * int(array_bytes)


def bytes_counted(op: str) -> str:
    """The human-readable byte convention stored in Measurement.bytes_counted."""
    return {
        "read": "bytes read (1x array)",
        "write": "bytes written (1x array), no write-allocate",
        "copy": "read + write (2x array)",
        "scale": "read + write (2x array)",
        "triad": "2 reads + 1 write (3x array)",
        "memcpy_d2d": "read + write (2x bytes copied)",
    }[op]


# ---------------------------------------------------------------------------------------------------------------
# Sweep planning

def align_up(x: int, a: int) -> int:
    return -(-int(x) // a) * a


def align_down(x: int, a: int) -> int:
    return int(x) // a * a


def log_sizes(lo: int, hi: int, per_octave: int = 4, align: int = 256) -> list[int]:
    """Sizes from ``lo`` to ``hi`` (both included, after alignment), ``per_octave`` points per doubling,
    each rounded up to a multiple of ``align``; strictly increasing."""
    if lo <= 0 or hi < lo:
        raise ValueError(f"bad range {lo}..{hi}")
    n = int(math.floor(per_octave * math.log2(hi / lo) + 1e-9))
    raw = [lo * 2.0 ** (i / per_octave) for i in range(n + 1)] + [hi]
    out: list[int] = []
    for s in raw:
        v = min(align_up(s, align), align_down(hi, align)) if hi >= align else align
        if not out or v > out[-1]:
            out.append(v)
    return out


def refine_between(a: int, b: int, per_octave: int = 16, align: int = 256, max_points: int = 8) -> list[int]:
    """Extra sizes strictly between ``a`` and ``b`` (a knee's bracket), ``per_octave`` per doubling."""
    if b <= a:
        return []
    n = min(max_points, int(math.ceil(per_octave * math.log2(b / a))) - 1)
    if n <= 0:
        return []
    pts = [a * (b / a) ** ((i + 1) / (n + 1)) for i in range(n)]
    out = sorted({align_up(p, align) for p in pts})
    return [p for p in out if a < p < b]


def stream_array_bytes(l2_bytes: int, free_bytes: int, *, n_arrays: int = 3, target_bytes: int = 1 << 30,
                       min_l2_factor: float = 4.0, mem_fraction: float = 0.25, align: int = 1 << 21) -> int:
    """Bytes per array for a DRAM stream test: ``target_bytes`` if the memory budget allows, never below
    ``min_l2_factor`` x L2. Raises ValueError (the probe turns it into Skip) when the budget is too small."""
    need = align_up(max(min_l2_factor * l2_bytes, align), align)
    budget = align_down(mem_fraction * free_bytes / n_arrays, align)
    if budget < need:
        raise ValueError(
            f"{n_arrays} arrays of >= {need / 2**20:.0f} MiB ({min_l2_factor:g}x L2) do not fit in "
            f"{mem_fraction:.0%} of free memory ({free_bytes / 2**30:.1f} GiB)"
        )
    return max(need, min(align_down(target_bytes, align), budget))


# ---------------------------------------------------------------------------------------------------------------
# Plateaus and knees

@dataclass
class Plateau:
    start: int            # index of the first point
    stop: int             # index after the last point
    level: float          # median value over the plateau
    lo_size: float        # first and last size on the plateau
    hi_size: float


@dataclass
class Knee:
    size: float           # where the curve has fallen `frac` of the way (in log) from upper to lower level
    upper: Plateau
    lower: Plateau
    ratio: float          # upper.level / lower.level
    bracket: tuple[float, float]  # the two measured sizes the crossing lies between


def _runs(y: np.ndarray, band: float, min_points: int) -> list[tuple[int, int]]:
    """Longest-first maximal runs of consecutive points whose spread (max - min of log values) <= band."""
    n = len(y)
    used = np.zeros(n, dtype=bool)
    runs: list[tuple[int, int]] = []
    while True:
        best = (0, 0)
        for i in range(n):
            if used[i]:
                continue
            lo = hi = y[i]
            j = i + 1
            while j < n and not used[j] and max(hi, y[j]) - min(lo, y[j]) <= band:
                lo, hi = min(lo, y[j]), max(hi, y[j])
                j += 1
            if j - i > best[1] - best[0]:
                best = (i, j)
        if best[1] - best[0] < min_points:
            break
        used[best[0]:best[1]] = True
        runs.append(best)
    return sorted(runs)


def _plateau(sizes: np.ndarray, values: np.ndarray, a: int, b: int) -> Plateau:
    return Plateau(a, b, float(np.median(values[a:b])), float(sizes[a]), float(sizes[b - 1]))


def find_plateaus(sizes, values, *, band: float = 0.15, min_points: int = 3, min_step: float = 1.15) -> list[Plateau]:
    """Flat stretches of a curve sampled at increasing ``sizes``.

    A plateau is a run of >= ``min_points`` consecutive points whose values stay within a ratio of
    ``1 + band``; runs are taken longest first, so a transition between two levels is left out of both.
    Neighbouring plateaus whose levels differ by less than ``min_step`` (a slow drift, not a cache level)
    are merged, together with the points between them.
    """
    s = np.asarray(sizes, dtype=float)
    v = np.asarray(values, dtype=float)
    if s.shape != v.shape or s.ndim != 1:
        raise ValueError("sizes and values must be 1-D arrays of the same length")
    if np.any(np.diff(s) <= 0):
        raise ValueError("sizes must be strictly increasing")
    if np.any(v <= 0) or not np.all(np.isfinite(v)):
        raise ValueError("values must be positive and finite")
    runs = _runs(np.log(v), math.log1p(band), min_points)
    plats = [_plateau(s, v, a, b) for a, b in runs]
    merged = True
    while merged and len(plats) > 1:
        merged = False
        for k in range(len(plats) - 1):
            p, q = plats[k], plats[k + 1]
            if max(p.level, q.level) / min(p.level, q.level) < min_step:
                plats[k:k + 2] = [_plateau(s, v, p.start, q.stop)]
                merged = True
                break
    return plats


def find_knees(sizes, values, *, band: float = 0.15, min_points: int = 3, min_step: float = 1.15,
               frac: float = 0.1) -> tuple[list[Plateau], list[Knee]]:
    """Plateaus, and a knee at every drop from one plateau to the next.

    The knee is where the curve has fallen ``frac`` of the way (in log value) from the upper level towards
    the lower one, interpolated in log size. A small ``frac`` puts it near the capacity both for a sharp
    cliff (LRU-like) and for a gradual roll-off (random replacement starts to miss right at capacity).
    """
    s = np.asarray(sizes, dtype=float)
    v = np.asarray(values, dtype=float)
    plats = find_plateaus(s, v, band=band, min_points=min_points, min_step=min_step)
    y, x = np.log(v), np.log2(s)
    knees = []
    for p, q in zip(plats[:-1], plats[1:], strict=True):
        if q.level >= p.level:
            continue
        thr = math.log(p.level) - frac * (math.log(p.level) - math.log(q.level))
        k0 = p.stop - 1
        while k0 > p.start and y[k0] < thr:
            k0 -= 1
        k = k0 + 1
        while k < q.start and y[k] >= thr:
            k += 1
        # k is the first point below thr after the upper plateau; the crossing lies between k-1 and k
        t = (y[k - 1] - thr) / (y[k - 1] - y[k]) if y[k - 1] != y[k] else 1.0
        xs = x[k - 1] + min(max(t, 0.0), 1.0) * (x[k] - x[k - 1])
        knees.append(Knee(size=float(2.0 ** xs), upper=p, lower=q, ratio=p.level / q.level,
                          bracket=(float(s[max(k - 1, 0)]), float(s[min(k, len(s) - 1)]))))
    return plats, knees


def step_inside(sizes, values, capacity: float, *, band: float = 0.15, min_step: float = 1.15,
                lo_frac: float = 0.2, hi_frac: float = 0.8, top_frac: float = 0.9, min_points: int = 6,
                plateau_points: int = 3) -> Knee | None:
    """A drop between two plateaus that lies inside a cache level (near/far L2 partitions): the first knee
    between ``lo_frac`` and ``hi_frac`` of ``capacity``, from the points at or below ``top_frac`` of it (past
    that the level's own exit would count). ``values`` fall as the curve gets slower (bandwidth, 1/latency).
    ``plateau_points``: the fewest points a plateau needs (the far half of L2 is one octave: a few points).
    None when there are fewer than ``min_points`` such points or no such knee."""
    pts = [(s, v) for s, v in zip(sizes, values, strict=True) if s <= top_frac * capacity]
    if len(pts) < min_points:
        return None
    _, knees = find_knees([s for s, _ in pts], [v for _, v in pts], band=band, min_step=min_step,
                          min_points=plateau_points)
    return next((k for k in knees if lo_frac * capacity <= k.size <= hi_frac * capacity), None)


@dataclass
class PlateauExit:
    size: float           # where the curve first falls `drop` below the plateau level (log-log interpolated)
    level: float          # the plateau level: median of the points in the plateau window
    threshold: float      # (1 - drop) x level
    bracket: tuple[float, float]  # the two measured sizes the crossing lies between
    after: float          # the value at bracket[1]


def plateau_exit(sizes, values, lo: float, hi: float, *, drop: float = 0.10, confirm: int = 2) -> PlateauExit | None:
    """Where a curve leaves its plateau: the capacity of a cache level.

    The plateau level is the median of the points with ``lo <= size <= hi`` (a window known to fit in the
    level). Scanning up from the window's first point, the exit is the first point below ``(1 - drop) x
    level`` that is followed by ``confirm - 1`` more points below it (one noisy dip is not an exit); the
    crossing is interpolated in log size and log value. This needs no second plateau, so it works for a curve
    that falls off the first plateau and keeps falling (L1 on Hopper, where the per-SM sweep rolls from L1 into
    L2 with no flat stretch). Returns None when the window is empty or the curve never leaves the plateau.
    """
    s = np.asarray(sizes, dtype=float)
    v = np.asarray(values, dtype=float)
    if s.shape != v.shape or s.ndim != 1 or np.any(np.diff(s) <= 0) or np.any(v <= 0):
        raise ValueError("need strictly increasing sizes and positive values of the same length")
    inside = np.nonzero((s >= lo) & (s <= hi))[0]
    if inside.size == 0:
        return None
    level = float(np.median(v[inside]))
    thr = (1.0 - drop) * level
    for k in range(int(inside[0]) + 1, len(s)):
        if np.all(v[k:k + confirm] < thr):
            y0, y1 = math.log(v[k - 1]), math.log(v[k])
            t = (y0 - math.log(thr)) / (y0 - y1) if y0 != y1 else 1.0
            t = min(max(t, 0.0), 1.0)
            x = math.log2(s[k - 1]) + t * (math.log2(s[k]) - math.log2(s[k - 1]))
            return PlateauExit(size=float(2.0 ** x), level=level, threshold=thr,
                               bracket=(float(s[k - 1]), float(s[k])), after=float(v[k]))
    return None


# ---------------------------------------------------------------------------------------------------------------
# Roofline accounting and fit

@dataclass(frozen=True)
class RoofLanes:
    lanes: int            # independent arithmetic lanes per 16-byte vector
    fma_flops: int        # FLOPs (or OPs) per FMA instruction on one lane
    add_flops: int        # FLOPs of the final accumulate per lane
    kernel: str


ROOF_PRECISIONS = {
    "fp32": RoofLanes(4, 2, 1, "roof_fp32"),
    "fp64": RoofLanes(2, 2, 1, "roof_fp64"),
    "fp16": RoofLanes(4, 4, 2, "roof_fp16x2"),   # half2 lanes: HFMA2 = 2 FMAs; sum in fp32 = 2 FADDs
    "int32": RoofLanes(4, 2, 1, "roof_int32"),
}
VECTOR_BYTES = 16


def roofline_flops_per_vector(precision: str, m: int) -> int:
    r = ROOF_PRECISIONS[precision]
    return r.lanes * (m * r.fma_flops + r.add_flops)


def roofline_intensity(precision: str, m: int) -> float:
    """FLOP (or OP) per byte read for a chain of ``m`` FMAs per lane."""
    return roofline_flops_per_vector(precision, m) / VECTOR_BYTES


def roofline_plan(precision: str, lo: float = 0.125, hi: float = 1024.0,
                  per_octave: int = 1) -> list[tuple[int, float]]:
    """(m, intensity) pairs roughly log-spaced from ``lo`` to ``hi``; starts at the lowest intensity the
    kernel can do (m = 0: load + accumulate only), so it may start above ``lo``."""
    r = ROOF_PRECISIONS[precision]
    out: dict[int, float] = {}
    n = int(round(per_octave * math.log2(hi / lo)))
    for i in range(n + 1):
        target = lo * 2.0 ** (i / per_octave)
        m = max(0, round((target * VECTOR_BYTES / r.lanes - r.add_flops) / r.fma_flops))
        out[m] = roofline_intensity(precision, m)
    return sorted(out.items())


@dataclass
class RooflineFit:
    bandwidth: float      # fitted slope (perf / intensity) over memory-bound points, B/s
    roof: float           # compute roof, FLOP/s
    ridge: float          # roof / bandwidth, FLOP/B: where slope and roof intersect
    reach: float | None   # lowest intensity where the measured curve reaches `reach_fraction` of the roof
    n_memory_points: int


def ridge_point(intensity, perf, *, mem_fraction: float = 0.5, reach_fraction: float = 0.9) -> RooflineFit:
    """Fit a roofline to a measured sweep: the roof is the best rate; the slope is the median of
    perf/intensity over clearly memory-bound points (rate < ``mem_fraction`` x roof)."""
    i = np.asarray(intensity, dtype=float)
    p = np.asarray(perf, dtype=float)
    order = np.argsort(i)
    i, p = i[order], p[order]
    if i.size < 2 or np.any(i <= 0) or np.any(p <= 0):
        raise ValueError("need >= 2 points with positive intensity and rate")
    roof = float(p.max())
    mem = p < mem_fraction * roof
    bw = float(np.median(p[mem] / i[mem])) if mem.any() else float(p[0] / i[0])
    reach = None
    hit = np.nonzero(p >= reach_fraction * roof)[0]
    if hit.size:
        k = int(hit[0])
        if k == 0:
            reach = float(i[0])
        else:  # interpolate in log-log between the last point below and the first at/above
            y0, y1 = math.log(p[k - 1]), math.log(p[k])
            t = (math.log(reach_fraction * roof) - y0) / (y1 - y0) if y1 != y0 else 1.0
            reach = float(2.0 ** (math.log2(i[k - 1]) + t * (math.log2(i[k]) - math.log2(i[k - 1]))))
    return RooflineFit(bandwidth=bw, roof=roof, ridge=roof / bw, reach=reach, n_memory_points=int(mem.sum()))


# ---------------------------------------------------------------------------------------------------------------
# Pointer-chase orders

def random_cycle(n: int, rng: np.random.Generator) -> np.ndarray:
    """A visiting order of all ``n`` slots (slot 0 first); following it wraps into one cycle of length n."""
    if n < 1:
        raise ValueError("need at least one slot")
    rest = rng.permutation(np.arange(1, n))
    return np.concatenate([[0], rest]).astype(np.int64)


def page_local_cycle(n: int, per_page: int, rng: np.random.Generator) -> np.ndarray:
    """A visiting order that takes the pages in random order and, within a page, every slot in random order:
    each access still misses the caches (each slot is visited once per cycle) but the TLB sees one page at a
    time. ``n`` must be a multiple of ``per_page``; slot 0 comes first."""
    if n % per_page:
        raise ValueError("n must be a multiple of per_page")
    pages = np.concatenate([[0], rng.permutation(np.arange(1, n // per_page))])
    order = []
    for pg in pages:
        within = rng.permutation(per_page)
        if pg == 0:
            within = np.concatenate([[0], within[within != 0]])
        order.append(pg * per_page + within)
    return np.concatenate(order).astype(np.int64)


def next_slots(order: np.ndarray) -> np.ndarray:
    """nxt[s] = the slot visited after s, so the chase of ``order`` is one cycle through every slot."""
    nxt = np.empty_like(order)
    nxt[order] = np.roll(order, -1)
    return nxt


def slot_after(order: np.ndarray, steps: int) -> int:
    """The slot reached from order[0] after ``steps`` steps."""
    return int(order[steps % len(order)])
