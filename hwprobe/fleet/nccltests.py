"""nccl-tests' output read as a reference, and hwprobe's collectives compared with it.

nccl-tests prints one row per size with an out-of-place and an in-place half (time in us, algbw and busbw in
GB/s, #wrong; #wrong is "N/A" where nothing was checked: validation off, or in-place alltoall/sendrecv, whose
result NCCL does not define). ``parse`` reads every row of a log (several tests in one log too, and Open MPI's
``[1,0]<stdout>:`` prefixes); ``compare`` sets hwprobe's best verified variant beside nccl-tests' best at each
size asked, and says whether nccl-tests' best was a checked figure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from hwprobe import keys as K

GB = 1e9
_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\w+)\s+(\w+)\s+(-?\d+)\s+(.*)$")
_HALF = re.compile(r"^([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(N/A|\d+)\s*")
_TEST = re.compile(r"(?:Collective test starting:\s*|/|\s|^)([a-z_]+)_perf\b")
_TAG = re.compile(r"^\[\d+,\d+\]<std(?:out|err)>:")


@dataclass(frozen=True)
class Row:
    """One half of one nccl-tests row: S in bytes, seconds per op, algbw and busbw in B/s, wrong elements (None:
    not checked)."""

    test: str | None            # "all_reduce" (from "all_reduce_perf" in the log), None if the log never says
    size: int
    count: int
    dtype: str
    redop: str
    root: int
    variant: str                # "out_of_place" | "in_place"
    time_s: float
    algbw: float
    busbw: float
    wrong: int | None
    ranks: int | None           # "Rank" lines of the test's header, where printed


def parse(text: str, test: str | None = None) -> list[Row]:
    """Every row of an nccl-tests log (both halves). ``test`` names the collective when the log does not."""
    rows: list[Row] = []
    current, ranks = test, None
    for raw in text.splitlines():
        line = _TAG.sub("", raw)
        if line.startswith("#") or line.startswith(">") or "_perf" in line:
            m = _TEST.search(line)
            if m and ("_perf" in line):
                current, ranks = m.group(1), None
            if re.match(r"^#\s+Rank\s+\d+", line):
                ranks = (ranks or 0) + 1
            continue
        m = _ROW.match(line)
        if not m:
            continue
        rest, halves = m.group(6), []
        for variant in ("out_of_place", "in_place"):
            h = _HALF.match(rest)
            if not h:
                break
            halves.append((variant, h))
            rest = rest[h.end():]
        for variant, h in halves:
            t, alg, bus, wrong = h.groups()
            rows.append(Row(current, int(m.group(1)), int(m.group(2)), m.group(3), m.group(4), int(m.group(5)),
                            variant, float(t) * 1e-6, float(alg) * GB, float(bus) * GB,
                            None if wrong == "N/A" else int(wrong), ranks))
    return rows


@dataclass(frozen=True)
class Comparison:
    """hwprobe against nccl-tests for one collective at one size (busbw, B/s)."""

    op: str
    size: int
    hwprobe: float | None             # hwprobe's best verified variant
    hwprobe_variant: str | None
    reference: float | None           # nccl-tests' best variant
    reference_variant: str | None
    reference_checked: bool           # nccl-tests' best row had #wrong 0 (not N/A)
    reference_out_of_place: float | None

    @property
    def ratio(self) -> float | None:
        return self.hwprobe / self.reference if self.hwprobe and self.reference else None


def hwprobe_points(records: list[dict[str, Any]]) -> dict[tuple[str, int], dict[str, float]]:
    """{(op, S): {variant: busbw}} of gpu.nccl's verified sweep points (process mode: metric without ``.single``)
    from measurements.jsonl's records."""
    out: dict[tuple[str, int], dict[str, float]] = {}
    for r in records:
        p = r.get("params") or {}
        if r.get("probe") != "gpu.nccl" or r.get("kind") != "sweep" or r.get("verified") is not True:
            continue
        if ".single." in r.get("metric", "") or p.get(K.OP, "").endswith(".avg"):
            continue
        out.setdefault((p[K.OP], int(p[K.BYTES])), {})[p.get(K.VARIANT, "out_of_place")] = float(p[K.BUSBW])
    return out


def compare(hw: dict[tuple[str, int], dict[str, float]], ref: list[Row], ops, sizes) -> list[Comparison]:
    """One Comparison per op and size: the best of each side's variants (hwprobe's are all checked)."""
    out = []
    for op in ops:
        for s in sizes:
            mine = hw.get((op, s), {})
            theirs = [r for r in ref if r.test == op and r.size == s]
            hv = max(mine, key=mine.get) if mine else None
            best = max(theirs, key=lambda r: r.busbw) if theirs else None
            oop = next((r.busbw for r in theirs if r.variant == "out_of_place"), None)
            out.append(Comparison(op, s, mine.get(hv) if hv else None, hv, best.busbw if best else None,
                                  best.variant if best else None, bool(best and best.wrong == 0), oop))
    return out


def table(rows: list[Comparison], need: float = 0.98) -> str:
    """Markdown: one line per op and size, the ratio and whether it meets ``need``."""
    head = ("| collective | S | hwprobe busbw GB/s (variant) | nccl-tests best GB/s (variant, checked) | "
            f"nccl-tests out-of-place GB/s | ratio | >= {need:.0%} |\n|---|---|---|---|---|---|---|\n")
    lines = []
    for c in rows:
        hw = f"{c.hwprobe / GB:.1f} ({_v(c.hwprobe_variant)})" if c.hwprobe else "-"
        ref = (f"{c.reference / GB:.1f} ({_v(c.reference_variant)}, {'yes' if c.reference_checked else 'N/A'})"
               if c.reference else "-")
        oop = f"{c.reference_out_of_place / GB:.1f}" if c.reference_out_of_place else "-"
        ok = "-" if c.ratio is None else ("yes" if c.ratio >= need else "**no**")
        ratio = f"{c.ratio:.3f}" if c.ratio else "-"
        lines.append(f"| {c.op} | {c.size / 2**30:g} GiB | {hw} | {ref} | {oop} | {ratio} | {ok} |")
    return head + "\n".join(lines) + "\n"


def _v(variant: str | None) -> str:
    return (variant or "-").replace("_", "-")
