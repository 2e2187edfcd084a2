"""The profile in a terminal (rich): tables that fit the width, then the gap, findings, skips and invalid results.

Each table shows every column that fits the console: the wide ones (datasheet, power, throttle...) are left out
from the right until it fits, and one line names them; ``wide`` shows them all. Rates of a row share one unit
column.
"""

from __future__ import annotations

from hwprobe.profile import Profile
from hwprobe.report import tables as tb
from hwprobe.report import text as tx
from hwprobe.report.fit import fit, show


def rich_table(t: tb.Table, wide: bool, digits: int = 3):
    """A rich Table: text columns, then one unit column for the row's rates, then numbers."""
    from hwprobe.report.fit import light_table

    order, rows = tb.unit_layout(t.visible(wide, terminal=True), t.rows, digits)
    out = light_table(t.title, title_style="bold")
    for c in order:
        if c is None:
            out.add_column("unit", justify="left", no_wrap=True, overflow="fold")
        else:
            out.add_column(c.short or c.header, justify="left" if c.kind == "text" else "right", no_wrap=not c.wrap,
                           overflow="fold")
    for cells in rows:
        out.add_row(*cells)
    return out


def print_fitted(con, t: tb.Table, wide: bool, digits: int = 3) -> list[str]:
    """Print ``t`` with every column (``wide``: at its natural width), else with its wide columns left out from
    the right until it fits the console; returns the headers left out."""
    table = rich_table(t, True, digits)
    if wide:
        show(con, table)
        return []
    optional = [c.short or c.header for c in reversed(t.visible(True, terminal=True)) if c.wide]
    dropped = fit(con, table, optional)
    show(con, table)
    full = {(c.short or c.header).replace("\n", " "): c.header for c in t.columns}
    return [full.get(h, h) for h in dropped]


def render(p: Profile, console=None, wide: bool | None = None, kind: str | None = None) -> None:
    """Print the profile: header, ceilings, ridge points, gap, then findings, skips, invalid results, errors."""
    from rich.console import Console

    con = console or Console()
    kind = kind or ("gpu" if p.device.get("sms") or p.device.get("kind") == "gpu" else "cpu")
    asked = bool(wide)
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
            left_out += print_fitted(con, t, asked)
            if line := tb.edges_line(t):
                con.print(f"[dim]{line}[/dim]", highlight=False)
    if left_out:
        con.print(f"[dim]more columns ({', '.join(dict.fromkeys(left_out))}): --wide[/dim]", highlight=False)
    from hwprobe.report.gapview import chains, line

    section(con, "Gap to the datasheet (x max clock x clock under load [x SM clock below set] x path efficiency = "
            "measured; then the other path)", [line(c) for c in chains(p)])
    section(con, "Datasheet and device", [tx.item_line(i) for i in tx.datasheet_items(p)])
    section(con, "Findings", [i.text for i in tx.finding_items(p)])
    section(con, "Skipped", [tx.item_line(i) for i in tx.skip_items(p)])
    section(con, "Invalid (not used as ceilings)", [tx.item_line(i) for i in tx.invalid_items(p)])
    section(con, "Errors", [tx.item_line(i) for i in tx.error_items(p)])
    times = tb.probe_time_table(p.environment)
    if times.rows:
        print_fitted(con, times, asked)


def section(con, title: str, lines: list[str]) -> None:
    if lines:
        con.print(f"[bold]{title}[/bold]")
        for line in lines:
            con.print(f"  - {line}", highlight=False, markup=False)
