"""The profile in a terminal (rich): tables that fit the width, then the gap, findings, skips and invalid results.

Under 120 columns the compact tables (measured, theory at the clock, %, clock) are shown unless ``wide``;
rates of a row share one unit column, so the wide tables fit 120 columns.
"""

from __future__ import annotations

from hwprobe.profile import Profile
from hwprobe.report import tables as tb
from hwprobe.report import text as tx

WIDE_AT = 120


def rich_table(t: tb.Table, wide: bool, digits: int = 3):
    """A rich Table: text columns, then one unit column for the row's rates, then numbers."""
    from rich import box
    from rich.table import Table

    cols = t.visible(wide, terminal=True)
    rates = [c for c in cols if c.kind == "rate"]
    out = Table(title=t.title, title_justify="left",
                box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, title_style="bold",
                padding=(0, 1, 0, 0))
    first_rate = next((i for i, c in enumerate(cols) if c.kind == "rate"), None)
    headers = []
    for i, c in enumerate(cols):
        if i == first_rate:
            headers.append(("unit", "left", False))
        headers.append((c.short or c.header, "left" if c.kind == "text" else "right", c.wrap))
    for h, justify, wrap in headers:
        out.add_column(h, justify=justify, no_wrap=not wrap, overflow="fold")
    for row in t.rows:
        unit, nums = tb.scaled([row.get(c.key) for c in rates], row.get("_unit") or "", digits)
        by_key = dict(zip([c.key for c in rates], nums, strict=False))
        cells = []
        for i, c in enumerate(cols):
            if i == first_rate:
                cells.append(unit)
            cells.append(by_key[c.key] if c.kind == "rate" else tb.fmt(c, row))
        out.add_row(*cells)
    return out


def show(con, table) -> None:
    """Print a table at its natural width: --wide on a narrow terminal runs past the edge rather than
    squeezing (and cutting) cells."""
    from rich.measure import Measurement

    natural = Measurement.get(con, con.options.update(width=10_000), table).maximum
    if natural <= con.width:
        con.print(table)
        return
    width = con.width
    try:
        con.width = natural
        con.print(table, crop=False)
    finally:
        con.width = width


def hidden(t: tb.Table) -> list[str]:
    """Headers the compact view leaves out."""
    shown = {c.key for c in t.visible(False, terminal=True)}
    return [c.header for c in t.visible(True, terminal=True) if c.key not in shown]


def render(p: Profile, console=None, wide: bool | None = None, kind: str | None = None) -> None:
    """Print the profile: header, ceilings, ridge points, gap, then findings, skips, invalid results, errors."""
    from rich.console import Console

    con = console or Console()
    kind = kind or ("gpu" if p.device.get("sms") or p.device.get("kind") == "gpu" else "cpu")
    wide = bool(wide) or con.width >= WIDE_AT
    name = p.device.get("name") or p.device.get("model") or "?"
    con.print(f"[bold]{name}[/bold]  hwprobe {p.hwprobe_version}, profile schema {p.schema_version}, "
              f"{p.created_utc}{'  [red]PARTIAL (interrupted)[/red]' if p.partial else ''}", highlight=False)
    if not tx.is_measured(p):
        con.print(f"[bold red]{tx.NOT_MEASURED}[/bold red]", highlight=False)
    if p.superseded:
        con.print(f"[bold red]SUPERSEDED[/bold red]: {p.superseded}", highlight=False)
    left_out: list[str] = []
    for t in (tb.compute_table(p, kind), tb.memory_table(p, kind), tb.links_table(p), tb.ridge_table(p)):
        if t.rows:
            show(con, rich_table(t, wide))
            left_out += [] if wide else hidden(t)
    if left_out:
        con.print(f"[dim]more columns ({', '.join(dict.fromkeys(left_out))}): --wide, or a terminal of "
                  f"{WIDE_AT}+ columns[/dim]", highlight=False)
    from hwprobe.report.gapview import chains, line

    section(con, "Gap to the datasheet (x max clock x clock under load [x SM clock below set] x path efficiency = "
            "measured; then the other path)", [line(c) for c in chains(p)])
    section(con, "Datasheet and device", [tx.item_line(i) for i in tx.datasheet_items(p)])
    section(con, "Findings", [i.text for i in tx.finding_items(p)])
    section(con, "Skipped", [tx.item_line(i) for i in tx.skip_items(p)])
    section(con, "Invalid (not used as ceilings)", [tx.item_line(i) for i in tx.invalid_items(p)])
    section(con, "Errors", [tx.item_line(i) for i in tx.error_items(p)])


def section(con, title: str, lines: list[str]) -> None:
    if lines:
        con.print(f"[bold]{title}[/bold]")
        for line in lines:
            con.print(f"  - {line}", highlight=False, markup=False)
