"""hwprobe classify: which unit and precision a kernel name shows (Tensor Cores or CUDA cores)."""

from __future__ import annotations

import json
import sys

import click

from hwprobe.cli import cli, console

WHY = 20          # columns kept for the reason, which wraps at word boundaries


@cli.command("classify")
@click.argument("names", nargs=-1, required=True)
@click.option("--wide", "-w", is_flag=True, help="Whole kernel names, whatever the terminal's width.")
@click.option("--json", "as_json", is_flag=True)
def classify_(names, wide, as_json) -> None:
    """Map kernel NAMEs (cuBLAS, cuDNN, TensorRT, CUTLASS, the h884/i8816/scudnn names the source notes list...)
    to a unit and a precision, with how far the name can be trusted: documented, heuristic or unknown. '-' reads
    names from stdin, one per line."""
    from hwprobe.analysis.classify import SHORTENED, classify, short_name
    from hwprobe.report.fit import light_table, room, show

    if names == ("-",):
        names = tuple(x.strip() for x in sys.stdin if x.strip())
    out = [classify(n) for n in names]
    if as_json:
        click.echo(json.dumps([k.to_dict() for k in out], indent=2))
        return
    con = console()
    heads = ["unit", "prec", "acc", "confidence"]
    cells = [[k.unit, k.precision or "-", k.accumulator or "-", k.confidence] for k in out]
    longest = max(len(k.name) for k in out)
    width, dropped = longest, []
    while not wide:
        width = min(longest, max(room(con, [[h, *(c[i] for c in cells)] for i, h in enumerate(heads)], WHY), 16))
        if width == longest or "acc" not in heads:
            break
        i = heads.index("acc")     # the accumulator goes first: the names need the room more
        heads.pop(i)
        for c in cells:
            c.pop(i)
        dropped.append("accumulator")
    shown = [short_name(k.name, width) for k in out]
    t = light_table()
    t.add_column("kernel", no_wrap=True)
    for h in heads:
        t.add_column(h, no_wrap=True)
    t.add_column("why")
    for name, c, k in zip(shown, cells, out, strict=True):
        t.add_row(name, *c, k.why)
    show(con, t) if wide else con.print(t)
    if dropped:
        con.print(f"[dim]more columns ({', '.join(dropped)}): --wide[/dim]", highlight=False)
    if shown != [k.name for k in out]:
        con.print(f"[dim]{SHORTENED}[/dim]", highlight=False)
