"""Every curve hwprobe measures, as matplotlib figures: each kind is a function of one or more runs (a
results directory or a profile.json, see hwprobe.report.source); several runs are overlaid (compare).

``figure(kind, runs)`` returns a Figure or raises NoData with the reason a run lacks that curve;
``draw(runs, out_dir, kinds)`` writes PNG and SVG files and says what it left out and why.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path

from hwprobe.report.source import Run

KINDS = ("roofline", "bandwidth", "latency", "gemm", "align", "sparse", "power", "gap")
_MODULES = {"roofline": "roofline", "bandwidth": "memory", "latency": "memory", "gemm": "gemm", "align": "gemm",
            "sparse": "power", "power": "power", "gap": "gap"}
FORMATS = ("png", "svg")


class NoData(Exception):
    """The runs hold nothing this plot can draw; the message says what is missing."""


def absent(runs: list[Run], what: str, source: str, sweep: bool = False) -> NoData:
    """Why a kind can't be drawn, in the reader's terms: the probe that measures it, or that a CPU run has
    none, or that a profile.json alone lacks the sweep points."""
    if all(r.kind == "cpu" for r in runs):
        return NoData(f"no {what} in this run: the CPU suite does not measure it")
    if sweep and not any(r.measurements for r in runs):
        return NoData(f"a profile.json alone holds no {what} points: give the results directory with "
                      "measurements.jsonl")
    return NoData(f"no {what} in this run (measured by {source})")


@dataclass
class Drawn:
    files: dict[str, list[Path]] = field(default_factory=dict)     # kind -> files written
    left_out: dict[str, str] = field(default_factory=dict)         # kind -> why


def figure(kind: str, runs: list[Run]):
    """The Figure of ``kind`` for ``runs`` (one: its own curves; several: overlaid)."""
    if kind not in KINDS:
        raise ValueError(f"unknown plot kind {kind!r}; kinds: {', '.join(KINDS)}")
    mod = importlib.import_module(f"hwprobe.report.plots.{_MODULES[kind]}")
    return getattr(mod, kind)(runs)


def save(fig, out_dir: Path, name: str, formats: tuple[str, ...] = FORMATS) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for fmt in formats:
        p = out_dir / f"{name}.{fmt}"
        fig.savefig(p, format=fmt, metadata=_metadata(fmt))
        paths.append(p)
    return paths


def _metadata(fmt: str) -> dict:
    """No creation date in SVG and PNG, so the same run gives the same files."""
    if fmt == "svg":
        return {"Date": None}
    if fmt == "png":
        return {"Software": None}
    return {}


def svg_text(fig) -> str:
    """The figure as an SVG element to inline in HTML (no XML prolog, no DOCTYPE)."""
    import io

    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg"):]


def svgs(runs: list[Run], kinds: tuple[str, ...] = KINDS) -> dict[str, str | NoData]:
    """Every kind as inline SVG text (or the NoData saying why not): drawn once for the HTML and the Markdown."""
    out: dict[str, str | NoData] = {}
    for kind in kinds:
        try:
            fig = figure(kind, runs)
        except NoData as e:
            out[kind] = e
            continue
        try:
            out[kind] = svg_text(fig)
        finally:
            close(fig)
    return out


def close(fig) -> None:
    from hwprobe.report.plots.style import pyplot

    pyplot().close(fig)


def draw(runs: list[Run], out_dir: Path, kinds: tuple[str, ...] = KINDS,
         formats: tuple[str, ...] = FORMATS, name_of=None) -> Drawn:
    """Write each kind's files into ``out_dir``; a kind without data is left out with its reason."""
    done = Drawn()
    for kind in kinds:
        try:
            fig = figure(kind, runs)
        except NoData as e:
            done.left_out[kind] = str(e)
            continue
        try:
            done.files[kind] = save(fig, out_dir, name_of(kind) if name_of else kind, formats)
        finally:
            close(fig)
    return done
