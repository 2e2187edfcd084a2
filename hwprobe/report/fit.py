"""Rich tables that fit the console: optional columns are dropped (least useful first) until the table fits, and
one line says which were left out and how to see them; --wide prints every column at its natural width."""

from __future__ import annotations

from collections.abc import Sequence


def natural_width(con, table) -> int:
    from rich.measure import Measurement

    return Measurement.get(con, con.options.update(width=10_000), table).maximum


def fit(con, table, optional: Sequence[str]) -> list[str]:
    """Drop the ``optional`` columns (by header, in order) until ``table`` fits ``con.width`` without cutting a
    cell; returns the headers dropped."""
    dropped: list[str] = []
    for name in optional:
        if natural_width(con, table) <= con.width:
            break
        col = next((c for c in table.columns if str(c.header) == name), None)
        if col is not None:
            table.columns.remove(col)
            for i, c in enumerate(table.columns):     # rich pads the first and last column by their index
                c._index = i
            dropped.append(name.replace("\n", " "))
    return dropped


def print_table(con, table, optional: Sequence[str] = (), wide: bool = False, hint: str = "--wide") -> list[str]:
    """Print ``table``: with ``wide`` at its natural width (past the edge if need be), else with optional columns
    dropped to fit, and a line naming them. Returns the headers dropped."""
    if wide:
        show(con, table)
        return []
    dropped = fit(con, table, optional)
    con.print(table)
    if dropped:
        con.print(f"[dim]more columns ({', '.join(dropped)}): {hint}[/dim]", highlight=False)
    return dropped


def show(con, table) -> None:
    """Print a table at its natural width: --wide on a narrow terminal runs past the edge rather than
    squeezing (and cutting) cells."""
    from rich.measure import Measurement

    span = Measurement.get(con, con.options.update(width=10_000), table)
    natural = span.maximum
    if natural <= con.width or (span.minimum <= con.width and _wraps(table)):   # wrapping columns may wrap
        con.print(table)
        return
    width = con.width
    try:
        con.width = natural
        con.print(table, crop=False)
    finally:
        con.width = width


def _wraps(table) -> bool:
    """A column that wraps its text (a formula, a basis) takes the squeeze; the others keep their width."""
    return any(not c.no_wrap for c in table.columns)


def light_table(title: str | None = None, caption: str | None = None, **kw):
    """A table in the report's light style: no side borders, one rule under the header (more columns fit 80).
    On a terminal the rule is a box-drawing line; piped or written to a file it is plain '-', so a line's width
    in bytes is its width in columns (logs, grep, `cut -c`, byte-counting width checks)."""
    import sys

    from rich import box
    from rich.table import Table

    rule = box.SIMPLE_HEAD if sys.stdout.isatty() else _ascii_head()
    kw.setdefault("title_justify", "left")
    return Table(title=title, caption=caption, box=rule, pad_edge=False, show_edge=False, padding=(0, 1, 0, 0),
                 **kw)


def _ascii_head():
    from rich.box import Box

    return Box("    \n    \n -- \n    \n    \n    \n    \n    \n", ascii=True)   # rich's SIMPLE_HEAD, in ASCII


def room(con, columns: Sequence[Sequence[str]], reserve: int = 0, last: bool = False) -> int:
    """Width left for one more column of a light table, beside columns that do not wrap holding ``columns`` (each:
    header, then cells) and ``reserve`` characters kept for a last column that wraps. A light table spends two
    characters beside each column but the last (its right padding and the space between columns); ``last``: the
    column to size is the last one."""
    used = sum(max(map(len, c), default=0) + 2 for c in columns)
    return con.width - used - (0 if last else 2) - reserve
