"""The error a prediction prints beside itself, from comparable held-out validation cases.

An in-sample figure says how well the predictor fits the models it was tuned on, not how far to trust it on
another: the committed validation (hwprobe/predict/validation.json, written by tools/compare_predictions.py from
the device runs) keeps every case with its model family (cnn, transformer), runtime, layout and split: ``seen``
(a model whose per-kernel numbers someone looked at while changing the predictor) or ``held_out`` (one nobody
did; tools/zoo_heldout.py states the rule). A prediction quotes the held-out cases of its own family and runtime
(CNNs: and layout) where there are at least MIN_CASES; the seen ones only as what they are. Where kernels priced
outside the calibration carry more than UNCOVERED_LIMIT of the predicted time, no figure applies: the error is
not measured.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass
from functools import cache
from importlib import resources
from typing import Any

FAMILIES = ("cnn", "transformer")
SPLITS = ("seen", "held_out")
UNCOVERED_LIMIT = 0.05        # share of the predicted time in kernels outside the calibration
MIN_CASES = 3                 # held-out cases of a family before their error is quoted


def family(kernels) -> str:
    """A model's family from its priced kernels (OpTime): ``cnn`` where convolutions take at least as long as
    the plain GEMMs and attention together, ``transformer`` otherwise."""
    conv = dense = 0.0
    for t in kernels:
        op = t.op
        if op.kind == "conv_dw" or (op.kind == "gemm" and (op.conv_kernel or op.conv_images)):
            conv += t.time_s
        elif op.kind in ("gemm", "attention"):
            dense += t.time_s
    return "cnn" if conv and conv >= dense else "transformer"


@dataclass(frozen=True)
class Stats:
    cases: int
    median_abs_pct: float
    max_abs_pct: float
    where: str

    @classmethod
    def of(cls, cases: list[dict]) -> Stats | None:
        if not cases:
            return None
        errs = [abs(c["error_pct"]) for c in cases]
        gpus = sorted({c.get("gpu", "?") for c in cases})
        return cls(len(errs), statistics.median(errs), max(errs), ", ".join(gpus))


@dataclass(frozen=True)
class ErrorBar:
    """What a prediction may claim of its own error. ``held_out``: the figure to quote (None: not measured);
    ``seen``: the in-sample figure, shown only as such; ``uncovered_share``: its time outside the calibration."""

    family: str
    runtime: str
    layout: str
    uncovered_share: float
    held_out: Stats | None
    seen: Stats | None

    @property
    def measured(self) -> bool:
        return self.held_out is not None and self.uncovered_share <= UNCOVERED_LIMIT

    def text(self) -> str:
        if self.uncovered_share > UNCOVERED_LIMIT:
            return f"error not measured ({self.uncovered_share:.0%} of the time outside the calibration)"
        what = f"{self.family} models, {self.runtime}" + (f", {self.layout}" if self.family == "cnn" else "")
        if self.held_out is not None:
            h = self.held_out
            return (f"measured error on {h.cases} held-out cases ({what}): median {h.median_abs_pct:.0f}%, worst "
                    f"{h.max_abs_pct:.0f}%; {h.where}")
        if self.seen is not None:
            s = self.seen
            return (f"error on held-out {what} not measured; on the {s.cases} seen cases the predictor was tuned on: "
                    f"median {s.median_abs_pct:.0f}%, worst {s.max_abs_pct:.0f}%")
        return f"no validation of {what} committed: error unknown"

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(measured=self.measured, text=self.text())
        return out


def comparable(cases: list[dict], runtime: str, layout: str, fam: str) -> dict[str, list[dict]]:
    """The cases of ``fam`` under ``runtime`` (CNNs: in ``layout`` too; a transformer's layout prices its stem
    only), by split."""
    out: dict[str, list[dict]] = {s: [] for s in SPLITS}
    for c in cases:
        if c["runtime"] != runtime or c["family"] != fam or (fam == "cnn" and c.get("layout") != layout):
            continue
        out.setdefault(c["split"], []).append(c)
    return out


def error_bar(runtime: str, layout: str, fam: str, uncovered_share: float,
              cases: list[dict] | None = None) -> ErrorBar:
    got = comparable(validation_cases() if cases is None else cases, runtime, layout, fam)
    held = got["held_out"] if len(got["held_out"]) >= MIN_CASES else []
    return ErrorBar(fam, runtime, layout, uncovered_share, Stats.of(held), Stats.of(got["seen"]))


@cache
def validation_cases() -> list[dict]:
    """hwprobe/predict/validation.json's cases, read once per process (none where the file is missing)."""
    try:
        data = json.loads(resources.files("hwprobe.predict").joinpath("validation.json").read_text())
    except (FileNotFoundError, ValueError):
        return []
    return list(data.get("cases") or [])
