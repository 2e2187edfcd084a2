"""The calibration points the probes leave out of their grids: ``pruned_grid.json`` beside this module, made by
``tools/suite_speed.py prune`` (hwprobe.predict.prune judges which points interpolation from their neighbours
predicts within 2%). It lives beside the probes that read it, so measuring never imports the predictor; quick runs
read none of it (their coarser grids give the points other neighbours)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

PRUNED_FILE = Path(__file__).with_name("pruned_grid.json")


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
