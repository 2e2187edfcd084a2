"""The fleet as a strip plot: one column per ceiling, one dot per run (normalized), outliers marked and named."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

MAX_LABELS = 16           # outliers named on the plot; the rest are in the table and --json


def strip_plot(fleet, out: Path | str, *, n_shown: int, groups, legend: str, short: Callable[[str], str],
               title: str | None = None) -> Path:
    """``fleet``: hwprobe.fleet.compare's Fleet; ``groups``: its runs' group per row; ``n_shown``: how many ceilings
    (as the text shows); ``legend`` and ``short``: the text's words for the ceilings (hwprobe.fleet.compare.draw
    passes them, so this module imports nothing of the fleet's)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    keys = fleet.keys[:n_shown]
    if not keys:
        raise ValueError("no ceilings to plot")
    names = sorted(groups.unique())
    colors = plt.get_cmap("tab10")
    flagged = {(o.run, o.key): o for o in fleet.outliers}
    fig, ax = plt.subplots(figsize=(max(7.0, 1.05 * len(keys) + 2), 5.2), constrained_layout=True)
    rng = np.random.default_rng(0)                      # fixed jitter: the same fleet draws the same picture
    runs = fleet.table["run"].to_numpy()
    where: dict[tuple[str, str], tuple[float, float]] = {}   # (run, key) -> the outlier dot's position
    for x, k in enumerate(keys):
        y = fleet.normalized[k].to_numpy(dtype=float)
        jitter = rng.uniform(-0.28, 0.28, size=len(y))
        for gi, g in enumerate(names):
            sel = (groups == g).to_numpy() & np.isfinite(y)
            ax.scatter(x + jitter[sel], y[sel], s=14, alpha=0.55, color=colors(gi % 10), linewidths=0,
                       label=g if x == 0 else None)
        out_idx = [i for i, r in enumerate(runs) if (r, k) in flagged and np.isfinite(y[i])]
        where.update({(runs[i], k): (x + jitter[i], y[i]) for i in out_idx})
        ax.scatter(x + jitter[out_idx], y[out_idx], s=46, facecolors="none", edgecolors="red", linewidths=1.4,
                   label="outlier" if x == 0 and out_idx else None, zorder=3)
    ax.axhline(1.0, color="0.35", lw=0.9, ls="--", zorder=0)
    ax.set_xticks(range(len(keys)))
    one_basis = fleet.basis.startswith("reference") or len(names) == 1
    ax.set_xticklabels([f"{short(k)}\n{_basis_value(fleet, k)}" if one_basis else short(k) for k in keys], fontsize=8)
    ax.set_xlim(-0.6, len(keys) - 0.4)
    ax.set_ylabel(f"value / {fleet.basis}")
    ax.yaxis.set_major_formatter(matplotlib.ticker.PercentFormatter(1.0))
    ax.grid(axis="y", alpha=0.3)
    n_out = len({o.run for o in fleet.outliers})
    shown = f"{len(keys)} of {len(fleet.keys)} ceilings" if len(keys) < len(fleet.keys) else f"{len(keys)} ceilings"
    ax.set_title(title or f"{len(fleet.runs)} runs, {shown}, {n_out} run(s) with outliers", fontsize=11)
    if len(names) > 1 or fleet.outliers:        # beside the axes: inside, it would sit on dots or names
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.005, 1.0), frameon=False)
    what = ("with the reference value (100%)" if fleet.basis.startswith("reference") else
            "with the median (100%)" if one_basis else "100% = each group's own median (hwprobe compare prints them)")
    ax.set_xlabel(f"ceiling, {what}; {legend}", fontsize=7)
    _label_outliers(ax, fleet, where)
    out = Path(out)
    fig.savefig(out, dpi=130)
    plt.close(fig)
    return out


def _basis_value(fleet, key: str) -> str:
    """What 100% is in a column: the reference's value, or the median over the fleet."""
    from hwprobe.units import si

    raw, norm = fleet.table[key], fleet.normalized[key]
    ok = raw.notna() & norm.notna() & (norm != 0)
    if not ok.any():
        return "-"
    basis = (raw[ok] / norm[ok]).median()
    return si(float(basis), fleet.units.get(key, ""))


def _label_outliers(ax, fleet, where: dict) -> None:
    """Name the outliers furthest from the median beside their dots, each where it covers no other name and no
    other outlier's dot (right, left, above or below it); a name with no free place is left to the table, and the
    axis label says how many."""
    fig = ax.figure
    fig.canvas.draw()                       # the final layout: positions in pixels hold from here on
    fig.set_layout_engine("none")
    r = fig.canvas.get_renderer()
    pad = 4.0
    taken = [_dot_box(ax, xy, pad) for xy in where.values()]
    shown, left = 0, 0
    for o in sorted(fleet.outliers, key=lambda o: abs(o.normalized - 1), reverse=True):
        if (o.run, o.key) not in where:
            continue
        box = None if shown >= MAX_LABELS else _place(ax, r, o.run, where[(o.run, o.key)], taken)
        if box is None:
            left += 1
            continue
        taken.append(box)
        shown += 1
    if left:
        ax.set_xlabel(f"{ax.get_xlabel()}; {left} more outlier name(s) in the table (hwprobe compare, --json)")


_OFFSETS = ((7, 0, "left"), (-7, 0, "right"), (0, 8, "center"), (0, -8, "center"), (7, 9, "left"),
            (7, -9, "left"), (-7, 9, "right"), (-7, -9, "right"))


def _place(ax, renderer, text: str, xy: tuple[float, float], taken: list):
    """Annotate ``text`` at the first offset whose box is inside the axes and clear of ``taken``; None if none."""
    for dx, dy, ha in _OFFSETS:
        va = "center" if dy == 0 else ("bottom" if dy > 0 else "top")
        ann = ax.annotate(text, xy, xytext=(dx, dy), textcoords="offset points", fontsize=7, color="darkred",
                          ha=ha, va=va)
        box = ann.get_window_extent(renderer)
        inside = ax.bbox.x0 <= box.x0 and box.x1 <= ax.bbox.x1 and ax.bbox.y0 <= box.y0 and box.y1 <= ax.bbox.y1
        if inside and not any(box.overlaps(t) for t in taken):
            return box
        ann.remove()
    return None


def _dot_box(ax, xy: tuple[float, float], pad: float):
    from matplotlib.transforms import Bbox

    x, y = ax.transData.transform(xy)
    return Bbox([[x - pad, y - pad], [x + pad, y + pad]])
