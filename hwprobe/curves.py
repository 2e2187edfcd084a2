"""Plateaus, knees and roofline fits on measured curves (bandwidth vs working set, rate vs intensity).

Pure numpy, so the logic that turns raw sweeps into cache sizes and ridge points is tested on the CPU with
synthetic curves. Sizes are bytes, rates any positive unit (only ratios matter).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


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


@dataclass
class Capacity:
    value: float          # bytes: the exit, never above the physical size
    exit: PlateauExit     # where the curve left its plateau
    clamped: bool         # the exit lay past the physical size


def effective_capacity(sizes, values, lo: float, hi: float, physical: float, *, drop: float = 0.10) -> Capacity | None:
    """The effective capacity of a cache level for the pattern a curve was measured with: where the curve first
    falls ``drop`` below its plateau (``plateau_exit`` over the window ``lo``..``hi``), never above the physical
    size (a curve may stay flat a little past it: random replacement keeps some lines of a set larger than the
    cache). None when the curve never leaves its plateau."""
    ex = plateau_exit(sizes, values, lo, hi, drop=drop)
    if ex is None:
        return None
    return Capacity(value=min(ex.size, float(physical)), exit=ex, clamped=ex.size > physical)


def level_exit(sizes, latencies, start: float, *, rise: float = 0.10) -> PlateauExit | None:
    """Where a latency curve leaves the plateau that begins at ``start``: the first size (confirmed by the next)
    whose latency is ``rise`` above the plateau's median, log-interpolated. The plateau is the run of points
    from ``start`` within ``rise`` of its first point (the far L2 plateau of a single-SM chase, say)."""
    s = np.asarray(sizes, dtype=float)
    t = np.asarray(latencies, dtype=float)
    first = int(np.searchsorted(s, start))
    if first >= len(s):
        return None
    k = first
    while k + 1 < len(s) and t[k + 1] <= (1 + rise) * t[first]:
        k += 1
    return plateau_exit(s, 1.0 / t, s[first], s[k], drop=1 - 1 / (1 + rise))


@dataclass
class RooflineFit:
    bandwidth: float      # fitted slope (perf / intensity) over memory-bound points, B/s
    roof: float           # compute roof, FLOP/s
    ridge: float          # roof / bandwidth, FLOP/B: where slope and roof intersect
    reach: float | None   # lowest intensity where the measured curve reaches `reach_fraction` of the roof
    n_memory_points: int


def fit_roofline(intensity, perf, *, mem_fraction: float = 0.5, reach_fraction: float = 0.9) -> RooflineFit:
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




def ridge_note(precision: str, ridge: float, roof: float, slope: float, unit: str, theory: float | None,
               basis: str, peak: float | None = None, measured_ridge: float | None = None) -> str:
    """One sentence on a roofline sweep's fit, its precision named: the sweep kernel's knee first (its own roof
    over its own slope), then the device's ridge for that precision and unit, then the theoretical ridge.

    A ridge point has one definition in hwprobe: a peak over the DRAM bandwidth, both measured (the report's
    ridge table: the profile's CUDA-core ceiling over its DRAM ceiling) or both theoretical. The sweep's roof is
    its own (one FMA chain per loaded lane: FP16's reaches about half the HFMA2 peak), so its knee is named as
    the kernel's, never as the device's ridge (issue 23: 15.7 beside 29.8). ``peak`` and ``measured_ridge``: the
    profile's CUDA-core ceiling and ridge for ``precision``, where known (a report knows them, the probe not)."""
    rate = f"T{unit[:-2]}/s"
    what = f"{precision} CUDA-core"
    share = f", {roof / peak:.0%} of the {what} peak {peak / 1e12:.3g} {rate}" if peak else ""
    device = (f"the {what} ridge, measured peak / measured DRAM bandwidth, is {measured_ridge:.3g} {unit}"
              if measured_ridge else f"the {what} ridge, measured peak / DRAM ceiling, is in the ridge table")
    theo = (f"theoretical {what} ridge (theoretical peak / theoretical DRAM bandwidth) {theory:.3g} {unit} ({basis})"
            if theory else f"theoretical {what} ridge unknown ({basis})")
    return (f"{precision} roofline sweep: this kernel's knee {ridge:.3g} {unit} (its roof {roof / 1e12:.3g} {rate}"
            f"{share}; its slope {slope / 1e12:.3g} TB/s); {device}; {theo}")
