"""2:4 sparse speed-up against size beside the promised 2x (gpu.sparse), and library GEMMs sustained at the
power cap per operand distribution: rate, SM clock, power and energy (gpu.gemm_power). Both read the
findings' summary points, so a profile.json alone draws them."""

from __future__ import annotations

import numpy as np

from hwprobe import keys as K
from hwprobe.report import text as tx
from hwprobe.report.plots import absent
from hwprobe.report.plots import style as st
from hwprobe.report.source import Run
from hwprobe.vocab import PROFILE_PRECISIONS, profile_precision

DISTRIBUTIONS = ("uniform", "normal", "relu", "zeros")
DIST_NAMES = {"uniform": "uniform\n(full range)", "normal": "normal", "relu": "post-ReLU\n(half zeros)",
              "zeros": "zeros"}


def sparse_points(run: Run) -> dict[str, dict]:
    """precision -> the gpu.sparse finding's params (points per size, promised factor)."""
    out = {}
    for f in run.findings("sparse.", ".speedup"):
        params = f.get("params") or {}
        if params.get(K.POINTS):
            prec = str(f["metric"]).split(".")[1]
            out[profile_precision(prec)] = params
    return out


def sparse(runs: list[Run]):
    data = [sparse_points(r) for r in runs]
    precs = tx.order({p for d in data for p in d}, PROFILE_PRECISIONS)
    if not precs:
        raise absent(runs, "2:4 sparse GEMM", "the compute suite's gpu.sparse")
    plt = st.pyplot()
    fig, (ax, ax_rate) = plt.subplots(1, 2, figsize=(13, 5.2))
    multi = len(runs) > 1
    promised = 2.0
    for i, (run, d) in enumerate(zip(runs, data, strict=False)):
        for prec in precs:
            params = d.get(prec)
            if not params:
                continue
            promised = params.get(K.PROMISED) or promised
            pts = sorted(params[K.POINTS], key=lambda p: p["n"])
            ns = [p["n"] for p in pts]
            color = st.RUN_COLORS[i] if multi else st.precision_color(prec)
            ls = ["-", "--", ":"][precs.index(prec) % 3] if multi else "-"
            who = f"{run.label}: " if multi else ""
            ax.plot(ns, [p["speedup"] for p in pts], marker="o", color=color, ls=ls, lw=1.4,
                    label=f"{who}{prec.upper()} (best sparse / best dense {params.get(K.BEST_VS_BEST, 0):.2f}x)")
            ax_rate.plot(ns, [p["sparse"] for p in pts], marker="o", color=color, ls=ls, lw=1.4,
                         label=f"{who}{prec.upper()} 2:4 sparse")
            ax_rate.plot(ns, [p["dense"] for p in pts], marker="s", color=color, ls=ls, lw=0.9, alpha=0.6,
                         mfc="white", label=f"{who}{prec.upper()} dense")
    ax.axhline(promised, color="#b22222", lw=1.2, ls="--")
    ax.annotate(f"promised {promised:g}x", (0.01, promised), xycoords=("axes fraction", "data"), va="bottom",
                color="#b22222", fontsize=8)
    ax.axhline(1.0, color="#999999", lw=0.8)
    ax.set_ylim(0, max(promised * 1.15, ax.get_ylim()[1]))
    ax.set_ylabel("speed-up over dense at the same size")
    ax.set_title("2:4 sparse speed-up (cuSPARSELt vs the dense library GEMM)", loc="left", fontweight="bold")
    st.si_axis(ax_rate.yaxis)
    ax_rate.set_ylim(0, ax_rate.get_ylim()[1] * 1.3)
    ax_rate.set_ylabel("FLOP/s or OP/s (sparse: the dense problem's operations)")
    ax_rate.set_title("Rates", loc="left", fontweight="bold")
    for a in (ax, ax_rate):
        a.set_xscale("log", base=2)
        st.log2_axis(a.xaxis)
        a.set_xlabel("M = N = K")
        a.legend(fontsize=7.5, loc="lower right" if a is ax else "upper left", ncol=1 if a is ax else 3)
    name = " vs ".join(r.label for r in runs) if multi else runs[0].device_name
    fig.suptitle(f"{name}: 2:4 structured sparsity against size", fontsize=12, fontweight="bold", x=0.01, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 0.94))
    return fig


def power_points(run: Run) -> list[tuple[str, dict]]:
    """[(library path, {distribution: {rate, sm_mhz, power_w, j_per_op, per_clock}})] from gpu.gemm_power."""
    out = []
    for f in run.findings(suffix=".power_data"):
        pts = (f.get("params") or {}).get(K.POINTS) or {}
        if pts:
            out.append((str(f["metric"])[: -len(".power_data")], pts))
    return out


def power(runs: list[Run]):
    data = [power_points(r) for r in runs]
    paths = list(dict.fromkeys(p for d in data for p, _ in d))
    if not paths:
        raise absent(runs, "GEMM sustained at the power cap", "the power suite's gpu.gemm_power")
    plt = st.pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(17, 4.9))
    panels = (("rate", "sustained rate", None), ("sm_mhz", "SM clock (MHz)", None), ("power_w", "power (W)", None),
              ("j_per_op", "energy (pJ per operation)", 1e12))
    # the same path side by side across runs: colour by path, hatched for the second run on
    series = sorted(((i, run, path, pts) for i, (run, d) in enumerate(zip(runs, data, strict=False))
                     for path, pts in d), key=lambda t: (paths.index(t[2]), t[0]))
    width = 0.8 / len(series)
    x = np.arange(len(DISTRIBUTIONS))
    for ax, (key, title, scale) in zip(axes, panels, strict=False):
        for k, (i, run, path, pts) in enumerate(series):
            vals = [(pts.get(d) or {}).get(key) for d in DISTRIBUTIONS]
            ys = [(v or 0) * (scale or 1) for v in vals]
            color = st.SERIES_COLORS[paths.index(path) % len(st.SERIES_COLORS)]
            who = f"{run.label}: " if len(runs) > 1 else ""
            bars = ax.bar(x - 0.4 + width * (k + 0.5), ys, width, color=color, hatch="///" if i else None,
                          edgecolor="white" if i else None,
                          label=f"{who}{tx.instruction_name(path, detail=True)} ({path.split('.')[0].upper()})")
            if key == "rate":
                for b, v in zip(bars, vals, strict=False):
                    if v:
                        ax.text(b.get_x() + b.get_width() / 2, v, st.si_short(v), ha="center", va="bottom",
                                fontsize=6.5, rotation=90)
        ax.set_xticks(x, [DIST_NAMES[d] for d in DISTRIBUTIONS], fontsize=7.5)
        ax.set_title(title, loc="left", fontweight="bold")
        if key == "rate":
            st.si_axis(ax.yaxis)
            ax.set_ylim(0, ax.get_ylim()[1] * 1.2)
        limit = _power_limit(runs[0])
        if key == "power_w" and limit:
            ax.axhline(limit, color="#b22222", lw=1, ls="--")
            ax.annotate(f"power limit {limit:.0f} W", (0.01, limit), xycoords=("axes fraction", "data"),
                        va="bottom", fontsize=7.5, color="#b22222")
            ax.set_ylim(0, limit * 1.15)
        if key == "sm_mhz":
            top = runs[0].profile.device.get("sm_clock_max_mhz")
            if top:
                ax.axhline(top, color="#555555", lw=0.8, ls=":")
                ax.annotate(f"max {top:.0f} MHz", (0.01, top), xycoords=("axes fraction", "data"), va="bottom",
                            fontsize=7.5)
                ax.set_ylim(0, top * 1.12)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)), fontsize=8, frameon=False)
    name = " vs ".join(r.label for r in runs) if len(runs) > 1 else runs[0].device_name
    fig.suptitle(f"{name}: library GEMM sustained at the power cap, per operand distribution", fontsize=12,
                 fontweight="bold", x=0.01, ha="left")
    fig.text(0.01, 0.905, "each bar: a sustained window of back-to-back GEMMs (8192^3) after settling; the same "
             "kernel on different operand bits draws different power, so the power cap sets a different clock",
             fontsize=8, color="#333333")
    fig.tight_layout(rect=(0, 0.07, 1, 0.89))
    return fig


def _power_limit(run: Run) -> float | None:
    for f in run.findings(suffix=".power_data"):
        lim = (f.get("params") or {}).get(K.POWER_LIMIT_W)
        if lim:
            return float(lim)
    return (run.profile.device.get("nvml") or {}).get("power_limit_w")
