"""The report's content, once, as blocks: html.py and markdown.py only lay it out, so both carry the same.

Sections: device and environment, ceilings, roofline, gap, curves, findings, skipped, invalid and errors,
provenance. A plot a run has no data for is a sentence saying what is missing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hwprobe.report import tables as tb
from hwprobe.report import text as tx
from hwprobe.report.gapview import chains
from hwprobe.report.source import Run
from hwprobe.units import si

SECTIONS = [("device", "Device and environment"), ("ceilings", "Ceilings"), ("roofline", "Roofline"),
            ("gap", "Gap to the datasheet"), ("curves", "Curves"), ("findings", "Findings"),
            ("skipped", "Skipped"), ("invalid", "Invalid results and errors"), ("provenance", "Provenance")]
CURVES = [("bandwidth", "Bandwidth against working set"), ("latency", "Load latency against working set"),
          ("gemm", "GEMM efficiency against size"), ("align", "Aligned and odd sizes"),
          ("sparse", "2:4 sparse speed-up"), ("power", "Sustained GEMMs at the power cap")]
CAPTIONS = {
    "roofline": "Measured roofs (solid) beside the datasheet (dashed), per kind of core; memory slopes per level; "
                "the intensity sweep's points.",
    "gap": "From the datasheet figure to the measured ceiling, factor by factor.",
    "bandwidth": "Read bandwidth against working set, with the detected capacities (effective: where the curve "
                 "falls 10% below its plateau) beside the physical sizes; host copies against transfer size.",
    "latency": "One SM's dependent-load latency against its working set; the step inside L2 is where its near "
               "partition ends.",
    "gemm": "Library GEMMs as a share of theory at the clock sampled during each point, per path and size.",
    "align": "The same GEMM at an aligned size and one past it.",
    "sparse": "cuSPARSELt 2:4 against the dense GEMM at the same size, beside the promised 2x.",
    "power": "Library GEMMs held at the power cap on different operand data (each window's length, sustain_s, in its "
             "record: 1.5 s since 2026-11-27, 2 s before).",
}


@dataclass
class Para:
    text: str
    muted: bool = False
    warn: bool = False


@dataclass
class KeyValues:
    rows: list[tuple[str, str]]


@dataclass
class TableBlock:
    table: tb.Table


@dataclass
class Items:
    items: list[tx.Item]
    empty: str = "none"
    title: str = ""


@dataclass
class Figure:
    kind: str
    title: str
    caption: str
    render: Any = None            # the layout's own rendering (inline SVG text, a PNG path), set by the caller
    missing: str = ""             # why there is no figure


@dataclass
class Section:
    id: str
    title: str
    blocks: list = field(default_factory=list)


def build(run: Run, figure: Callable[[str], Any]) -> list[Section]:
    """The sections of one run's report; ``figure(kind)`` returns the layout's rendering of that plot or
    raises plots.NoData."""
    from hwprobe.report.plots import NoData

    p = run.profile
    out = {sid: Section(sid, title) for sid, title in SECTIONS}

    def fig(kind: str, title: str) -> Figure:
        try:
            return Figure(kind, title, CAPTIONS.get(kind, ""), figure(kind))
        except NoData as e:
            return Figure(kind, title, CAPTIONS.get(kind, ""), missing=str(e))

    out["device"].blocks += [KeyValues(tx.device_rows(p.device)), KeyValues(_environment(run))]
    if p.partial:
        out["device"].blocks.insert(0, Para("This run was interrupted: the profile holds what finished."))
    if not tx.is_measured(p):
        out["device"].blocks.insert(0, Para(tx.NOT_MEASURED + ". " + str(run.environment.get("theory") or ""),
                                            warn=True))
    for t in (tb.compute_table(p, run.kind), tb.memory_table(p, run.kind), tb.links_table(p), tb.ridge_table(p)):
        if t.rows:
            out["ceilings"].blocks.append(TableBlock(t))
    if not out["ceilings"].blocks:
        out["ceilings"].blocks.append(Para("No ceilings were measured in this run.", muted=True))
    out["roofline"].blocks.append(fig("roofline", "Measured roofline"))
    out["gap"].blocks += [fig("gap", "Gap waterfall"), TableBlock(gap_table(p))]
    out["curves"].blocks += [fig(kind, title) for kind, title in CURVES]
    out["findings"].blocks += [Items(tx.finding_items(p), empty="no findings", title="From the probes"),
                               Items(tx.datasheet_items(p), empty="theory and the datasheet agree",
                                     title="Theory beside the datasheet")]
    out["skipped"].blocks.append(Items(tx.skip_items(p), empty="nothing was skipped"))
    out["invalid"].blocks += [Items(tx.invalid_items(p), empty="no invalid results",
                                    title="Invalid (measured, but never used as a ceiling)"),
                              Items(tx.error_items(p), empty="no errors", title="Errors (probes that failed)")]
    out["provenance"].blocks.append(KeyValues(tx.provenance(run.environment, p)))
    times = tb.probe_time_table(run.environment)
    if times.rows:
        out["provenance"].blocks.append(TableBlock(times))
    return list(out.values())


def _environment(run: Run) -> list[tuple[str, str]]:
    env = run.environment
    keep = ("host", "host CPU", "platform", "CUDA runtime / driver", "cuBLAS")
    rows = [(k, v) for k, v in tx.provenance(env, run.profile) if k in keep]
    return rows or [("environment", "not recorded")]


def _other(s, unit: str) -> str:
    if s.category == "data":
        return f"{s.label} on random operands {si(s.value, unit)} (x{s.factor:.3f} vs zeros)"
    return f"{s.label} {si(s.value, unit)} (x{s.factor:.3f})"


def gap_table(p) -> tb.Table:
    cols = [tb.Column("precision", "precision"), tb.Column("unit", "cores"),
            tb.Column("start", "datasheet (or theory)", "rate"), tb.Column("clock", "x max clock", "ratio"),
            tb.Column("power", "x under load", "ratio"), tb.Column("load", "under load"),
            tb.Column("sm_clock", "x SM clock below set", "ratio"),
            tb.Column("path", "x path", "ratio"), tb.Column("path_name", "best path"),
            tb.Column("measured", "measured", "rate"), tb.Column("share", "% of first", "pct"),
            tb.Column("other", "other paths")]
    t = tb.Table("Gap chain", cols, note="factors multiply: first x max clock x under load x path = measured")
    for ch in chains(p):
        by = {s.category: s for s in ch.steps}
        m = ch.measured
        t.rows.append({
            "precision": ch.precision, "unit": tx.UNIT_SHORT.get(ch.unit, ch.unit), "_unit": ch.rate_unit,
            "start": ch.start.value, "clock": by["clock"].factor if "clock" in by else None,
            "power": by["power"].factor if "power" in by else None,
            "load": by["power"].why if "power" in by else None,
            "sm_clock": by["sm_clock"].factor if "sm_clock" in by else None,
            "path": by["path"].factor if "path" in by else None,
            "path_name": by["path"].label if "path" in by else None, "measured": m.value if m else None,
            "share": m.value / ch.start.value if m and ch.start.value else None,
            "other": "; ".join(_other(s, ch.rate_unit) for s in ch.steps if s.category in ("other", "data")) or None,
        })
    return t


def subtitle(run: Run, code: Callable[[str], str], strong: Callable[[str], str]) -> str:
    """The line under a report's title (suite, when measured, version, partial or spec-derived), the same in
    HTML and Markdown; ``code`` and ``strong`` mark up a name and a warning in the target format."""
    env, p = run.environment, run.profile
    measured = tx.is_measured(p)
    bits = [f"suite {code(env['suite'])}" if env.get("suite") else "",
            f"measured {env.get('started_utc') or p.created_utc}" if measured else "",
            f"hwprobe {p.hwprobe_version}" if p.hwprobe_version else "",
            strong("PARTIAL: interrupted") if p.partial else "",
            strong("SPEC-DERIVED, NOT MEASURED") if not measured else "",
            strong(f"SUPERSEDED: {p.superseded}") if getattr(p, "superseded", "") else ""]
    return " · ".join(b for b in bits if b)

