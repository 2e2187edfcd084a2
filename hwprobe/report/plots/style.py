"""What every plot shares: matplotlib set up headless, one colour per precision and per run, SI tick labels,
and labels placed on their lines without overlapping each other."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from hwprobe.vocab import profile_precision

PRECISION_COLORS = {"fp64": "#6a3d9a", "fp32": "#1f78b4", "tf32": "#17becf", "fp16": "#33a02c", "bf16": "#8c8c00",
                    "fp8": "#ff7f00", "int32": "#7f7f7f", "int8": "#e31a1c", "int4": "#a65628", "int1": "#999999"}
RUN_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
SERIES_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
                 "#bcbd22"]
RUN_MARKERS = ["o", "s", "^", "D", "v", "P"]
LEVEL_STYLES = {"dram": ("#222222", "-"), "l2": ("#555555", "-."), "l1": ("#888888", ":"), "shared": ("#aaaaaa", ":")}
DATASHEET_LS = (0, (5, 3))
TEXT_PT = 8.0


def pyplot():
    """matplotlib.pyplot on the Agg backend (no display needed), with the report's defaults."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({
        "font.size": 9, "axes.titlesize": 10, "axes.labelsize": 9, "legend.fontsize": 8, "xtick.labelsize": 8,
        "ytick.labelsize": 8, "axes.grid": True, "grid.alpha": 0.25, "figure.dpi": 100, "savefig.dpi": 110,
        "svg.fonttype": "none", "axes.spines.top": False, "axes.spines.right": False,
        "font.family": ["DejaVu Sans", "sans-serif"],
    })
    return plt


def precision_color(precision: str) -> str:
    return PRECISION_COLORS.get(profile_precision(precision), "#333333")


def si_tick(value: float, _pos=None) -> str:
    """1e12 -> "1T", 2.5e15 -> "2.5P", 0.125 -> "0.125"."""
    if value <= 0:
        return "0"
    for scale, p in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= scale:
            return f"{value / scale:g}{p}"
    return f"{value:g}"


def si_short(value: float, digits: int = 3) -> str:
    """1.2423e15 -> "1.24P" (a bar label)."""
    for scale, p in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= scale:
            return f"{value / scale:.{digits}g}{p}"
    return f"{value:.{digits}g}"


def bytes_tick(value: float, _pos=None) -> str:
    for scale, name in ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")):
        if value >= scale:
            return f"{value / scale:g} {name}"
    return f"{value:g} B"


def pow2_tick(value: float, _pos=None) -> str:
    """Powers of two as 1/8, 1/4, ..., 1, 2, ..., 4096."""
    if value <= 0:
        return ""
    if value < 1:
        return f"1/{round(1 / value)}"
    return f"{value:g}"


def log2_axis(axis) -> None:
    import matplotlib.ticker as mt

    axis.set_major_locator(mt.LogLocator(base=2, numticks=30))
    axis.set_major_formatter(mt.FuncFormatter(pow2_tick))
    axis.set_minor_locator(mt.NullLocator())


def si_axis(axis) -> None:
    import matplotlib.ticker as mt

    axis.set_major_formatter(mt.FuncFormatter(si_tick))
    axis.set_minor_formatter(mt.NullFormatter())


def bytes_axis(axis) -> None:
    import matplotlib.ticker as mt

    axis.set_major_locator(mt.LogLocator(base=4, numticks=30))
    axis.set_major_formatter(mt.FuncFormatter(bytes_tick))
    axis.set_minor_locator(mt.NullLocator())


@dataclass
class Label:
    """A text to put at data point (x, y) on its line; ``nudge`` moves it (in points) off the line."""

    x: float
    y: float
    text: str
    color: str = "black"
    ha: str = "right"
    size: float = TEXT_PT
    style: str = "normal"
    weight: str = "normal"
    kw: dict[str, Any] = field(default_factory=dict)


def place_column(ax, labels: list[Label], lines_y: list[float] | None = None, gap_pt: float = 1.5) -> None:
    """Draw labels of horizontal lines in one column (they share an x): each just above its line, else just
    below it, where it covers neither another label nor another line; else pushed up above the last one.
    The axes must have their final limits and size."""
    if not labels:
        return
    px = ax.figure.dpi / 72.0
    trans = ax.transData
    lines = sorted(trans.transform((labels[0].x, y))[1] for y in (lines_y or [lb.y for lb in labels]))
    boxes: list[tuple[float, float]] = []

    def free(lo: float, hi: float, own: float) -> bool:
        if lo < ax.bbox.y0 or hi > ax.bbox.y1:
            return False
        if any(lo < b_hi and hi > b_lo for b_lo, b_hi in boxes):
            return False
        return not any(lo - 1 < y < hi + 1 for y in lines if abs(y - own) > 2)  # 2 px: its own datasheet line

    placed: list[tuple[Label, float]] = []
    for lb in sorted(labels, key=lambda lb: lb.y):
        h = lb.size * 1.25 * px * (lb.text.count("\n") + 1)
        own = trans.transform((lb.x, lb.y))[1]
        above, below = own + gap_pt * px, own - gap_pt * px - h
        y0 = next((y for y in (above, below) if free(y, y + h, own)), None)
        if y0 is None:
            y0 = max([above] + [b_hi + 1 for _, b_hi in boxes])
        boxes.append((y0, y0 + h))
        placed.append((lb, y0))
    inv = trans.inverted()
    for lb, y_disp in placed:
        x_disp = trans.transform((lb.x, lb.y))[0]
        _, y = inv.transform((x_disp, y_disp))
        ax.text(lb.x, y, lb.text, color=lb.color, ha=lb.ha, va="bottom", fontsize=lb.size, fontstyle=lb.style,
                fontweight=lb.weight, clip_on=False,
                bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.75}, **lb.kw)


def grid(fig, rows: int, cols: int, *, left: float = 0.65, right: float = 0.2, top: float = 1.0,
         bottom: float = 0.75, hgap: float = 1.0, wgap: float = 0.6) -> None:
    """Place a grid of axes with margins and gaps in inches: what tight_layout finds, without its cost
    (a second of text measuring on a 12-panel figure)."""
    w, h = fig.get_size_inches()
    ax_w = (w - left - right - (cols - 1) * wgap) / cols
    ax_h = (h - top - bottom - (rows - 1) * hgap) / rows
    fig.subplots_adjust(left=left / w, right=1 - right / w, top=1 - top / h, bottom=bottom / h,
                        wspace=wgap / ax_w if cols > 1 else 0, hspace=hgap / ax_h if rows > 1 else 0)


def slope_angle(ax, x0: float, y0: float, x1: float, y1: float) -> float:
    """The on-screen angle (degrees) of the segment between two data points."""
    (a, b), (c, d) = ax.transData.transform([(x0, y0), (x1, y1)])
    return math.degrees(math.atan2(d - b, c - a))


def note(fig, text: str, y: float = 0.005) -> None:
    """A footnote under the axes (wrapped by the caller's line breaks)."""
    fig.text(0.01, y, text, ha="left", va="bottom", fontsize=7.5, color="#444444", wrap=True)


def run_style(i: int) -> dict[str, Any]:
    return {"color": RUN_COLORS[i % len(RUN_COLORS)], "marker": RUN_MARKERS[i % len(RUN_MARKERS)]}


def header(fig, title: str, subtitle: str = "", title_pt: float = 12, sub_pt: float = 8) -> float:
    """A figure's title and subtitle, each wrapped to the figure's width and stacked from its top edge (in inches,
    so neither runs off a narrow figure nor over the other). Returns the inches they take: the grid's top."""
    import textwrap

    w, h = fig.get_size_inches()
    chars = lambda pt: max(20, int((w - 0.2) * 72 / (pt * 0.6)))   # a generous average glyph width
    t_lines = textwrap.fill(title, chars(title_pt))
    y = 0.12
    fig.suptitle(t_lines, fontsize=title_pt, fontweight="bold", x=0.1 / w, ha="left", y=1 - y / h, va="top")
    y += (t_lines.count("\n") + 1) * title_pt * 1.3 / 72 + 0.06
    if subtitle:
        s_lines = textwrap.fill(subtitle, chars(sub_pt))
        fig.text(0.1 / w, 1 - y / h, s_lines, fontsize=sub_pt, color="#333333", va="top", ha="left")
        y += (s_lines.count("\n") + 1) * sub_pt * 1.3 / 72
    return y + 0.1


def legend_below(ax, ncol: int = 1, fontsize: float = 7) -> None:
    """The legend under the axes, outside the data: an overlay's curves run everywhere a legend could sit inside
    (tight_layout makes room for it)."""
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), fontsize=fontsize, ncol=ncol, frameon=False)
