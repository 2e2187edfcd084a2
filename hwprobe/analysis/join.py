"""Measured times joined to the model's layers by name, the achieved rate and % of attainable per layer (or
per fused group), what could not be matched, and the top time consumers with advice (004's top-5).

Names: exact first; then TensorRT's fused names (``a + b + PWN(c)``, ``{ForeignNode[a...b]}``) split into their
layers; then a layer name standing alone inside the record name (or the record name, truncated by the
PyTorch table with "...", as a unique prefix). TensorRT's "Reformatting CopyNode" records are never matched:
they are layout conversions TensorRT inserted, listed apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hwprobe.analysis.classify import KernelClass, classify
from hwprobe.analysis.timings import Times, Timing

if TYPE_CHECKING:
    from hwprobe.analysis.roofline import Analysis


@dataclass
class Group:
    """One timed record and the layers it covers."""

    name: str
    layers: list[int]
    measured_s: float
    predicted_s: float
    ops: float
    bytes: float
    kernel: KernelClass | None = None
    records: int = 1

    @property
    def achieved(self) -> float | None:
        return self.ops / self.measured_s if self.measured_s else None

    @property
    def of_attainable(self) -> float | None:
        """Predicted (roofline) time / measured time: the share of the attainable rate reached."""
        return self.predicted_s / self.measured_s if self.measured_s else None


@dataclass
class Joined:
    times: list[Times]
    groups: list[Group]
    unmatched: list[Timing]
    reformats: list[Timing]
    kernels: list[tuple[Timing, KernelClass]]
    untimed: list[str] = field(default_factory=list)

    @property
    def nested(self) -> bool:
        return any(t.nested for t in self.times)

    @property
    def per(self) -> str:
        return "; ".join(f"{t.format}: {t.per}" for t in self.times)


def _norm(s: str) -> str:
    return s.strip().lower()


def _split_top(s: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in s:
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += (ch == "(") - (ch == ")")
        cur += ch
    return [x.strip() for x in out + [cur] if x.strip()]


def _unwrap(s: str) -> list[str]:
    m = re.fullmatch(r"PWN\((.*)\)", s.strip())
    return [x for part in _split_top(m.group(1)) for x in _unwrap(part)] if m else [s.strip()]


def _parts(name: str) -> list[str]:
    """Layer names inside a TensorRT fused name: split on ' + ', unwrap PWN(a, PWN(b))."""
    return [x for part in re.split(r"\s+\+\s+", name) for x in _unwrap(part) if x]


class _Index:
    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.by = {}
        for i, n in enumerate(names):
            self.by.setdefault(_norm(n), i)
        # every layer name standing alone (not inside a longer dotted/slashed name), longest first: one regex
        from hwprobe.analysis.torch_ranges import module_path

        self.scopes: dict[str, list[int]] = {}      # record_function ranges named by module path (torch_ranges)
        for i, n in enumerate(names):
            mp = module_path(n)
            if mp:
                self.scopes.setdefault(mp.lower(), []).append(i)
        alts = "|".join(re.escape(k) for k in sorted(self.by, key=len, reverse=True))
        self.alone = re.compile(rf"(?<![\w./])(?:{alts})(?![\w./])") if alts else None

    def match(self, rec: str) -> list[int]:
        n = _norm(rec)
        if n in self.by:
            return [self.by[n]]
        m = re.fullmatch(r"\{foreignnode\[(.+?)\.\.\.(.+?)\]\}", n)
        if m and m.group(1) in self.by and m.group(2) in self.by:
            a, b = sorted((self.by[m.group(1)], self.by[m.group(2)]))
            return list(range(a, b + 1))
        hits = sorted({self.by[_norm(p)] for p in _parts(rec) if _norm(p) in self.by})
        if hits:
            return hits
        if n in self.scopes:
            return self.scopes[n]
        if n.endswith("..."):
            pre = [i for k, i in self.by.items() if k.startswith(n[:-3])]
            return pre if len(pre) == 1 else []
        alone = {self.by[m.group(0)] for m in self.alone.finditer(n)} if self.alone else set()
        return list(alone) if len(alone) == 1 else []


def merge_info(times: list[Times]) -> list[Timing]:
    """Timed records, with --exportLayerInfo's type and tactic attached by name."""
    info = {_norm(r.name): r for t in times if t.format.endswith("exportLayerInfo") for r in t.records}
    timed = [r for t in times if not t.format.endswith("exportLayerInfo") for r in t.records]
    for r in timed:
        extra = info.get(_norm(r.name))
        if extra:
            r.layer_type = r.layer_type or extra.layer_type
            r.kernel = r.kernel or extra.kernel
            r.kernels = r.kernels or extra.kernels
    if not timed:                          # layer info alone: annotate, no times
        return [Timing(r.name, None, layer_type=r.layer_type, kernel=r.kernel, kernels=r.kernels)
                for r in info.values()]
    return timed


def join(a: Analysis, times: list[Times]) -> Joined:
    """Match ``times`` to ``a``'s layers and add measured columns to ``a.layers``."""
    df = a.layers
    idx = _Index(list(df["name"]))
    groups: dict[tuple[int, ...], Group] = {}
    unmatched, reformats, kernels = [], [], []
    for r in merge_info(times):
        if r.kernel:
            kernels.append((r, classify(r.kernel)))
        if r.name.lower().startswith("reformatting copynode"):
            reformats.append(r)
            continue
        hit = idx.match(r.name)
        if not hit:
            unmatched.append(r)
            if not r.kernel and r.time_s:          # a timed layer without a tactic name: kept, unclassified
                kernels.append((r, classify(r.layer_type or r.name)))
            continue
        key = tuple(hit)
        k = classify(r.kernel) if r.kernel else None
        g = groups.get(key)
        if g is None:
            sub = df.iloc[list(hit)]
            groups[key] = Group(r.name, list(hit), r.time_s or 0.0, float(sub["time_s"].sum()),
                                float(sub["ops"].sum()), float(sub["bytes"].sum()), k)
        else:
            g.measured_s += r.time_s or 0.0
            g.records += 1
            g.kernel = g.kernel or k
    _columns(a, list(groups.values()))
    timed = {i for g in groups.values() for i in g.layers}
    untimed = [n for i, n in enumerate(df["name"]) if i not in timed]
    return Joined(times, list(groups.values()), unmatched, reformats, kernels, untimed)


def _columns(a: Analysis, groups: list[Group]) -> None:
    """Per-layer measured time (a group's time split by the layers' predicted shares) and the group's figures."""
    df = a.layers
    for col in ("measured_s", "achieved", "of_attainable"):
        df[col] = None
    df["group"], df["kernel"], df["kernel_unit"] = "", "", ""
    for g in groups:
        pred = df.loc[g.layers, "time_s"]
        total = float(pred.sum()) or 1.0
        for i in g.layers:
            df.at[i, "measured_s"] = g.measured_s * float(df.at[i, "time_s"]) / total if g.measured_s else None
            df.at[i, "achieved"] = g.achieved
            df.at[i, "of_attainable"] = g.of_attainable
            df.at[i, "group"] = g.name
            if g.kernel:
                df.at[i, "kernel"], df.at[i, "kernel_unit"] = g.kernel.name, g.kernel.unit
    for col in ("measured_s", "achieved", "of_attainable"):
        df[col] = df[col].astype(float)
