"""Terminal tables (rich) of a profile: measured beside theory at the measured clock, max clock, datasheet."""

from __future__ import annotations

from typing import Any

from hwprobe.profile import Ceiling, Profile
from hwprobe.units import pct, si

PRECISION_ORDER = ["fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "int32", "int8", "int4", "int1"]
LEVEL_ORDER = ["shared", "l1", "l2", "l2_near", "l2_far", "dram", "host_h2d", "host_d2h", "host_bidir"]


def _order(keys, order):
    return sorted(keys, key=lambda k: (order.index(k) if k in order else len(order), k))


def _clock(c: Ceiling) -> str:
    return f"{c.clock_mhz:.0f}" if c.clock_mhz else "-"


def _power(c: Ceiling) -> str:
    return f"{c.power_w:.0f}" if c.power_w else "-"


def compute_table(p: Profile):
    from rich.table import Table

    t = Table(title="Compute ceilings (measured vs theory; FMA = 2 ops)", title_justify="left")
    for col in ("precision", "unit", "path", "measured", "theory @clock", "%", "theory @max", "%",
                "datasheet", "%", "SM MHz", "W", "J/op", "throttle"):
        t.add_column(col, justify="right" if col not in ("precision", "unit", "path", "throttle") else "left")
    for prec in _order(p.compute, PRECISION_ORDER):
        for unit, paths in sorted(p.compute[prec].items()):
            for path in ("instruction", "library", "library_sparse24"):
                c = paths.get(path)
                if c is None:
                    continue
                t.add_row(prec, unit, path, si(c.value, c.unit), si(c.theory_at_clock, c.unit), pct(c.ratio_at_clock),
                          si(c.theory_at_max_clock, c.unit), pct(c.ratio_at_max_clock), si(c.datasheet, c.unit),
                          pct(c.ratio_datasheet), _clock(c), _power(c),
                          f"{c.energy_per_unit_j:.2e}" if c.energy_per_unit_j else "-",
                          ", ".join(c.throttle_reasons) or "-")
    return t


def memory_table(p: Profile):
    from rich.table import Table

    t = Table(title="Memory ceilings (bytes as each probe counts them)", title_justify="left")
    for col in ("level", "bandwidth", "theory @clock", "%", "datasheet", "%", "capacity", "latency",
                "cycles", "best of", "MHz", "throttle"):
        t.add_column(col, justify="left" if col in ("level", "best of", "throttle") else "right")
    for name in _order(p.memory, LEVEL_ORDER):
        lvl = p.memory[name]
        c = lvl.bandwidth
        t.add_row(
            name, si(c.value, c.unit) if c else "-", si(c.theory_at_clock, "B/s") if c else "-",
            pct(c.ratio_at_clock) if c else "-", si(c.datasheet, "B/s") if c else "-",
            pct(c.ratio_datasheet) if c else "-", si(lvl.capacity_bytes, "B"), si(lvl.latency_s, "s"),
            f"{lvl.latency_cycles:.0f}" if lvl.latency_cycles else "-", c.metric if c else "-",
            _clock(c) if c else "-", (", ".join(c.throttle_reasons) or "-") if c else "-",
        )
    return t


def ridge_lines(p: Profile) -> list[str]:
    out = []
    bw = p.bandwidth("dram")
    if not bw:
        return out
    for prec in _order(p.compute, PRECISION_ORDER):
        pk = p.peak(prec)
        if pk:
            out.append(f"{prec}: ridge point {pk.value / bw:.1f} FLOP/B (measured peak {si(pk.value, pk.unit)} / "
                       f"measured DRAM {si(bw, 'B/s')})")
    return out


def render(p: Profile, console=None) -> None:
    from rich.console import Console

    con = console or Console()
    dev = p.device
    name = dev.get("name") or dev.get("model") or "?"
    con.print(f"[bold]{name}[/bold]  profile schema {p.schema_version}, hwprobe {p.hwprobe_version}, "
              f"{p.created_utc}{'  [red]PARTIAL (interrupted)[/red]' if p.partial else ''}")
    if p.compute:
        con.print(compute_table(p))
    if p.memory:
        con.print(memory_table(p))
    for line in ridge_lines(p):
        con.print(f"  {line}")
    from hwprobe.gap import gaps

    _section(con, "Gap to the datasheet (datasheet x clock factors x path efficiency = measured; then the other path)",
             [g.sentence() for g in gaps(p) if g.steps])
    _section(con, "Findings", [_finding(f) for f in p.findings if f.get("text")])
    _section(con, "Skipped", [f"{s['probe']}: {s['reason']}" for s in p.skipped])
    _section(con, "Invalid (not used as ceilings)",
             [f"{i['metric']}: {si(i['value'], i['unit'])} ({'; '.join(i['flags'])})" for i in p.invalid])
    _section(con, "Errors", [f"{e['probe']}: {e['error']}" for e in p.errors])


def _finding(f: dict[str, Any]) -> str:
    """A finding's sentence, led by its value where it has one (a ridge point, a slowdown factor)."""
    value, unit = f.get("value"), f.get("unit") or ""
    if value and unit:
        return f"{f['metric']} = {si(value, unit)}: {f['text']}"
    return f["text"]


def _section(con, title: str, lines: list[str]) -> None:
    if lines:
        con.print(f"[bold]{title}[/bold]")
        for line in lines:
            con.print(f"  - {line}", highlight=False)


def specs_table(title: str, rows: list[dict[str, Any]]):
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    cols = list(rows[0]) if rows else []
    for c in cols:
        t.add_column(c, justify="left" if isinstance(rows[0][c], str) else "right")
    for r in rows:
        t.add_row(*[v if isinstance(v, str) else ("-" if v is None else f"{v:.4g}") for v in r.values()])
    return t
