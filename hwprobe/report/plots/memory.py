"""Memory curves: read bandwidth against working set (per SM through L1; device-wide through L2 to DRAM),
host copies against transfer size, and one SM's L2 load latency against its set size (the near/far step)."""

from __future__ import annotations

import numpy as np

from hwprobe import keys as K
from hwprobe.report import text as tx
from hwprobe.report.plots import absent
from hwprobe.report.plots import style as st
from hwprobe.report.source import Run
from hwprobe.units import si


def _curve(run: Run, prefix: str, key: str) -> tuple[np.ndarray, np.ndarray]:
    pts = sorted((m.params[key], m.value) for m in run.sweeps(prefix) if key in m.params)
    return (np.array([p[0] for p in pts], float), np.array([p[1] for p in pts], float)) if pts else (np.array([]),
                                                                                                     np.array([]))


def _capacity(run: Run, level: str) -> tuple[float | None, float | None]:
    """(measured capacity, physical size) of a cache level: the knee of the sweep and what the device reports."""
    lvl = run.profile.memory.get(level)
    measured = lvl.capacity_bytes if lvl else None
    d = run.profile.device
    physical = d.get("l2_bytes") if level == "l2" else d.get("l1_smem_bytes_per_sm")
    m = run.measurement(f"cache.{level}.capacity")
    if m and m.params.get(K.REPORTED_BYTES):
        physical = m.params[K.REPORTED_BYTES]
    return measured, physical


def bandwidth(runs: list[Run]):
    panels = []
    if any(r.sweeps("cache.sweep.per_sm.") for r in runs):
        panels.append("per_sm")
    if any(r.sweeps("cache.sweep.device.") for r in runs):
        panels.append("device")
    if any(r.sweeps("host.") for r in runs):
        panels.append("host")
    if not panels:
        raise absent(runs, "bandwidth sweep", "the memory suite's gpu.cache and gpu.host", sweep=True)
    plt = st.pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(6.2 * len(panels), 5.4 + (1.0 if len(runs) > 1 else 0)),
                             squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=False):
        {"per_sm": _per_sm, "device": _device, "host": _host}[panel](ax, runs)
        make_room(ax)
    name = " vs ".join(r.label for r in runs) if len(runs) > 1 else runs[0].device_name
    fig.suptitle(f"{name}: read bandwidth against working set", fontsize=12, fontweight="bold", x=0.01, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 0.95))
    for ax in axes[0]:
        keep_inside(ax)
    return fig


def _sweep_axes(ax, title: str, xlabel: str, log_y: bool = False) -> None:
    ax.set_xscale("log", base=2)
    if log_y:
        ax.set_yscale("log")
    st.bytes_axis(ax.xaxis)
    st.si_axis(ax.yaxis)
    ax.set_title(title, loc="left", fontweight="bold")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("bytes per second (all SMs)")


def _marks(ax, run: Run, i: int, multi: bool, level: str, label: str) -> str:
    """The level's plateau (horizontal) and its measured and physical capacity (vertical), labelled on the
    plot for one run; for an overlay the same in words, for the legend."""
    color = st.RUN_COLORS[i] if multi else "#444444"
    bw = run.profile.bandwidth(level)
    measured, physical = _capacity(run, level)
    if bw:
        ax.axhline(bw, color=color, lw=0.8, ls=":")
    if physical:
        ax.axvline(physical, color=color, lw=0.9, ls="--")
    if measured:
        ax.axvline(measured, color=color, lw=1.2)
    words = ", ".join(x for x in (f"plateau {si(bw, 'B/s')}" if bw else "",
                                  f"effective {si(measured, 'B')}" if measured else "",
                                  f"physical {si(physical, 'B')}" if physical else "") if x)
    if multi:
        return f"{label} {words}"
    if bw:
        ax.annotate(f"{label} plateau {si(bw, 'B/s')}", (0.99, bw), xycoords=("axes fraction", "data"),
                    ha="right", va="bottom", fontsize=7.5, color=color)
    if measured and physical and abs(measured / physical - 1) < 0.15:   # one label for two close lines
        top_label(ax, min(measured, physical),
                  f"{label} effective {si(measured, 'B')} (solid), physical {si(physical, 'B')} (dashed)", color)
        return words
    for x, what in ((physical, "physical (dashed)"), (measured, "effective (solid)")):
        if x:
            top_label(ax, x, f"{label} {what} {si(x, 'B')}", color)
    return words


TOP = "top-label"        # the gid of a vertical line's label, in the band kept free above the curves
ROW = 0.05               # a band row, in axes height


def top_label(ax, x: float, text: str, color: str) -> None:
    """A vertical line's label, horizontal, in its own row of a band above the curves (make_room opens it): drawn
    along the line it crossed the curve and the other labels."""
    row = sum(t.get_gid() == TOP for t in ax.texts)
    ax.annotate(text, (x, 0.985 - ROW * row), xycoords=("data", "axes fraction"), xytext=(-3, 0),
                textcoords="offset points", ha="right", va="top", fontsize=7.5, color=color, gid=TOP,
                bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8})


def make_room(ax) -> None:
    """Raise a linear axis' top so that the band of top labels lies above every curve and plateau line."""
    rows = sum(t.get_gid() == TOP for t in ax.texts)
    if rows and ax.get_yscale() == "linear":
        lo, hi = ax.get_ylim()
        ax.set_ylim(lo, lo + (hi - lo) / (1 - ROW * rows - 0.03))


def keep_inside(ax) -> None:
    """A top label that would run past the axes' left edge goes to the right of its line instead."""
    r = ax.figure.canvas.get_renderer()
    for t in ax.texts:
        if t.get_gid() == TOP and t.get_window_extent(r).x0 < ax.bbox.x0:
            t.set_horizontalalignment("left")
            t.xyann = (3, 0)


def _per_sm(ax, runs: list[Run]) -> None:
    _sweep_axes(ax, "Per SM, through L1", "working set per SM (each SM reads its own set)")
    _overlay(ax, runs, "cache.sweep.per_sm.", "l1", "L1")


def _device(ax, runs: list[Run]) -> None:
    _sweep_axes(ax, "Device-wide, through L2 to DRAM", "working set (one set shared by all SMs, L1 bypassed)")
    multi = len(runs) > 1
    _overlay(ax, runs, "cache.sweep.device.", "l2", "L2")
    for i, run in enumerate(runs):
        dram = run.profile.bandwidth("dram")
        if dram and run.sweeps("cache.sweep.device."):
            color = st.RUN_COLORS[i] if multi else "#222222"
            ax.axhline(dram, color=color, lw=1.0, ls="-.")
            if not multi:
                ax.annotate(f"DRAM ceiling {si(dram, 'B/s')} (gpu.dram)", (0.01, dram),
                            xycoords=("axes fraction", "data"), ha="left", va="top", fontsize=7.5, color=color)
        split = _split(run)
        if split and not multi:
            ax.axvline(split, color="#b15928", lw=0.9, ls=(0, (2, 2)))
            top_label(ax, split, f"one SM's near L2 partition ends ({si(split, 'B')}, latency sweep)", "#b15928")
    if multi:
        st.legend_below(ax)


def _overlay(ax, runs: list[Run], prefix: str, level: str, name: str) -> None:
    multi = len(runs) > 1
    for i, run in enumerate(runs):
        xs, ys = _curve(run, prefix, "working_set_bytes")
        if not xs.size:
            continue
        s = st.run_style(i)
        words = _marks(ax, run, i, multi, level, name)
        extra = ""
        if multi and level == "l2" and run.profile.bandwidth("dram"):
            extra = f"; DRAM {si(run.profile.bandwidth('dram'), 'B/s')} (dash-dot)"
        ax.plot(xs, ys, "-" + s["marker"], color=s["color"] if multi else "#1f78b4", ms=3.5, lw=1.2,
                label=f"{run.label}: {words}{extra}" if multi else None)
    if multi and level == "l1":
        st.legend_below(ax)


def _split(run: Run) -> float | None:
    f = run.finding("latency.l2.sweep")
    return ((f.get("params") or {}).get(K.SPLIT_BYTES) or None) if f else None


def _host(ax, runs: list[Run]) -> None:
    _sweep_axes(ax, "Host link, per copy", "bytes per copy", log_y=True)
    ax.set_ylabel("bytes per second")
    multi = len(runs) > 1
    colors = {"h2d": "#1f78b4", "d2h": "#33a02c", "bidir": "#6a3d9a"}
    names = {"h2d": "host to device", "d2h": "device to host", "bidir": "both ways"}
    for i, run in enumerate(runs):
        for way, way_ls in (("h2d", "-"), ("d2h", "--"), ("bidir", ":")):
            for mem, ls in (("pinned", "-"), ("pageable", "--")):
                xs, ys = _curve(run, f"host.{way}.{mem}.", "bytes")
                if not xs.size or (multi and mem == "pageable"):
                    continue
                color = st.RUN_COLORS[i] if multi else colors[way]
                who = f"{run.label} " if multi else ""
                ax.plot(xs, ys, way_ls if multi else ls, color=color, lw=1.2, label=f"{who}{names[way]}, {mem}")
        for lvl in ("host_h2d", "host_bidir"):
            c = run.profile.memory.get(lvl)
            if c and c.bandwidth and c.bandwidth.theory_at_clock and not multi:
                t = c.bandwidth.theory_at_clock
                ax.axhline(t, color="#999999", lw=0.8, ls=":")
                ax.annotate(f"PCIe theory {si(t, 'B/s')} ({'both ways' if lvl == 'host_bidir' else 'one way'})",
                            (0.01, t), xycoords=("axes fraction", "data"), va="bottom", fontsize=7.5, color="#666666")
    ax.set_ylim(top=ax.get_ylim()[1] * 2.5)
    st.legend_below(ax) if multi else ax.legend(loc="lower right", fontsize=7.5)


def latency(runs: list[Run]):
    have = [r for r in runs if _latency_curve(r) or _levels(r)]
    if not have:
        raise absent(runs, "load latency", "the memory suite's gpu.latency")
    plt = st.pyplot()
    multi = len(runs) > 1
    fig, ax = plt.subplots(figsize=(10, 5.2 + (0.8 if multi else 0)))
    ax.set_xscale("log", base=2)
    st.bytes_axis(ax.xaxis)
    ax.set_xlabel("working set (one SM chasing pointers through it)")
    ax.set_ylabel("load-to-use latency (ns)")
    for i, run in enumerate(have):
        s = st.run_style(i)
        color = s["color"] if multi else "#1f78b4"
        curve = _latency_curve(run)
        if curve:
            xs, ns = zip(*[(c["bytes"], c["ns"]) for c in curve], strict=False)
            ax.plot(xs, ns, "-" + s["marker"], color=color, ms=3.5, lw=1.2,
                    label=f"{run.label + ': ' if multi else ''}L2 sweep (ld.global.cg, random cycle)")
        for level, (ws, secs) in _levels(run).items():
            ax.plot([ws], [secs * 1e9], "D", color=st.LEVEL_STYLES.get(level, ("#b15928", ""))[0] if not multi
                    else color, ms=6, mfc="white", mew=1.5, zorder=5)
            if not multi:
                ax.annotate(f"{tx.LEVEL_NAMES.get(level, level)} {secs * 1e9:.0f} ns", (ws, secs * 1e9),
                            textcoords="offset points", xytext=(6, -10), fontsize=7.5)
        _step(ax, run, multi, color, i)
    if multi:
        _level_labels(ax, have)
    ax.set_ylim(0, ax.get_ylim()[1] * 1.12)
    _cycles_axis(ax, have[0])
    name = " vs ".join(r.label for r in runs) if multi else runs[0].device_name
    ax.set_title(f"{name}: load latency against working set", loc="left", fontweight="bold", fontsize=12)
    if not any(_latency_curve(r) for r in have):
        ax.text(0.5, 0.6, "no L2 latency sweep in this run: the memory suite's gpu.latency draws one\n(here: the "
                "latency of each level at the working set it was measured with)", transform=ax.transAxes,
                ha="center", fontsize=9, color="#666666")
    if ax.get_legend_handles_labels()[0]:
        st.legend_below(ax, fontsize=7.5) if multi else ax.legend(loc="upper left", fontsize=7.5)
    fig.tight_layout()
    return fig


def _level_labels(ax, runs: list[Run]) -> None:
    """An overlay: one label per level naming every run's latency (two labels at one diamond overprint)."""
    by_level: dict[str, list[tuple[float, float, str]]] = {}
    for run in runs:
        for level, (ws, secs) in _levels(run).items():
            by_level.setdefault(level, []).append((ws, secs * 1e9, run.label.split(" (")[0]))
    for level, pts in by_level.items():
        ws, ns, _ = min(pts, key=lambda p: p[1])
        words = ", ".join(f"{who} {v:.0f}" for _, v, who in pts)
        ax.annotate(f"{tx.LEVEL_NAMES.get(level, level)}: {words} ns", (ws, ns), textcoords="offset points",
                    xytext=(6, -10), fontsize=7.5, ha="right" if level == "dram" else "left",
                    bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.85})


def _latency_curve(run: Run) -> list[dict]:
    f = run.finding("latency.l2.sweep")
    return [c for c in ((f.get("params") or {}).get(K.CURVE) or []) if c.get("bytes") and c.get("ns")] if f else []


def _levels(run: Run) -> dict[str, tuple[float, float]]:
    """Each level's latency at the working set it was measured with (measurements where present)."""
    out = {}
    for level, lvl in run.profile.memory.items():
        if not lvl.latency_s:
            continue
        m = next((m for m in run.measurements if m.kind == "latency" and m.level == level), None)
        ws = (m.params.get(K.WORKING_SET_BYTES) if m else None) or _default_ws(run, level)
        if ws:
            out[level] = (float(ws), lvl.latency_s)
    return out


def _default_ws(run: Run, level: str) -> float | None:
    d = run.profile.device
    return {"l1": 16384, "l2": (d.get("l2_bytes") or 0) / 4 or None, "dram": 512 << 20}.get(level)


def _step(ax, run: Run, multi: bool, color: str, i: int = 0) -> None:
    """The near/far step and L2's size, marked (the ``i``-th run's words below the others')."""
    split = _split(run)
    l2 = run.profile.device.get("l2_bytes")
    if l2:
        ax.axvline(l2, color=color if multi else "#444444", lw=0.9, ls="--")
        ax.annotate(f"L2 {si(l2, 'B')}", (l2, 0.02), xycoords=("data", "axes fraction"), rotation=90, ha="right",
                    va="bottom", fontsize=7.5)
    if split:
        ax.axvline(split, color=color if multi else "#b15928", lw=1.1, ls=(0, (2, 2)))
        near = run.profile.memory.get("l2")
        far = run.profile.memory.get("l2_far")
        what = f"near/far step at {si(split, 'B')}" + (f" ({split / l2:.2f} of L2)" if l2 else "")
        if near and far and near.latency_s and far.latency_s:
            what += f": near {near.latency_s * 1e9:.0f} ns, far {far.latency_s * 1e9:.0f} ns"
        ax.annotate(what + " ", (split, 0.93 - 0.06 * i), xycoords=("data", "axes fraction"), ha="right", va="center",
                    fontsize=8, color=color if multi else "#b15928")


def _cycles_axis(ax, run: Run) -> None:
    """Cycles on the right, at the clock the sweep ran at (cycles / ns of its points)."""
    curve = _latency_curve(run)
    ratios = [c["cycles"] / c["ns"] for c in curve if c.get("cycles")]
    if not ratios:
        return
    ghz = float(np.median(ratios))
    sec = ax.secondary_yaxis("right", functions=(lambda ns: ns * ghz, lambda cy: cy / ghz))
    sec.set_ylabel(f"SM clock cycles (at {ghz * 1000:.0f} MHz)")
