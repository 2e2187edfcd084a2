"""hwprobe report / plot: stored results as tables and pictures."""

from __future__ import annotations

import json

import click

from hwprobe.cli import cli, console
from hwprobe.errors import InputError


@cli.command("report")
@click.argument("source", type=click.Path())
@click.option("--json", "as_json", is_flag=True)
def report_(source, as_json) -> None:
    """Print the tables again from a results directory or a profile.json."""
    from hwprobe import report
    from hwprobe.profile import load_profile

    prof = load_profile(source)
    if as_json:
        click.echo(json.dumps(prof.to_dict(), indent=2, default=str))
    else:
        report.render(prof, console())


@cli.command()
@click.argument("results_dir", type=click.Path(file_okay=False))
@click.option("--out", "-o", default=None, type=click.Path(dir_okay=False), help="PNG path (default: in the run dir).")
def plot(results_dir, out) -> None:
    """Draw the measured roofline of a run (roofs, slopes, theory and the intensity sweep) as a PNG."""
    from pathlib import Path

    from hwprobe import plot as plot_mod
    from hwprobe.profile import load_profile
    from hwprobe.results import MEASUREMENTS, read_measurements

    run_dir = Path(results_dir)
    prof = load_profile(run_dir)
    sweep = [m for m in read_measurements(run_dir) if m.kind == "sweep"] if (run_dir / MEASUREMENTS).exists() else []
    try:
        path = plot_mod.roofline(prof, sweep, Path(out) if out else run_dir / "roofline.png")
    except ValueError as e:
        raise InputError(str(e)) from None
    click.echo(str(path))


