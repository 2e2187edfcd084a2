"""The measured roofline as a picture: measured roofs and slopes, the theory beside them, and the
intensity-sweep points of gpu.roofline where the run has them."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hwprobe.measurement import Measurement
from hwprobe.profile import Profile
from hwprobe.units import si

COLORS = {"fp64": "tab:purple", "fp32": "tab:blue", "tf32": "tab:cyan", "fp16": "tab:green",
          "bf16": "tab:olive", "fp8": "tab:orange", "int32": "tab:gray", "int8": "tab:red"}


def roofline(profile: Profile, sweep: list[Measurement], out: Path) -> Path:
    """Write a log-log roofline PNG to ``out`` and return its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bw = profile.bandwidth("dram")
    if not bw:
        raise ValueError("the profile has no measured DRAM bandwidth to draw a roofline from")
    x = np.logspace(-3, 12, 400, base=2)
    fig, ax = plt.subplots(figsize=(10, 6.5))
    for prec, color in COLORS.items():
        pk = profile.peak(prec)
        if pk is None:
            continue
        ax.loglog(x, np.minimum(pk.value, x * bw), color=color, lw=2,
                  label=f"{prec} {si(pk.value, pk.unit)} ({pk.metric.split('.')[1]}, ridge {pk.value / bw:.3g})")
        if pk.theory_at_max_clock:
            ax.axhline(pk.theory_at_max_clock, color=color, ls=":", lw=1)
        pts = sorted((m.params["intensity"], m.value) for m in sweep
                     if m.params.get("precision") == prec and "intensity" in m.params and m.valid)
        if pts:
            xs, ys = np.array(pts).T
            ax.plot(xs, ys, "o", color=color, ms=4, alpha=0.8)
    for level, ls in (("l2", "--"), ("l1", "-.")):
        lbw = profile.bandwidth(level)
        if lbw:
            ax.loglog(x, x * lbw, color="k", ls=ls, lw=0.8, label=f"{level} slope {si(lbw, 'B/s')}")
    dram = profile.memory["dram"].bandwidth
    ax.set_xlabel("arithmetic intensity (operations per DRAM byte)")
    ax.set_ylabel("operations per second")
    name = profile.device.get("name") or profile.device.get("model", "")
    theory = f", theory {si(dram.theory_at_clock, 'B/s')}" if dram and dram.theory_at_clock else ""
    ax.set_title(f"{name}: measured roofline, DRAM {si(bw, 'B/s')}{theory}\n"
                 "dotted: theory at max clock; dots: gpu.roofline intensity sweep (CUDA cores)", fontsize=10)
    ax.set_ylim(bottom=max(1e9, bw / 16))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out
