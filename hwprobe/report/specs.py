"""`hwprobe specs`: the datasheet model (hwprobe.specs.DeviceTheory) as tables: peaks at the max clock, 2:4
sparse, datasheet and its clock, ridge points; memory levels with their formulas; where theory and the
datasheet disagree; the entry's notes (and, for a Jetson module, its published figures and power modes)."""

from __future__ import annotations

from hwprobe.report import tables as tb
from hwprobe.report import text as tx


def compute_table(dt) -> tb.Table:
    cols = [tb.Column("precision", "precision"), tb.Column("unit", "cores"),
            tb.Column("peak", "peak @max clock", "rate", short="peak\n@max clk"),
            tb.Column("sparse", "2:4 sparse", "rate", short="2:4\nsparse"),
            tb.Column("datasheet", "datasheet", "rate", short="data-\nsheet"),
            tb.Column("sheet_mhz", "datasheet clock", "mhz", short="sheet\nMHz"),
            tb.Column("ridge", "ridge point"), tb.Column("basis", "basis", wide=True, wrap=True)]
    t = tb.Table("Compute: theory", cols, note="peak = SMs x multiply-adds per clock per SM x 2 x clock; the ridge "
                 "point against theoretical DRAM bandwidth")
    for r in dt.table():
        t.rows.append({"precision": r["precision"], "unit": tx.UNIT_SHORT.get(r["unit"], r["unit"]),
                       "_unit": r["op_unit"], "peak": r["peak"], "sparse": r["peak_sparse"],
                       "datasheet": r["datasheet"], "sheet_mhz": r["datasheet_clock_mhz"],
                       "ridge": f"{r['ridge']:.3g} {tx.per_byte(r['precision'])}" if r["ridge"] else None,
                       "basis": r["basis"]})
    return t


def memory_table(dt) -> tb.Table:
    cols = [tb.Column("level", "level"), tb.Column("peak", "peak", "rate"),
            tb.Column("datasheet", "datasheet", "rate", short="data-\nsheet"),
            tb.Column("basis", "basis", wrap=True)]
    t = tb.Table("Memory: theory", cols)
    for r in dt.memory_table():
        t.rows.append({"level": tx.LEVEL_NAMES.get(r["level"], r["level"]), "_unit": "B/s", "peak": r["peak"],
                       "datasheet": r["datasheet"], "basis": r["basis"]})
    return t


def lines(dt, width: int | None = None) -> list[str]:
    """The text after the tables: disagreements, the entry's notes, a Jetson module's modes (the mode table's
    figure columns cut to ``width``, when given)."""
    out = [f"! {tx.plain(d)}" for d in dt.disagreements()]
    if dt.sku:
        out += [f"note: {tx.plain(n)}" for n in dt.sku.notes]
        if getattr(dt.sku, "power_modes", None):
            from hwprobe.specs.modes import render_module  # Jetson: published vs theory, power modes

            out += [x.strip("\n") for x in render_module(dt.sku, width)]
    return out


def render(dt, console, wide: bool | None = None) -> None:
    """Print the datasheet model of ``dt`` (a DeviceTheory) to a rich console."""
    from rich.text import Text

    from hwprobe.report.terminal import print_fitted

    asked = bool(wide)
    console.print(Text(dt.label, style="bold"))
    if dt.sku and dt.sku.source:
        console.print(Text(f"source: {tx.plain(dt.sku.source)}"), highlight=False)
    left_out: list[str] = []
    for t in (compute_table(dt), memory_table(dt)):
        if t.rows:
            left_out += print_fitted(console, t, asked, digits=4)
    if left_out:
        console.print(f"[dim]more columns ({', '.join(dict.fromkeys(left_out))}): --wide[/dim]", highlight=False)
    for line in lines(dt, None if asked else console.width):
        # prose wraps at the console's width; the mode table is cut to fit it (--wide: every line whole)
        console.print(Text(line), highlight=False, soft_wrap=asked)


def render_text(dt, width: int = 160) -> str:
    """The same as plain text (for tests and logs)."""
    import io

    from rich.console import Console

    buf = io.StringIO()
    render(dt, Console(file=buf, width=width, color_system=None, highlight=False), wide=True)
    return buf.getvalue()
