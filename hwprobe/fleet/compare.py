"""A fleet of runs side by side: one row per device/run, one column per ceiling, normalized, outliers flagged.

Normalization is to the median of the run's group (same device and power mode by default: a Jetson in 15 W
is not an outlier among MAXN boards, it is another population) or to a ``reference`` run. An outlier is
a value whose robust z-score, 0.6745 x (x - median) / MAD (Iglewicz and Hoaglin's modified z), exceeds ``z``
AND that is more than ``min_gap`` away from the median: a tight fleet's MAD is tiny, and 0.3% off is not a
weak unit. Each outlier's likely cause comes from comparing its run with the group's typical run.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any

from hwprobe.errors import InputError
from hwprobe.fleet import causes
from hwprobe.fleet.records import RunRecord
from hwprobe.fleet.validate import _order

MIN_GROUP = 3             # fewer runs than this in a group: no median/MAD outliers there
# Shown first (tables and plots have room for a few): the ceilings a workload usually lives on.
HEADLINE = ("fp16.tensor_core.library", "bf16.tensor_core.library", "int8.tensor_core.library",
            "fp8.tensor_core.library", "tf32.tensor_core.library", "fp32.cuda_core.instruction",
            "fp16.cuda_core.instruction", "fp64.cuda_core.instruction", "dram.bandwidth", "l2.bandwidth",
            "host_h2d.bandwidth", "host_d2h.bandwidth")
META = ("run", "device", "mode", "host", "created", "path")
SHOWN = 12                # ceilings the table and the plot show (the first of ``keys``); --ceilings picks others


@dataclass
class Outlier:
    run: str
    path: str
    key: str
    value: float
    unit: str
    normalized: float                 # value / the table's basis (group median, or the reference): as shown
    z: float | None                   # robust z (None under the reference rule)
    rule: str                         # "median/MAD" | "reference"
    typical: str = ""                 # the run its causes are explained against
    causes: list[str] = field(default_factory=list)
    vs_median: float | None = None    # value / its group median (the median/MAD rule's own figure)

    @property
    def direction(self) -> str:
        return "low" if (self.vs_median if self.vs_median is not None else self.normalized) < 1 else "high"


@dataclass
class Fleet:
    runs: list[RunRecord]
    table: Any                        # pandas DataFrame: META columns + one column per key (raw values)
    normalized: Any                   # DataFrame: one column per key, value / basis
    keys: list[str]
    units: dict[str, str]
    basis: str
    group_by: str
    outliers: list[Outlier]
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        rows = [{**{m: raw[m] for m in META}, "values": {k: _num(raw[k]) for k in self.keys},
                 "normalized": {k: _num(norm[k]) for k in self.keys}}
                for raw, norm in zip(self.table.to_dict("records"), self.normalized.to_dict("records"), strict=True)]
        return {"basis": self.basis, "group_by": self.group_by, "keys": self.keys, "units": self.units,
                "runs": rows, "outliers": [vars(o) | {"direction": o.direction} for o in self.outliers],
                "notes": self.notes}

    def to_csv(self, path) -> None:
        out = self.table.copy()
        for k in self.keys:
            out[f"{k} (norm)"] = self.normalized[k]
        out.to_csv(path, index=False)


def _num(x) -> float | None:
    return None if x is None or x != x else float(x)     # NaN -> None


def select_keys(runs: list[RunRecord], patterns: list[str] | None) -> list[str]:
    """Ceiling keys to compare: those matching ``patterns`` (fnmatch), else those at least half the runs have."""
    counts: dict[str, int] = {}
    for r in runs:
        for k in r.ceilings:
            counts[k] = counts.get(k, 0) + 1
    if patterns:
        keys = [k for k in counts if any(fnmatch.fnmatchcase(k, p) for p in patterns)]
        if not keys:
            raise InputError(f"no ceiling matches {', '.join(patterns)}; ceilings: {', '.join(sorted(counts)[:12])}")
    else:
        keys = [k for k, n in counts.items() if n * 2 >= len(runs)]
    return sorted(keys, key=lambda k: (HEADLINE.index(k) if k in HEADLINE else len(HEADLINE), _order(k)))


def build_table(runs: list[RunRecord], keys: list[str]):
    import pandas as pd

    rows = []
    for r in runs:
        row = {"run": r.label, "device": r.device_name, "mode": r.power_mode or "", "path": r.path,
               "host": str(r.environment.get("host") or ""), "created": r.created}
        for k in keys:
            c = r.ceilings.get(k)
            row[k] = c.value if c is not None else float("nan")
        rows.append(row)
    return pd.DataFrame(rows, columns=[*META, *keys])


def group_column(table, group_by: str):
    if group_by == "none":
        return table["run"].map(lambda _: "fleet")
    if group_by == "device":
        return table["device"] + table["mode"].map(lambda m: f" / {m}" if m else "")
    if group_by == "mode":
        return table["mode"].replace("", "-")
    raise InputError(f"--group-by must be device, mode or none, not {group_by!r}")


def compare(runs: list[RunRecord], reference: RunRecord | None = None, group_by: str = "device",
            min_gap: float = 0.05, z: float = 3.5, patterns: list[str] | None = None) -> Fleet:
    """Normalize and flag outliers; see the module docstring for the rule."""
    import numpy as np

    if not runs:
        raise InputError("no runs to compare")
    keys = select_keys(runs, patterns)
    units = {k: next((r.ceilings[k].unit for r in runs if k in r.ceilings), "") for k in keys}
    table = build_table(runs, keys)
    groups = group_column(table, group_by)
    values = table[keys].astype(float)
    median = values.groupby(groups).transform("median")
    mad = (values - median).abs().groupby(groups).transform("median")
    size = values.groupby(groups).transform("count")
    with np.errstate(divide="ignore", invalid="ignore"):
        robust_z = 0.6745 * (values - median) / mad.where(mad > 0)
        robust_z = robust_z.where(mad > 0, np.where((values - median).abs() > 0, np.inf, 0.0))
        gap = values / median - 1
    flagged = (robust_z.abs() > z) & (gap.abs() > min_gap) & (size >= MIN_GROUP)
    notes = []
    small = sorted({g for g, n in groups.value_counts().items() if n < MIN_GROUP})
    if small:
        notes.append(f"groups with fewer than {MIN_GROUP} runs get no median/MAD outliers: {', '.join(small)}")
    if reference is not None:
        ref = [reference.ceilings[k].value if k in reference.ceilings else np.nan for k in keys]
        normalized = values / np.asarray(ref, dtype=float)
        basis = f"reference {reference.label}"
    else:
        normalized = values / median
        basis = f"the median of each {group_by} group" if group_by != "none" else "the fleet median"
    outliers = _outliers(runs, table, keys, units, values, gap, normalized, robust_z, flagged, reference, min_gap)
    if reference is not None:
        notes += _other_devices(runs, reference)
    notes += [f"SUPERSEDED: {r.label}: {r.superseded}" for r in runs if r.superseded]
    fleet = Fleet(runs, table, normalized, keys, units, basis, group_by, outliers, notes)
    _explain(fleet, groups, median, reference)
    return fleet


def _other_devices(runs: list[RunRecord], reference: RunRecord) -> list[str]:
    """A note naming the runs whose device is not the reference's part (their shares compare two parts)."""
    ref_sku = causes.sku_name(reference) or reference.device_name
    other = sorted({r.device_name for r in runs if r is not reference
                    and (causes.sku_name(r) or r.device_name) != ref_sku})
    if not other:
        return []
    return [f"the devices differ: the reference {reference.label} is {reference.device_name}, not "
            f"{', '.join(other)}: its shares compare different parts, not units of one part"]


def _outliers(runs, table, keys, units, values, gap, normalized, robust_z, flagged, reference,
              min_gap) -> list[Outlier]:
    """The flagged cells (value / group median in ``normalized``), and under a reference the runs more than
    ``min_gap`` below it."""
    import numpy as np

    out = []
    for i, j in zip(*np.nonzero(flagged.to_numpy()), strict=True):
        k = keys[j]
        out.append(Outlier(table["run"].iat[i], runs[i].path, k, float(values.iat[i, j]), units[k],
                           float(normalized.iat[i, j]), float(robust_z.iat[i, j]), "median/MAD",
                           vs_median=1 + float(gap.iat[i, j])))
    if reference is not None:
        taken = {(o.run, o.key) for o in out}
        for i, j in zip(*np.nonzero((normalized < 1 - min_gap).to_numpy()), strict=True):
            if (table["run"].iat[i], keys[j]) not in taken and runs[i] is not reference:
                out.append(Outlier(table["run"].iat[i], runs[i].path, keys[j], float(values.iat[i, j]),
                                   units[keys[j]], float(normalized.iat[i, j]), None, "reference"))
    def worst(o: Outlier) -> float:
        x = o.vs_median if o.vs_median is not None else o.normalized
        return x if o.direction == "low" else 2 - x
    return sorted(out, key=lambda o: (worst(o), o.run))


def _explain(fleet: Fleet, groups, median, reference: RunRecord | None = None) -> None:
    """Each outlier's causes: a run below the reference against the reference itself, any other against the run
    of its group closest to the group median on that ceiling."""
    by_label = {r.label: r for r in fleet.runs}
    flagged = {(o.run, o.key) for o in fleet.outliers}
    for o in fleet.outliers:
        if o.rule == "reference" and reference is not None:
            typical = reference
        else:
            i = fleet.table.index[fleet.table["run"] == o.run][0]
            same = fleet.table.index[(groups == groups.iat[i]) & fleet.table[o.key].notna()]
            candidates = [j for j in same if (fleet.table["run"].iat[j], o.key) not in flagged] or list(same)
            j = min(candidates, key=lambda j: abs(fleet.table[o.key].iat[j] - median[o.key].iat[i]))
            typical = by_label[fleet.table["run"].iat[j]]
        o.typical = typical.label
        if typical.label == o.run:
            o.causes = ["no typical run to compare with in its group"]
            continue
        o.causes = [c.replace("in the reference", f"in {typical.label}") for c in
                    causes.explain(by_label[o.run], typical, o.key, high=o.direction == "high")]

