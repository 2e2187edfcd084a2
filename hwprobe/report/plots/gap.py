"""The gap waterfall per precision and unit: datasheet -> max clock -> clock under load (power) -> path
efficiency = measured, then the other path and the library GEMM sustained on random operands."""

from __future__ import annotations

import math
import textwrap

from hwprobe.report.gapview import CHAIN, Chain, chains
from hwprobe.report.plots import NoData
from hwprobe.report.plots import style as st
from hwprobe.report.source import Run

CATEGORY_NAMES = {"clock": "max clock", "power": "clock under\nload (power)", "sm_clock": "SM clock\nbelow set",
                  "measured": "measured"}
UP, DOWN = "#4daf4a", "#e41a1c"


def gap(runs: list[Run]):
    per_run = [(i, run, chains(run.profile)) for i, run in enumerate(runs)]
    items = [(i, run, ch) for i, run, chs in per_run for ch in chs]
    if not items:
        raise NoData("no gap to draw: the profile has no compute ceiling with theory beside it")
    if len(runs) > 1:   # the same precision and unit of each run side by side, one row each
        keys = list(dict.fromkeys((ch.precision, ch.unit) for _, _, chs in per_run for ch in chs))
        items.sort(key=lambda t: (keys.index((t[2].precision, t[2].unit)), t[0]))
    plt = st.pyplot()
    cols = min(len(runs), 3) if len(runs) > 1 else min(3, len(items))
    rows = math.ceil(len(items) / cols)
    height = 3.7 * rows + 0.9
    fig, axes = plt.subplots(rows, cols, figsize=(5.0 * cols, height), squeeze=False)
    for ax, (_, run, ch) in zip(axes.flat, items, strict=False):
        _panel(ax, ch, run.label if len(runs) > 1 else "")
    for ax in list(axes.flat)[len(items):]:
        ax.set_visible(False)
    name = " vs ".join(r.label for r in runs) if len(runs) > 1 else runs[0].device_name
    sm = any(s.category == "sm_clock" for _, _, ch in items for s in ch.steps)
    top = st.header(fig, f"{name}: from the datasheet to the measured ceiling",
                    "each panel in % of its first bar: x the max clock over the datasheet's clock, x the clock under "
                    "load (power cap)" + (", x the SM clock below that set clock (the kernel's cycles over globaltimer "
                                          "vs NVML)" if sm else "") +
                    ", x the best kernel's efficiency at that clock = measured; then the other path, and the library "
                    "GEMM sustained on random operands at the power cap (hatched)")
    st.grid(fig, rows, cols, top=top + 0.3, bottom=0.8, hgap=1.05, wgap=0.55)
    return fig


def _panel(ax, ch: Chain, who: str) -> None:
    base = ch.start.value
    color = st.precision_color(ch.precision)
    labels, prev = [], base
    for k, s in enumerate(ch.steps):
        v = s.value / base
        if s.category == "start":
            ax.bar(k, v, 0.7, color="#bbbbbb")
            text = "100%"
        elif s.category in CHAIN:
            lo, hi = sorted((prev / base, v))
            ax.bar(k, max(hi - lo, 0.002), 0.7, bottom=lo, color=UP if v >= prev / base else DOWN)
            ax.plot([k - 1.35, k + 0.35], [prev / base] * 2, color="#777777", lw=0.6)
            text = f"x{s.factor:.3f}"
        elif s.category == "measured":
            ax.bar(k, v, 0.7, color=color)
            text = f"{v:.1%}"
        else:
            ax.bar(k, v, 0.7, color=color, alpha=0.45, hatch="//" if s.category == "data" else None)
            text = f"{v:.1%}"
        ax.text(k, max(v, prev / base) if s.category in CHAIN else v, text, ha="center",
                va="bottom", fontsize=7)
        if s.category in ("start", "measured", "other", "data"):   # absolute values on the full bars
            ax.text(k, v / 2, st.si_short(s.value), ha="center", va="center", fontsize=6.5, rotation=90,
                    color="#222222")
        if s.category in (*CHAIN, "measured", "start"):
            prev = s.value
        labels.append(_tick(s))
    ax.set_xticks(range(len(labels)), labels, fontsize=6.5, rotation=35 if len(labels) > 6 else 0,
                  ha="right" if len(labels) > 6 else "center")
    top = max(s.value for s in ch.steps) / base
    ax.set_ylim(0, top * 1.16)
    ax.yaxis.set_major_formatter(_pct())
    unit = ch.rate_unit
    ax.set_title(f"{ch.title}{' ' + who if who else ''} ({unit})", loc="left", fontweight="bold", fontsize=9)


def _tick(s) -> str:
    if s.category == "start":
        return "datasheet" if s.label == "datasheet" else "theory\n@max clock"
    if s.category in CATEGORY_NAMES:
        return CATEGORY_NAMES[s.category]
    if s.category in ("path", "factor"):
        return textwrap.fill(s.label, 12)
    if s.category == "other":
        return textwrap.fill(s.label, 12)
    return textwrap.fill(s.label.replace(" sustained", "") + " sustained", 12)


def _pct():
    import matplotlib.ticker as mt

    return mt.FuncFormatter(lambda v, _p=None: f"{100 * v:.0f}%")
