"""hwprobe classify: which unit and precision a kernel name shows (Tensor Cores or CUDA cores)."""

from __future__ import annotations

import json
import sys

import click

from hwprobe.cli import cli, console


@cli.command("classify")
@click.argument("names", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True)
def classify_(names, as_json) -> None:
    """Map kernel NAMEs (cuBLAS, cuDNN, TensorRT, CUTLASS, the h884/i8816/scudnn names the source notes list...)
    to a unit and a precision, with how far the name can be trusted: documented, heuristic or unknown. '-' reads
    names from stdin, one per line."""
    from hwprobe.models.classify import classify

    if names == ("-",):
        names = tuple(x.strip() for x in sys.stdin if x.strip())
    out = [classify(n) for n in names]
    if as_json:
        click.echo(json.dumps([k.to_dict() for k in out], indent=2))
        return
    from hwprobe.report.fit import light_table

    t = light_table()
    for c in ("kernel", "unit", "precision", "accumulator", "confidence", "why"):
        t.add_column(c, overflow="fold")
    for k in out:
        t.add_row(k.name, k.unit, k.precision or "-", k.accumulator or "-", k.confidence, k.why)
    console().print(t)
