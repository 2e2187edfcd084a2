"""Which calibration points the predictor does not need: a point that interpolation from its measured neighbours
predicts within 2% is left out of the grid, and the predictor interpolates it back (hwprobe.predict.calibration).

The rule, as the predictor reads a table: along every axis where the point has a neighbour on both sides, the
log-log line between them; over several such axes, the mean (GEMM tables and convolution grids; a curve has one
axis). A point is left out where that prediction is within ``tol`` of the measured time on every table given
(precisions, GPUs), and no neighbour of it is left out (so what the predictor puts back is exactly what was judged).
Axis ends are always measured: beyond them the predictor extrapolates.

``pruned_grid.json`` beside this module holds the points left out of the calibration probes' grids, made by
tools/suite_speed.py prune from committed profiles; the probes read it with ``pruned()`` (never in quick runs,
whose coarser grids give the points other neighbours).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

import numpy as np

from hwprobe.predict.calibration import interpolations

TOL = 0.02
PRUNED_FILE = Path(__file__).with_name("pruned_grid.json")


def errors(log_ts: list[np.ndarray], axes: list) -> dict[tuple, float]:
    """Every point's largest relative error, over the tables ``log_ts`` (log seconds on the same ``axes``), when
    interpolated from its neighbours; points with no two-sided neighbour on some table are absent."""
    logs = [np.log(np.asarray(a, float)) for a in axes]
    out: dict[tuple, float] = {}
    for idx in itertools.product(*(range(n) for n in log_ts[0].shape)):
        worst = 0.0
        for lt in log_ts:
            if not np.isfinite(lt[idx]):
                break
            between = interpolations(lt, logs, idx)
            if not between:
                break
            worst = max(worst, abs(float(np.exp(np.mean(between) - lt[idx])) - 1.0))
        else:
            out[idx] = worst
    return out


def prunable(log_ts: list[np.ndarray], axes: list, tol: float = TOL) -> set[tuple]:
    """The points to leave out: within ``tol`` on every table, smallest error first, none next to another."""
    dropped: set[tuple] = set()
    shape = log_ts[0].shape
    for idx, err in sorted(errors(log_ts, axes).items(), key=lambda t: (t[1], t[0])):
        if err > tol:
            break
        near = (idx[:ax] + (idx[ax] + d,) + idx[ax + 1:] for ax in range(len(shape)) for d in (-1, 1))
        if not any(n in dropped for n in near):
            dropped.add(idx)
    return dropped


def as_grid(log_t_of: dict[tuple, float], keys: list[list[float]]) -> np.ndarray:
    """A log-time array over ``keys`` (one sorted list per axis) from {(x, y, ...): log seconds}; NaN where absent."""
    grid = np.full(tuple(len(k) for k in keys), np.nan)
    pos = [{v: i for i, v in enumerate(k)} for k in keys]
    for point, lt in log_t_of.items():
        grid[tuple(p[v] for p, v in zip(pos, point, strict=True))] = lt
    return grid


def point_key(point: dict) -> tuple:
    """A calibration case's identity (a convolution point: its parameters, without the time)."""
    return tuple(sorted((k, v) for k, v in point.items() if k != "time_s"))


@dataclass(frozen=True)
class Pruned:
    """The points the calibration probes leave out (none where pruned_grid.json is absent)."""

    gemm: dict = field(default_factory=dict)        # precision -> {(M, N, K)} (model terms)
    curves: dict = field(default_factory=dict)      # "memory.<kind>" / "torch.<kind>" -> {nominal bytes}
    conv: frozenset = frozenset()                   # point_key of each convolution case

    def gemm_point(self, precision: str, m: int, n: int, k: int) -> bool:
        return (m, n, k) in self.gemm.get(precision, ())

    def curve_point(self, curve: str, nbytes: int) -> bool:
        return nbytes in self.curves.get(curve, ())


@cache
def pruned() -> Pruned:
    """The committed pruned points (pruned_grid.json)."""
    if not PRUNED_FILE.exists():
        return Pruned()
    d = json.loads(PRUNED_FILE.read_text())
    return Pruned({p: frozenset(tuple(x) for x in pts) for p, pts in d.get("gemm", {}).items()},
                  {k: frozenset(v) for k, v in d.get("curves", {}).items()},
                  frozenset(point_key(c) for c in d.get("conv", [])))
