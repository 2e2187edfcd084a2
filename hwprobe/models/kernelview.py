"""Times without a model: the kernels of a profiler file (nsys, a PyTorch trace or table, a TensorRT profile)
against the roofs that apply to them. Each kernel's unit and precision come from its name (hwprobe.models.classify);
its roof is the profile's measured ceiling for that unit and precision (the DRAM slope for memory kernels). A
kernel's work is not in these files, so no attained rate is claimed: the view says where the time goes, on which
unit, and which roof bounds each kernel."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from hwprobe.errors import InputError
from hwprobe.models.timings import Times

UNITS = ("tensor_core", "cuda_core", "memory", "unknown")


@dataclass
class KernelRow:
    name: str
    calls: int
    total_s: float
    share: float
    unit: str
    precision: str | None
    accumulator: str | None
    family: str
    confidence: str
    roof: str                  # the measured ceiling that bounds it ("" without a profile or that ceiling)
    tip: str


@dataclass
class KernelView:
    rows: list[KernelRow]
    total_s: float
    by_unit: dict[str, float]              # share of the time per unit
    sources: list[str]
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"total_s": self.total_s, "by_unit": self.by_unit, "sources": self.sources, "notes": self.notes,
                "kernels": [asdict(r) for r in self.rows]}


def _roof(profile, unit: str, precision: str | None) -> str:
    from hwprobe.units import si

    if profile is None:
        return ""
    if unit == "memory":
        bw = profile.bandwidth("dram")
        return f"DRAM {si(bw, 'B/s')}" if bw else ""
    if unit in ("tensor_core", "cuda_core") and precision:
        c = profile.peak(precision, unit)
        return f"{precision} {unit.replace('_', ' ')} {si(c.value, c.unit)}" if c else f"no {precision} {unit} ceiling"
    return ""


def kernel_view(times: list[Times], profile=None) -> KernelView:
    """Every kernel record of ``times`` (layer records that name their kernel count too), merged by name."""
    from hwprobe.models.advice import kernel_tip
    from hwprobe.models.classify import classify
    from hwprobe.models.join import merge_info

    merged: dict[str, list[float]] = {}
    with_kernels = [t for t in times if t.kernel_records]
    records = [r for t in with_kernels for r in t.kernel_records] + merge_info(
        [t for t in times if not t.kernel_records])
    for r in records:                      # TensorRT: layer info's tactic names joined to the profile's times
        name = r.kernel or r.name
        if not (r.is_kernel or r.kernel):
            continue
        total = r.total_s if r.total_s is not None else (r.time_s or 0.0) * (r.count or 1)
        acc = merged.setdefault(name, [0.0, 0])
        acc[0] += total or 0.0
        acc[1] += r.count or 1
    if not merged:
        raise InputError("no kernel records in " + ", ".join(t.format for t in times)
                         + ": a times-only view needs kernel names (nsys, a chrome trace, a TensorRT layer info)")
    total = sum(v[0] for v in merged.values())
    if total <= 0:
        raise InputError("the kernel records carry no times (TensorRT layer info alone: add its --exportProfile "
                         "file with a second --times)")
    rows, by_unit = [], dict.fromkeys(UNITS, 0.0)
    for name, (secs, calls) in sorted(merged.items(), key=lambda kv: -kv[1][0]):
        k = classify(name)
        unit = k.unit if k.unit in UNITS else "unknown"
        by_unit[unit] += secs / total
        rows.append(KernelRow(name, int(calls), secs, secs / total, unit, k.precision, k.accumulator, k.family,
                              k.confidence, _roof(profile, unit, k.precision), kernel_tip(k)))
    return KernelView(rows, total, by_unit, [t.format for t in times])


def render_kernel_view(v: KernelView, con, show_all: bool = False, n: int = 25) -> None:
    from hwprobe.report.fit import light_table
    from hwprobe.units import si

    con.print(f"[bold]kernels[/bold] from {', '.join(v.sources)}: {len(v.rows)} distinct, {si(v.total_s, 's')} "
              "in total; time by unit: " + ", ".join(f"{u.replace('_', ' ')} {s:.0%}" for u, s in v.by_unit.items()
                                                     if s > 0))
    t = light_table("where the time goes (no model: unit and precision from each kernel's name, roof from the "
                    "profile)")
    for col, just in (("share", "right"), ("time", "right"), ("calls", "right"), ("kernel", "left"),
                      ("unit", "left"), ("prec", "left"), ("roof", "left")):
        t.add_column(col, justify=just, overflow="fold" if col == "kernel" else "ellipsis")
    for r in v.rows if show_all else v.rows[:n]:
        t.add_row(f"{r.share:.1%}", si(r.total_s, "s"), str(r.calls), r.name[:80], r.unit.replace("_", " "),
                  r.precision or "-", r.roof or "-")
    con.print(t)
    if not show_all and len(v.rows) > n:
        con.print(f"({len(v.rows) - n} more kernels: --all)")
    for r in v.rows[:5]:
        con.print(f"  {r.name[:60]}: {r.tip}")
