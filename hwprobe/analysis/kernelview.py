"""Times without a model: the kernels of a profiler file (nsys, a PyTorch trace or table, a TensorRT profile)
against the roofs that apply to them. Each kernel's unit and precision come from its name (hwprobe.analysis.classify);
its roof is the profile's measured ceiling for that unit and precision (the DRAM slope for memory kernels). A
kernel's work is not in these files, so no attained rate is claimed: the view says where the time goes, on which
unit, and which roof bounds each kernel."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from hwprobe.analysis.timings import Times
from hwprobe.errors import InputError
from hwprobe.vocab import ExecUnit

UNITS = (ExecUnit.TENSOR_CORE, ExecUnit.CUDA_CORE, "memory", "unknown")


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
    if unit in (ExecUnit.TENSOR_CORE, ExecUnit.CUDA_CORE) and precision:
        c = profile.peak(precision, unit)
        return f"{precision} {unit.replace('_', ' ')} {si(c.value, c.unit)}" if c else f"no {precision} {unit} ceiling"
    return ""


def kernel_view(times: list[Times], profile=None) -> KernelView:
    """Every kernel record of ``times`` (layer records that name their kernel count too), merged by name."""
    from hwprobe.analysis.advice import kernel_tip
    from hwprobe.analysis.classify import classify
    from hwprobe.analysis.join import merge_info

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


def render_kernel_view(v: KernelView, con, show_all: bool = False, n: int = 25, wide: bool = False) -> None:
    """The kernels by time in a table that fits the console: the kernel column takes the width the others leave
    (names shortened, said, whole with ``wide``), and the roof column gives the rate alone (its unit and
    precision are the row's own columns)."""
    from hwprobe.analysis.classify import SHORTENED, short_name
    from hwprobe.report.fit import light_table, room, show
    from hwprobe.units import si

    con.print(f"[bold]kernels[/bold] from {', '.join(v.sources)}: {len(v.rows)} distinct, {si(v.total_s, 's')} "
              "in total; time by unit: " + ", ".join(f"{u.replace('_', ' ')} {s:.0%}" for u, s in v.by_unit.items()
                                                     if s > 0))
    rows = v.rows if show_all else v.rows[:n]
    heads = ("share", "time", "calls", "unit", "prec", "roof")
    cells = [(f"{r.share:.1%}", si(r.total_s, "s"), str(r.calls), r.unit.replace("_", " "), r.precision or "-",
              (r.roof if wide else _rate(r)) or "-") for r in rows]
    longest = max(len(r.name) for r in rows)
    width = longest if wide else min(longest, max(room(con, list(zip(heads, *cells, strict=True)), last=True), 16))
    t = light_table("where the time goes (no model: unit and precision from each kernel's name, roof from the "
                    "profile)")
    for col in heads:               # the name last, as nsys prints it: it takes the width the others leave
        t.add_column(col, justify="right" if col in ("share", "time", "calls") else "left", no_wrap=True)
    t.add_column("kernel", no_wrap=True)
    shown = [short_name(r.name, width) for r in rows]
    for name, c in zip(shown, cells, strict=True):
        t.add_row(*c, name)
    show(con, t) if wide else con.print(t)
    if not show_all and len(v.rows) > n:
        con.print(f"({len(v.rows) - n} more kernels: --all)")
    if shown != [r.name for r in rows]:
        con.print(f"[dim]{SHORTENED}[/dim]", highlight=False)
    for name, r in zip(shown, rows[:5], strict=False):
        con.print(f"  {name}: {r.tip}", highlight=False, markup=False)


def _rate(r: KernelRow) -> str:
    """The roof without the unit and precision its row already names: "922 TFLOP/s", "DRAM 4.41 TB/s"."""
    return r.roof.removeprefix(f"{r.precision} {r.unit.replace('_', ' ')} ")
