"""hwprobe export: the measured ceilings in the shapes other analyzers read."""

from __future__ import annotations

import json
from pathlib import Path

import click

from hwprobe.cli import cli, console


@cli.command("export")
@click.argument("results", type=click.Path())
@click.option("--format", "-f", "fmt", required=True,
              type=click.Choice(["json", "csv", "llm-viewer", "llm-analysis", "ert"]), help="Output shape.")
@click.option("--out", "-o", default=None, type=click.Path(),
              help="File (or directory) to write; default: stdout.")
@click.option("--path", "path", default="library", show_default=True,
              type=click.Choice(["library", "instruction", "best"]),
              help="Which ceiling where a format holds one number per precision.")
@click.option("--name", default=None, help="Hardware name in the export (default: the device name + _measured).")
def export_(results, fmt, out, path, name) -> None:
    """Write RESULTS' measured ceilings (a results directory or profile.json) as FORMAT. Formats with no room
    for provenance (llm-analysis) get a sidecar <file>.hwprobe.json saying what each number is."""
    from hwprobe.errors import InputError
    from hwprobe.export import export
    from hwprobe.profile import load_profile

    e = export(load_profile(results), fmt, path=path, name=name, source=str(results))
    if out is None:
        click.echo(e.text, nl=not e.text.endswith("\n"))
        if e.sidecar:
            console(stderr=True).print(f"provenance ({fmt} has no room for it): "
                                       + json.dumps(e.sidecar["numbers"], default=str))
    else:
        p = Path(out)
        if p.is_dir():
            p = p / e.filename
        try:
            p.write_text(e.text)
            if e.sidecar:
                p.with_name(p.name + ".hwprobe.json").write_text(json.dumps(e.sidecar, indent=2, default=str) + "\n")
        except OSError as err:
            raise InputError(f"cannot write {str(p)!r}: {err.strerror or err}") from None
        console(stderr=True).print(f"wrote {p}" + (f" (+ {p.name}.hwprobe.json)" if e.sidecar else ""))
    for n in e.notes:
        console(stderr=True).print(f"note: {n}")
