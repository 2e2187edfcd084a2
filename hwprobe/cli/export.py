"""hwprobe export: the measured ceilings in the shapes other analyzers read."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from hwprobe import vocab
from hwprobe.cli import cli, console
from hwprobe.export import formats


def _overrides(items) -> dict[str, float]:
    from hwprobe.errors import InputError

    out = {}
    for it in items:
        k, sep, v = it.partition("=")
        try:
            out[k.strip()] = float(v)
        except ValueError:
            raise InputError(f"--set {it!r}: expected KEY=NUMBER (e.g. intra_node_min_message_latency=8e-6)") from None
        if not sep or not k.strip():
            raise InputError(f"--set {it!r}: expected KEY=NUMBER")
    return out


def _target(out: str, filename: str) -> Path:
    """``-o DIR/`` (a trailing slash or an existing directory) writes DIR/<the format's file name>."""
    p = Path(out)
    if out.endswith(("/", os.sep)) or p.is_dir():
        p.mkdir(parents=True, exist_ok=True)
        return p / filename
    return p


@cli.command("export")
@click.argument("results", type=click.Path())
@click.option("--format", "-f", "fmt", required=True, type=click.Choice(list(formats())),
              help="Output shape: " + "; ".join(f"{f.name}: {f.help}" for f in formats().values()) + ".")
@click.option("--out", "-o", default=None, type=click.Path(),
              help="File, or directory (DIR/ or an existing one) to write into; default: stdout.")
@click.option("--path", "path", default=vocab.Path.LIBRARY.value, show_default=True,
              type=click.Choice([vocab.Path.LIBRARY.value, vocab.Path.INSTRUCTION.value, "best"]),
              help="Which ceiling where a format holds one number per precision.")
@click.option("--name", default=None, help="Hardware name in the export (default: the device name + _measured).")
@click.option("--set", "sets", multiple=True, metavar="KEY=NUMBER",
              help=", ".join(f.name for f in formats().values() if f.takes_set)
              + ": a field's value (a finite number above 0), recorded as user-given; "
                   "where it replaces the profile's figure, stderr and the provenance say so.")
@click.option("--provenance", default=None, type=click.Path(dir_okay=False),
              help="Write what each number is (metric, probe, clock) to this JSON file, never beside the export.")
def export_(results, fmt, out, path, name, sets, provenance) -> None:
    """Write RESULTS' measured ceilings (a results directory or profile.json) as FORMAT. Only the consumer's file
    is written where it looks (llm-analysis reads every JSON in its gpu_configs folder); the provenance of
    formats with no room for it goes to stderr, or to --provenance FILE."""
    from hwprobe.errors import InputError
    from hwprobe.export import export
    from hwprobe.profile_build import load_profile

    e = export(load_profile(results), fmt, path=path, name=name, source=str(results), overrides=_overrides(sets))
    err = console(stderr=True)
    try:
        if out is None:
            click.echo(e.text, nl=not e.text.endswith("\n"))
        else:
            p = _target(out, e.filename)
            p.write_text(e.text)
            err.print(f"wrote {p}")
        if e.sidecar and provenance:
            Path(provenance).write_text(json.dumps(e.sidecar, indent=2, default=str) + "\n")
            err.print(f"wrote {provenance} (provenance)")
        elif e.sidecar and fmt == "llm-analysis":         # llm-viewer's entry carries it in comments
            err.print(f"provenance ({fmt} has no room for it; --provenance FILE keeps it): "
                      + json.dumps(e.sidecar["numbers"], default=str))
    except OSError as x:
        raise InputError(f"cannot write {x.filename or out!r}: {x.strerror or x}") from None
    for n in e.notes:
        err.print(f"note: {n}")
