"""Which calibration points the predictor does not need: a point that interpolation from its measured neighbours
predicts within 2% is left out of the grid, and the predictor interpolates it back (hwprobe.predict.calibration).

The rule, as the predictor reads a table: along every axis where the point has measured points on both sides, the
log-log line between the nearest two; over several such axes, the mean (GEMM tables and convolution grids; a curve
has one axis). Points are left out one at a time, smallest error first, while every point left out is still so
predicted within ``tol`` of its measured time on every table given (precisions, GPUs): what the predictor puts back
is what was judged. Axis ends are always measured: beyond them the predictor extrapolates.

tools/suite_speed.py prune writes the points left out to hwprobe/probes/calibration/pruned_grid.json, beside the
probes that read it (hwprobe.probes.calibration.pruned).
"""

from __future__ import annotations

import numpy as np

from hwprobe.predict.calibration import interpolations

TOL = 0.02


def _error(log_ts: list[np.ndarray], logs: list[np.ndarray], idx: tuple, measured: np.ndarray) -> float | None:
    """The point's largest relative error over the tables when the predictor fills it from ``measured``; None where
    some table gives no two-sided interpolation."""
    worst = 0.0
    for lt in log_ts:
        between = interpolations(lt, logs, idx, measured)
        if not between:
            return None
        worst = max(worst, abs(float(np.exp(np.mean(between) - lt[idx])) - 1.0))
    return worst


def errors(log_ts: list[np.ndarray], axes: list) -> dict[tuple, float]:
    """Every measured point's largest relative error, over the tables ``log_ts`` (log seconds on the same
    ``axes``), when interpolated from its neighbours; points with no two-sided neighbours are absent."""
    logs = [np.log(np.asarray(a, float)) for a in axes]
    measured = np.logical_and.reduce([np.isfinite(lt) for lt in log_ts])
    out = {}
    for idx in zip(*np.nonzero(measured), strict=True):
        e = _error(log_ts, logs, idx, measured)
        if e is not None:
            out[idx] = e
    return out


def prunable(log_ts: list[np.ndarray], axes: list, tol: float = TOL) -> set[tuple]:
    """The points to leave out, smallest error first: each one only if, with it and those already out, every point
    out along its axis lines (the ones whose fill it changes) is still predicted within ``tol`` on every table."""
    logs = [np.log(np.asarray(a, float)) for a in axes]
    measured = np.logical_and.reduce([np.isfinite(lt) for lt in log_ts])
    dropped: list[tuple] = []
    for idx, err in sorted(errors(log_ts, axes).items(), key=lambda t: (t[1], t[0])):
        if err > tol:
            break
        measured[idx] = False
        lines = [q for q in dropped if sum(a != b for a, b in zip(q, idx, strict=True)) <= 1] + [idx]
        errs = [_error(log_ts, logs, q, measured) for q in lines]
        if all(e is not None and e <= tol for e in errs):
            dropped.append(idx)
        else:
            measured[idx] = True
    return set(dropped)


def as_grid(log_t_of: dict[tuple, float], keys: list[list[float]]) -> np.ndarray:
    """A log-time array over ``keys`` (one sorted list per axis) from {(x, y, ...): log seconds}; NaN where absent."""
    grid = np.full(tuple(len(k) for k in keys), np.nan)
    pos = [{v: i for i, v in enumerate(k)} for k in keys]
    for point, lt in log_t_of.items():
        grid[tuple(p[v] for p, v in zip(pos, point, strict=True))] = lt
    return grid
