"""The measured roofline: one panel per kind of core (Tensor Cores, CUDA cores; CPU cores on a CPU), measured
roofs solid and datasheet roofs dashed, each labelled on its line with its ridge point; the slope of every
measured memory level (DRAM, L2, L1) clipped to the plot; the intensity sweep's points (gpu.roofline)."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass

import numpy as np

from hwprobe import keys as K
from hwprobe.report import text as tx
from hwprobe.report.plots import NoData
from hwprobe.report.plots import style as st
from hwprobe.report.source import Run
from hwprobe.units import si
from hwprobe.vocab import PROFILE_PRECISIONS, ExecUnit

PANEL_TITLES = {ExecUnit.TENSOR_CORE: "Tensor Cores", ExecUnit.CUDA_CORE: "CUDA cores", ExecUnit.CPU: "CPU cores"}
SAME = 0.025          # roofs within 2.5% of each other share a line label
KEEP = 0.10           # one precision's roofs on several runs share a label where they span no more than this
LEVELS = ("dram", "l2", "l1")


@dataclass
class Roof:
    precision: str
    unit: str
    value: float
    rate_unit: str
    metric: str
    datasheet: float | None
    run: int
    ridge: float
    name: str = ""            # what the label calls it (default: the instruction or library in the metric)


def level_bw(run: Run, level: str) -> float | None:
    """A level's measured bandwidth; for DRAM in a run that did not measure it (a compute suite), the theory
    from the device's memory clock and bus (see dram_measured)."""
    bw = run.profile.bandwidth(level)
    if bw or level != "dram":
        return bw
    d = run.profile.device
    if d.get("mem_clock_mhz") and d.get("bus_width_bits") and not d.get("integrated"):
        return d["mem_clock_mhz"] * 1e6 * 2 * d["bus_width_bits"] / 8
    return None


def dram_measured(run: Run) -> bool:
    return bool(run.profile.bandwidth("dram"))


def roofs(run: Run, unit: str, index: int = 0) -> list[Roof]:
    """The best measured ceiling per precision on ``unit``; a run without compute ceilings (the memory suite)
    gets its CUDA-core roofs from the intensity sweep's fit (gpu.roofline's ridge findings)."""
    p = run.profile
    bw = level_bw(run, "dram")
    out = []
    for prec in tx.order(p.compute, PROFILE_PRECISIONS):
        pk = p.peak(prec, unit)
        if pk is None:
            continue
        out.append(Roof(prec, unit, pk.value, pk.unit, pk.metric, pk.datasheet, index, pk.value / bw if bw else 0))
    if not out and unit == ExecUnit.CUDA_CORE and not p.compute:
        for f in run.findings("roofline.", ".ridge"):
            prec = str(f["metric"]).split(".")[1]
            roof = (f.get("params") or {}).get(K.ROOF)
            if roof and bw:
                unit_name = "OP/s" if tx.is_integer(prec) else "FLOP/s"
                out.append(Roof(prec, unit, roof, unit_name, str(f["metric"]), None, index, roof / bw,
                                "sweep fit"))
    return out


def group(rs: list[Roof]) -> list[list[Roof]]:
    """Roofs whose values lie within 2.5% of the group's lowest, together (one line label); then neighbouring
    groups that hold the same precision and instruction (one device's FP16 a little above another's) and span
    no more than 10%, so that one precision's figures are never split over two labels."""
    out: list[list[Roof]] = []
    for r in sorted(rs, key=lambda r: r.value):
        if out and r.value <= out[-1][0].value * (1 + SAME):
            out[-1].append(r)
        else:
            out.append([r])
    merged: list[list[Roof]] = []
    for g in out:
        prev = merged[-1] if merged else None
        if prev and {_key(r) for r in prev} & {_key(r) for r in g} and g[-1].value <= prev[0].value * (1 + KEEP):
            prev.extend(g)
        else:
            merged.append(g)
    return merged


def _key(r: Roof) -> tuple[str, str]:
    return r.precision, r.name or tx.instruction_name(r.metric)


def roof_label(g: list[Roof], runs: list[Run]) -> str:
    """"FP16/BF16 wgmma 907/898 TFLOP/s, ridge 193 FLOP/B, datasheet 990 TFLOP/s"; with several runs
    "FP16/BF16 wgmma: H200 907/898, H100 936/938 TFLOP/s"."""
    keyed: dict[tuple[str, str], list[Roof]] = {}
    for r in sorted(g, key=lambda r: (_rank(r.precision), r.run)):
        keyed.setdefault((r.name or tx.instruction_name(r.metric), r.rate_unit), []).append(r)
    parts = []
    for (instr, unit), rs in keyed.items():
        names = "/".join(dict.fromkeys(r.precision.upper() for r in rs))
        if len(runs) == 1:
            parts.append(f"{names} {instr} {_values([r.value for r in rs], unit)}")
            continue
        per_run = []
        precs = list(dict.fromkeys(r.precision for r in rs))
        for i in sorted({r.run for r in rs}):
            mine = [r for r in rs if r.run == i]
            if [r.precision for r in mine] == precs:
                vals = _values([r.value for r in mine], unit).rsplit(" ", 1)[0]
            else:                 # this run lacks one of the label's precisions: name the precision of each value
                vals = "/".join(f"{r.precision.upper()} {_values([r.value], unit).rsplit(' ', 1)[0]}" for r in mine)
            per_run.append(f"{short_label(runs, i)} {vals}")
        parts.append(f"{names} {instr}: {', '.join(per_run)} {_values([rs[0].value], unit).rsplit(' ', 1)[1]}")
    lead = min(g, key=lambda r: _rank(r.precision))
    tail = ""
    if len(runs) == 1 and lead.ridge:
        tail = f", ridge {lead.ridge:.3g} {tx.per_byte(unit=lead.rate_unit)}"
    sheets = sorted({r.datasheet for r in g if r.datasheet})
    if sheets and len(runs) == 1:
        tail += f", datasheet {_values(sheets, lead.rate_unit)}"
    return " · ".join(parts) + tail


def short_label(runs: list[Run], i: int) -> str:
    """A run's name in a crowded label: the device's first word (H200), or A, B, ... for same-named devices."""
    words = [r.label.replace("NVIDIA ", "").split()[0] if r.label else f"run {k + 1}" for k, r in enumerate(runs)]
    return words[i] if words.count(words[i]) == 1 else chr(ord("A") + i)


def _rank(precision: str) -> int:
    return PROFILE_PRECISIONS.index(precision) if precision in PROFILE_PRECISIONS else 99


def _values(vals: list[float], unit: str) -> str:
    """807e12, 798e12 -> "807/798 TFLOP/s"; values equal to 3 digits are given once."""
    first = si(vals[0], unit)
    num, _, u = first.partition(" ")
    scale = vals[0] / float(num)
    nums = list(dict.fromkeys([num, *(f"{v / scale:.3g}" for v in vals[1:])]))
    return "/".join(nums) + f" {u}"


def roofline(runs: list[Run]):
    units = [u for u in (ExecUnit.TENSOR_CORE, ExecUnit.CUDA_CORE, ExecUnit.CPU) if any(roofs(r, u) for r in runs)]
    if not units:
        raise NoData("no compute ceilings in this profile")
    if not any(level_bw(r, "dram") for r in runs):
        raise NoData("no DRAM bandwidth, measured or from the device's memory clock, to draw the slope from")
    plt = st.pyplot()
    fig, axes = plt.subplots(1, len(units), figsize=(7.4 * len(units), 6.4), squeeze=False)
    for ax, unit in zip(axes[0], units, strict=False):
        _panel(ax, unit, runs)
    name = " vs ".join(r.label for r in runs) if len(runs) > 1 else runs[0].device_name
    what = ("measured roofline" if all(tx.is_measured(r.profile) for r in runs) else
            "roofline EXPECTED from the datasheet (spec-derived, not measured)")
    fig.suptitle(f"{name}: {what}", fontsize=12, fontweight="bold", x=0.01, ha="left")
    fitted = any(r.name == "sweep fit" for run in runs for u in units for r in roofs(run, u))
    key = ["solid: measured ceiling (the best instruction or library kernel), starting at its ridge point (o) on "
           "the DRAM slope" if not fitted else "solid: the roof fitted to the intensity sweep (this run measured "
           "no compute ceilings), starting at its ridge point (o)"]
    if any(r.datasheet for run in runs for u in units for r in roofs(run, u)) and len(runs) == 1:
        key.append("dashed: datasheet")
    if any(r.sweeps("roofline.") for r in runs):
        key.append("dots: intensity sweep (a kernel streaming DRAM with a chain of FMAs per element)")
    if len(runs) > 1:
        key.append(", ".join(f"{['blue', 'red', 'green', 'purple', 'orange', 'brown'][i % 6]}: "
                             f"{short_label(runs, i)} ({r.device_name.replace('NVIDIA ', '')}, {r.path.name})"
                             for i, r in enumerate(runs)))
    fig.text(0.01, 0.935, textwrap.fill("; ".join(key), int(17 * 7.4 * len(units))), fontsize=8, color="#333333",
             va="top")
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    for ax, unit in zip(axes[0], units, strict=False):
        _labels(ax, unit, runs)
    return fig


def _limits(unit: str, runs: list[Run]) -> tuple[float, float, float, float]:
    rs = [r for i, run in enumerate(runs) for r in roofs(run, unit, i)]
    tops = [r.value for r in rs] + [r.datasheet for r in rs if r.datasheet]
    ridges = [r.ridge for r in rs if r.ridge]
    pts = [m for run in runs for m in run.sweeps("roofline.") if m.exec_unit in (unit, None)]
    xmin = 1 / 8
    xmax = 2 ** np.ceil(np.log2(max(ridges + [8]) * 8))
    if pts:
        xmin = min(xmin, min(m.params.get(K.INTENSITY, 1) for m in pts) / 2)
        xmax = max(xmax, 2 * max(m.params.get(K.INTENSITY, 1) for m in pts))
    xmax = min(xmax, 2.0 ** 15)
    bw = min(level_bw(run, "dram") or np.inf for run in runs)
    ymax = max(tops) * 2.2
    ymin = max(min(bw * xmin, min((m.value for m in pts), default=np.inf)) / 1.5, ymax / 1e6)
    return xmin, xmax, ymin, ymax


def _panel(ax, unit: str, runs: list[Run]) -> None:
    xmin, xmax, ymin, ymax = _limits(unit, runs)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlim(xmin, xmax)
    ax.set_ylim(ymin, ymax)
    st.log2_axis(ax.xaxis)
    st.si_axis(ax.yaxis)
    ints = all(tx.is_integer(r.precision) for run in runs for r in roofs(run, unit))
    ax.set_xlabel("arithmetic intensity (operations per byte moved from DRAM, or from the level of each slope)")
    ax.set_ylabel("operations per second (FLOP/s; OP/s for integers)" if not ints else "OP/s")
    ax.set_title(PANEL_TITLES.get(unit, unit), loc="left", fontweight="bold")
    multi = len(runs) > 1
    for i, run in enumerate(runs):
        _slopes(ax, run, unit, i, multi, xmin, xmax)
        for r in roofs(run, unit, i):
            color = st.RUN_COLORS[i] if multi else st.precision_color(r.precision)
            lw = 2.2 if unit == ExecUnit.TENSOR_CORE else 1.8
            bw = level_bw(run, "dram")
            ax.plot([r.value / bw, xmax], [r.value, r.value], color=color, lw=lw, solid_capstyle="butt")
            ax.plot([r.value / bw], [r.value], "o", color=color, ms=5, mfc="white", mew=1.5, zorder=5)
            ds_bw = _datasheet_bw(run)
            if r.datasheet and not multi:
                ax.plot([r.datasheet / ds_bw, xmax], [r.datasheet, r.datasheet], color=color, lw=1.1,
                        ls=st.DATASHEET_LS)
        _sweep(ax, run, unit, i, multi)
    _fp16_note(ax, unit, runs)


def _datasheet_bw(run: Run) -> float:
    c = run.profile.memory.get("dram")
    bw = c.bandwidth if c else None
    return (bw.datasheet or bw.theory_at_max_clock or bw.value) if bw else level_bw(run, "dram")


def _slopes(ax, run: Run, unit: str, i: int, multi: bool, xmin: float, xmax: float) -> None:
    """Each measured memory level's slope, from the left edge up to the panel's highest roof."""
    top = max([r.value for r in roofs(run, unit, i)] + [r.datasheet or 0 for r in roofs(run, unit, i)])
    for level in LEVELS:
        bw = level_bw(run, level)
        if not bw or (multi and level != "dram"):
            continue
        color, ls = st.LEVEL_STYLES[level]
        if level == "dram" and not dram_measured(run):
            ls = st.DATASHEET_LS      # theory: this run did not measure DRAM
        if multi:
            color = st.RUN_COLORS[i]
        x1 = min(top / bw, xmax)
        ax.plot([xmin, x1], [xmin * bw, x1 * bw], color=color, ls=ls, lw=1.3 if level == "dram" else 1.0)
        if level == "dram" and not multi:
            ds = _datasheet_bw(run)
            if ds and abs(ds / bw - 1) > 0.005:
                ax.plot([xmin, min(top / ds, xmax)], [xmin * ds, min(top, xmax * ds)], color=color, lw=0.9,
                        ls=st.DATASHEET_LS)


def _sweep(ax, run: Run, unit: str, i: int, multi: bool) -> None:
    by_prec: dict[str, list[tuple[float, float]]] = {}
    for m in run.sweeps("roofline."):
        if m.exec_unit in (unit, None) and K.INTENSITY in m.params:
            by_prec.setdefault(m.precision or "?", []).append((m.params[K.INTENSITY],
                                                                                          m.value))
    for prec, pts in by_prec.items():
        xs, ys = np.array(sorted(pts)).T
        color = st.RUN_COLORS[i] if multi else st.precision_color(prec)
        marker = st.RUN_MARKERS[i] if multi else "o"
        ax.plot(xs, ys, marker, color=color, ms=3.6, alpha=0.85, lw=0.6, ls="-" if multi else "none", zorder=4)


def _fp16_note(ax, unit: str, runs: list[Run]) -> None:
    """Where the FP16 sweep levels off under the CUDA-core FP16 roof, say why on the plot."""
    run = runs[0]
    pts = [m for m in run.sweeps("roofline.fp16.") if K.INTENSITY in m.params]
    roof = run.profile.peak("fp16", unit)
    if unit != ExecUnit.CUDA_CORE or not pts or not roof:
        return
    top = max(m.value for m in pts)
    if top > 0.75 * roof.value:
        return
    pipe = run.measurement("experiment.cuda_core.hfma2_fma_pipe")
    pipe_rate = ((pipe.params.get(K.FLOP_PER_S) or {}).get("hfma") if pipe else None) or None
    src = (f"HFMA2 on the FMA pipe alone runs {si(pipe_rate, 'FLOP/s')} (gpu.fma)" if pipe_rate else
           f"the sweep tops out at {si(top, 'FLOP/s')}")
    ax.annotate(f"FP16 sweep levels off at {si(top, 'FLOP/s')}, half the {si(roof.value, 'FLOP/s')} HFMA2 roof:\n"
                f"its half2 FMA chains issue as plain HFMA2 on the FMA pipe only;\n"
                f"the full rate also issues HFMA2.MMA on the MMA pipe ({src})",
                xy=(sorted(m.params[K.INTENSITY] for m in pts)[-3], top), xytext=(0.98, 0.06),
                textcoords="axes fraction", ha="right", va="bottom", fontsize=7.5, color="#225522",
                arrowprops={"arrowstyle": "->", "color": "#225522", "lw": 0.8},
                bbox={"boxstyle": "round,pad=0.3", "fc": "white", "ec": "#99bb99", "lw": 0.6})


def _labels(ax, unit: str, runs: list[Run]) -> None:
    """Roof labels in a column at the right end of their lines; datasheet and slope labels at their start."""
    xmin, xmax = ax.get_xlim()
    ymin, ymax = ax.get_ylim()
    all_roofs = [r for i, run in enumerate(runs) for r in roofs(run, unit, i)]
    right = []
    for g in group(all_roofs):
        lead = min(g, key=lambda r: _rank(r.precision))
        multi_run = len({r.run for r in g}) > 1
        color = "#222222" if multi_run else (st.RUN_COLORS[g[0].run] if len(runs) > 1 else
                                             st.precision_color(lead.precision))
        right.append(st.Label(xmax / 1.12, g[0].value, roof_label(g, runs), color, weight="bold"))
    st.place_column(ax, right, [r.value for r in all_roofs] + [r.datasheet for r in all_roofs if r.datasheet])
    _slope_labels(ax, runs, xmin, ymin, ymax)


def _slope_labels(ax, runs: list[Run], xmin: float, ymin: float, ymax: float) -> None:
    span = np.log10(ymax / ymin)
    for i, run in enumerate(runs):
        for k, level in enumerate(LEVELS):
            bw = level_bw(run, level)
            if not bw or (len(runs) > 1 and level != "dram"):
                continue
            y = ymin * 10 ** (span * (0.10 + 0.09 * k + 0.05 * i))
            x = y / bw
            if x < xmin * 1.2:
                x, y = xmin * 1.2, xmin * 1.2 * bw
            angle = st.slope_angle(ax, x, y, x * 4, y * 4)
            who = f"{short_label(runs, i)} " if len(runs) > 1 else ""
            color = st.RUN_COLORS[i] if len(runs) > 1 else st.LEVEL_STYLES[level][0]
            what = "" if level != "dram" or dram_measured(run) else " theory (not measured in this run)"
            ax.text(x, y * 1.12, f"{who}{tx.LEVEL_NAMES[level]} {si(bw, 'B/s')}{what}", rotation=angle,
                    rotation_mode="anchor", fontsize=7.5, color=color, ha="left", va="bottom")
