"""The layers on the measured roofline: one point per layer at its intensity and rate (achieved where times
were joined, else the roofline's attainable rate), sized by time; the measured roofs solid, the datasheet roofs
dashed. matplotlib loads here only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from hwprobe.errors import InputError
from hwprobe.units import si

Analysis = Any   # hwprobe.analysis.roofline.Analysis: its layers table and source (read here, never imported)

OP_COLORS = {"conv": "tab:blue", "convtranspose": "tab:cyan", "gemm": "tab:purple", "matmul": "tab:pink",
             "bn": "tab:olive", "act": "tab:green", "pool": "tab:brown", "eltwise": "tab:orange",
             "softmax": "tab:red", "layernorm": "tab:gray", "concat": "black", "reshape": "black", "other": "gray"}
ROOF_COLORS = ["tab:red", "tab:blue", "tab:green", "tab:purple"]


def _roofs(a: Analysis) -> list[tuple[str, float, float, float | None, float | None]]:
    """(label, measured peak, measured bandwidth, datasheet peak, datasheet bandwidth) per ceiling used."""
    out = []
    for (prec, unit, path, level), sub in a.layers.groupby(["precision", "unit", "path", "level"], sort=False):
        r = sub.iloc[0]
        ds = a.source.datasheet(prec, unit, path, "dram") if a.source is not None else None
        out.append((f"{prec} {unit.replace('_', ' ')} ({path}, {level})", float(r["peak"]), float(r["bandwidth"]),
                    ds.peak if ds else None, ds.bandwidth if ds else None))
    return out


def plot_layers(a: Analysis, out: str | Path) -> Path:
    """Write the PNG and return its path."""
    if "time_s" not in a.layers:
        raise InputError("--plot needs ceilings: give --profile or --spec")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    df = a.layers
    measured = "measured_s" in df and df["measured_s"].notna().any()
    # measured: each layer's ops over its share of its record's time (a fused record's time split by prediction)
    y = (df["ops"] / df["measured_s"]).astype(float) if measured else df["attainable"].astype(float)
    t = df["measured_s"].astype(float) if measured else df["time_s"].astype(float)
    work = df["intensity"].notna() & (df["ops"] > 0)
    ok = work & y.notna() & (y > 0)
    if not ok.any():
        raise InputError("no layer with operations and bytes to plot")
    x = df.loc[ok, "intensity"].astype(float)
    lo, hi = float(x.min()) / 4, float(x.max()) * 4
    roofs = _roofs(a)
    ridges = [pk / bw for _, pk, bw, _, _ in roofs]
    hi = max(hi, max(ridges) * 4)
    xs = np.logspace(np.log10(lo), np.log10(hi), 300)
    fig, ax = plt.subplots(figsize=(11, 7))
    word = _solid_word(a)
    if word == "datasheet":               # --spec: the solid roofs are the datasheet; no dashed copy
        roofs = [(label, pk, bw, None, None) for label, pk, bw, _, _ in roofs]
    _draw_roofs(ax, roofs, xs, hi, word)
    _points(ax, df, ok, x, y, t)
    labels = _labels(ax, df, ok, x, y, t)
    o = a.options
    ax.set_xlim(lo, hi)
    ax.set_ylim(bottom=max(float(y[ok].min()) / 4, 1e6), top=max(pk for _, pk, *_ in roofs) * 3)
    ax.set_xlabel(f"operational intensity (operations per byte, {a.convention.name} convention)")
    ax.set_ylabel("operations per second")
    what = "achieved (measured times)" if measured else f"attainable on the {word} roofline (predicted)"
    dev = a.source_label
    ax.set_title(f"{a.model.name} at {o.precision}, batch {a.model.batch}: layers on the roofline\n{dev}\n"
                 f"points: {what}; area ~ time; solid: {word} roofs"
                 + ("" if word == "datasheet" else ", dashed: datasheet"), fontsize=9)
    ax.grid(True, which="both", alpha=0.25)
    leg = ax.legend(fontsize=7, loc="lower right", framealpha=0.9)
    for h in leg.legend_handles:            # same-size markers in the legend, whatever the points' sizes
        if hasattr(h, "set_sizes"):
            h.set_sizes([30])
    idle, untimed = int((~work).sum()), int((work & ~ok).sum())
    gone = [f"{idle} layer(s) without arithmetic (reshape, concat, not modelled)"] if idle else []
    gone += [f"{untimed} layer(s) without a measured time"] if untimed else []
    # under the x label, inside the figure: in the axes' corner the memory slope ran through it
    fig.tight_layout(rect=(0, 0.035 if gone else 0, 1, 1))
    if gone:
        fig.text(0.01, 0.008, "not drawn: " + "; ".join(gone), ha="left", va="bottom", fontsize=7.5, color="0.35")
    _spread(ax, labels)
    path = Path(out)
    try:
        fig.savefig(path, dpi=130)
    except OSError as e:
        raise InputError(f"cannot write {str(path)!r}: {e.strerror or e}") from None
    finally:
        plt.close(fig)
    return path


def _solid_word(a: Analysis) -> str:
    """What the solid roofs are: measured, spec-derived expectations, or the datasheet itself (--spec)."""
    from hwprobe.roofline import is_measured

    prof = getattr(a.source, "profile", None)
    if prof is None:
        return "datasheet"
    return "measured" if is_measured(prof) else "expected (spec-derived)"


def _draw_roofs(ax, roofs, xs, hi, word: str = "measured") -> None:
    """One memory slope per bandwidth (black), each compute ceiling from its ridge on; datasheet dashed."""
    slopes: dict[float, list] = {}
    for _, pk, bw, dpk, dbw in roofs:       # bandwidth -> [highest peak on it, datasheet bw, highest datasheet peak]
        e = slopes.setdefault(bw, [0.0, dbw, 0.0])
        e[0], e[2] = max(e[0], pk), max(e[2], dpk or 0.0)
    for bw, (pk, dbw, dpk) in slopes.items():
        m = xs <= pk / bw
        ax.loglog(xs[m], xs[m] * bw, color="k", lw=2, label=f"{word} slope {si(bw, 'B/s')}")
        if dbw and dpk:
            m = xs <= dpk / dbw
            ax.loglog(xs[m], xs[m] * dbw, color="0.45", lw=1.2, ls="--", label=f"datasheet slope {si(dbw, 'B/s')}")
    for k, (label, pk, bw, dpk, dbw) in enumerate(roofs):
        c = ROOF_COLORS[k % len(ROOF_COLORS)]
        unit = "OP/s" if label.startswith("int") else "FLOP/s"
        ax.hlines(pk, pk / bw, hi, color=c, lw=2, label=f"{word} {label}: {si(pk, unit)}")
        if dpk and dbw:
            ax.hlines(dpk, dpk / dbw, hi, color=c, lw=1.2, ls="--", label=f"datasheet: {si(dpk, unit)}")


def _points(ax, df, ok, x, y, t) -> None:
    tt = t[ok].to_numpy()
    size = 15 + 400 * tt / tt.max()
    seen = set()
    for op in df.loc[ok, "op"].unique():
        m = (df.loc[ok, "op"] == op).to_numpy()
        ax.scatter(x.to_numpy()[m], y[ok].to_numpy()[m], s=size[m], color=OP_COLORS.get(op, "gray"), alpha=0.55,
                   edgecolors="k", linewidths=0.4, label=None if op in seen else f"{op} layers", zorder=3)
        seen.add(op)


def _labels(ax, df, ok, x, y, t) -> list:
    """The five longest layers named beside their points (placed by _spread once the layout is final)."""
    top = t[ok].sort_values(ascending=False).head(5).index
    spots: dict[tuple[float, float], list[int]] = {}
    out = []
    for i in top:                            # layers drawn at the same spot share one label
        spots.setdefault((round(float(x[i]), 6), round(float(y[i]), 3)), []).append(i)
    for idx in spots.values():
        i = idx[0]
        f = df.at[i, "align_factor"] if "align_factor" in df else None
        text = ", ".join(df.at[j, "name"] for j in idx) + (f" (misaligned: {f:.2g}x slower)" if f == f and f else "")
        out.append(ax.annotate(text, (x[i], y[i]), xytext=(8, -14), textcoords="offset points", fontsize=7,
                               arrowprops={"arrowstyle": "-", "lw": 0.5, "color": "0.4"},
                               bbox={"boxstyle": "round,pad=0.2", "fc": "white", "alpha": 0.8, "lw": 0},
                               in_layout=False))     # _spread keeps it inside the axes the layout sized
    return out


def _spread(ax, labels: list) -> None:
    """Move each label down, below the ones placed before it, until it overlaps none; one that would run past
    the axes' right edge goes to the left of its point instead."""
    from matplotlib.text import Text

    fig = ax.figure
    r = fig.canvas.get_renderer()

    def text_box(a):              # the text alone: an Annotation's own box holds its line too
        a.update_positions(r)
        return Text.get_window_extent(a, r)

    placed = []
    for a in labels:
        box = text_box(a)
        if box.x1 > ax.bbox.x1:
            a.set_horizontalalignment("right")
            a.xyann = (-8, a.xyann[1])
            box = text_box(a)
        while any(box.overlaps(b) for b in placed) and box.y0 > ax.bbox.y0:
            a.xyann = (a.xyann[0], a.xyann[1] - (box.height + 2) * 72 / fig.dpi)
            box = text_box(a)
        placed.append(box)
