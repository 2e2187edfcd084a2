"""Library GEMMs: efficiency against size per precision and path (gpu.gemm, gpu.gemm_fp8) with the alignment
pairs beside them (gpu.gemm_align), and the aligned-vs-odd rates on their own (align)."""

from __future__ import annotations

import math
import re

import numpy as np

from hwprobe import keys as K
from hwprobe.judge import ABOVE_THEORY, own_clock
from hwprobe.report import text as tx
from hwprobe.report.plots import absent
from hwprobe.report.plots import style as st
from hwprobe.report.source import Run
from hwprobe.vocab import PROFILE_PRECISIONS, profile_precision

_SIZE = re.compile(r"\.n(\d+)$")


def series(run: Run) -> dict[str, dict[str, list[tuple[int, float, float]]]]:
    """precision -> series (metric without its size) -> [(n, rate, share of theory at the measured clock)]."""
    out: dict[str, dict[str, list[tuple[int, float, float]]]] = {}
    for m in run.measurements:
        match = _SIZE.search(m.metric)
        if m.kind != "sweep" or not m.valid or not match or m.probe not in ("gpu.gemm", "gpu.gemm_fp8"):
            continue
        theory = _theory(run, m)
        if not theory:
            continue
        prec = profile_precision(m.precision)
        base = m.metric[: match.start()]
        out.setdefault(prec, {}).setdefault(base, []).append((int(match.group(1)), m.value, m.value / theory))
    return {p: {k: sorted(v) for k, v in s.items()} for p, s in out.items()}


def align_pairs(run: Run) -> dict[str, list[dict]]:
    """precision -> [{"align", "n", "rate", "odd_rate" (None: the library refused the odd size)}] from the
    gpu.gemm_align findings (present in a profile.json alone)."""
    out = {}
    for f in run.findings("align.", ".slowdown"):
        prec = str(f["metric"]).split(".")[1]
        pts = (f.get("params") or {}).get(K.POINTS) or []
        if pts:
            out[prec] = pts
    return out


def _align_eff(run: Run) -> dict[str, list[tuple[int, float, bool]]]:
    """precision -> [(n, share of theory at its clock, odd)] of the alignment measurements."""
    out: dict[str, list[tuple[int, float, bool]]] = {}
    for m in run.sweeps("align."):
        theory = _theory(run, m)
        if not theory:
            continue
        n = int(m.metric.split(".")[-1])          # align.<precision>.<n>: an n^3 GEMM
        prec = profile_precision(m.precision)
        out.setdefault(prec, []).append((n, m.value / theory, n % 2 == 1))
    return out


def _theory(run: Run, m) -> float | None:
    """Theory at the clock the point ran at: the record's own where the runner attached one, else at the
    clock its sentinel timed (NVML's lagging reading only where there is none), moved to the max clock as the
    judge does when the figure is above 1.03x theory at a sampled clock. None (no point drawn) when even the
    max clock cannot explain it: a share above 1.03x theory is no valid share (issue 23)."""
    if m.theory and m.theory.at_clock:
        return m.theory.at_clock
    if not (m.precision and m.exec_unit):
        return None
    clk, _, source = own_clock(m)
    theory = run.theory_rate(m.precision, m.exec_unit, clk)
    if theory and m.value > ABOVE_THEORY * theory and source == "nvml":
        theory = run.theory_rate(m.precision, m.exec_unit, None)
    return theory if theory and m.value <= ABOVE_THEORY * theory else None


def _label(base: str) -> str:
    name = tx.instruction_name(base, detail=True)
    return name + (" (CUDA cores)" if ".cuda_core." in base or base.count(".") == 2 and "tensor" not in base else "")


def gemm(runs: list[Run]):
    data = [series(r) for r in runs]
    precs = tx.order({p for d in data for p in d}, PROFILE_PRECISIONS)
    if not precs:
        raise absent(runs, "library GEMM sweep", "the compute suite's gpu.gemm", sweep=True)
    plt = st.pyplot()
    cols = min(4, len(precs))
    rows = math.ceil(len(precs) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(max(7.0, 4.6 * cols), 4.9 * rows + 0.4), squeeze=False)
    multi = len(runs) > 1
    for ax, prec in zip(axes.flat, precs, strict=False):
        common = _common_path([d.get(prec, {}) for d in data]) if multi else None
        for i, (run, d) in enumerate(zip(runs, data, strict=False)):
            ser = d.get(prec, {})
            _gemm_panel(ax, prec, {common: ser[common]} if common in ser else ({} if multi else ser), run, i, multi)
            if not multi:
                _align_on(ax, _align_eff(run).get(prec, []))
        ax.set_title(prec.upper(), loc="left", fontweight="bold")
        ax.set_xscale("log", base=2)
        st.log2_axis(ax.xaxis)
        ax.set_ylim(0, max(1.05, ax.get_ylim()[1]))
        ax.yaxis.set_major_formatter(_pct_formatter())
        ax.axhline(1.0, color="#999999", lw=0.7)
        ax.set_xlabel("M = N = K")
        ax.legend(fontsize=6.5, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2, frameon=False)
    for ax in list(axes.flat)[len(precs):]:
        ax.set_visible(False)
    axes[0][0].set_ylabel("share of theory at the measured clock")
    name = " vs ".join(r.label for r in runs) if multi else runs[0].device_name
    top = st.header(fig, f"{name}: library GEMM efficiency against size",
                    "each line one library path (cuBLAS, cuBLASLt, layout, accumulator), as a share of theory at the "
                    "SM clock sampled during it (NVML's samples lag short windows, so a few points pass 100%); "
                    "squares: an aligned size (filled) above the odd size one past it (open)")
    st.grid(fig, rows, cols, top=top + 0.35, bottom=1.35, hgap=1.75, wgap=0.5)
    return fig


def _pct_fmt(v, _pos=None) -> str:
    return f"{100 * v:.0f}%"


def _common_path(per_run: list[dict]) -> str | None:
    """For an overlay: the library path most runs measured, at the most sizes."""
    bases = {b for ser in per_run for b in ser}
    return max(bases, key=lambda b: (sum(b in ser for ser in per_run), sum(len(ser.get(b, [])) for ser in per_run),
                                     b), default=None)


def _gemm_panel(ax, prec: str, ser: dict, run: Run, i: int, multi: bool) -> None:
    items = sorted(ser.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    colors = st.SERIES_COLORS if not multi else [st.RUN_COLORS[i]]
    for k, (base, pts) in enumerate(items[:8]):
        ns, _, eff = zip(*pts, strict=False)
        cuda = "CUDA cores" in _label(base)
        label = f"{run.label}: {_label(base)}" if multi else _label(base)
        ax.plot(ns, eff, marker="o", color=colors[k % len(colors)], ms=3.5, lw=1.2,
                ls=("--" if cuda else "-") if len(ns) > 1 else "none", label=label)


def _align_on(ax, pts: list[tuple[int, float, bool]]) -> None:
    if not pts:
        return
    aligned = [(n, e) for n, e, odd in pts if not odd]
    odd = [(n, e) for n, e, o in pts if o]
    if aligned:
        ax.plot(*zip(*aligned, strict=False), "s", color="#333333", ms=4.5, label="aligned size")
    if odd:
        ax.plot(*zip(*odd, strict=False), "s", color="#333333", mfc="white", ms=4.5, label="odd size (n+1)")
    for n, e in odd:
        match = [a for a in aligned if a[0] == n - 1]
        if match:
            ax.plot([n, n], [match[0][1], e], color="#333333", lw=0.7)


def _pct_formatter():
    import matplotlib.ticker as mt

    return mt.FuncFormatter(_pct_fmt)


def align(runs: list[Run]):
    data = [align_pairs(r) for r in runs]
    precs = tx.order({p for d in data for p in d}, PROFILE_PRECISIONS)
    if not precs:
        raise absent(runs, "alignment pair", "the compute suite's gpu.gemm_align")
    plt = st.pyplot()
    cols = min(3, len(precs))
    rows = math.ceil(len(precs) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.8 * rows), squeeze=False)
    for ax, prec in zip(axes.flat, precs, strict=False):
        _align_panel(ax, prec, [(r, d.get(prec, [])) for r, d in zip(runs, data, strict=False)])
    for ax in list(axes.flat)[len(precs):]:
        ax.set_visible(False)
    name = " vs ".join(r.label for r in runs) if len(runs) > 1 else runs[0].device_name
    top = st.header(fig, f"{name}: GEMM at an aligned size and at the odd size one above it")
    # every panel has the same bars: one key for all, under the title, where no bar is
    handles, labels = axes[0][0].get_legend_handles_labels()
    h = fig.get_size_inches()[1]
    fig.legend(handles, labels, loc="upper left", bbox_to_anchor=(0.1 / fig.get_size_inches()[0], 1 - top / h),
               ncol=len(labels), fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - (top + 0.3) / h))
    return fig


def _align_panel(ax, prec: str, per_run: list[tuple[Run, list[dict]]]) -> None:
    multi = len(per_run) > 1
    width = 0.8 / (2 * len(per_run))
    labels: list[str] = []
    unit = "OP/s" if tx.is_integer(prec) else "FLOP/s"
    top = 0.0
    for i, (run, pts) in enumerate(per_run):
        pts = sorted(pts, key=lambda p: p["n"])
        labels = labels if len(labels) >= len(pts) else [f"{p['n']} / {p['n'] + 1}\n(x{p['align']})" for p in pts]
        x = np.arange(len(pts))
        rate = [p.get("rate") or 0 for p in pts]
        odd = [p.get("odd_rate") or 0 for p in pts]
        top = max([top, *rate, *odd])
        color = st.RUN_COLORS[i] if multi else "#1f78b4"
        off = (2 * i) * width - 0.4 + width / 2
        ax.bar(x + off, rate, width, color=color, label=f"{run.label + ': ' if multi else ''}aligned")
        ax.bar(x + off + width, odd, width, color="white", edgecolor=color, hatch="//",
               label=f"{run.label + ': ' if multi else ''}odd (+1)")
        for xi, p in zip(x, pts, strict=False):
            if not p.get("odd_rate"):
                ax.text(xi + off + width, 0, " not supported", rotation=90, ha="center", va="bottom", fontsize=7,
                        color="#b22222")
            elif p.get("rate"):
                ax.text(xi + off + width, p["odd_rate"], f"{p['rate'] / p['odd_rate']:.1f}x\nslower", ha="center",
                        va="bottom", fontsize=6.5)
    ax.set_xticks(np.arange(len(labels)), labels, fontsize=7)
    ax.set_ylim(0, top * 1.25 or 1)
    st.si_axis(ax.yaxis)
    ax.set_ylabel(unit)
    ax.set_title(prec.upper(), loc="left", fontweight="bold")
    ax.set_xlabel("M = N = K (aligned / odd), and the alignment")
