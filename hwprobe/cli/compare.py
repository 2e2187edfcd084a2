"""hwprobe compare: a fleet of runs side by side, the weak units flagged with their likely cause."""

from __future__ import annotations

import json

import click

from hwprobe.cli import cli, console


@cli.command()
@click.argument("results", nargs=-1, required=True)
@click.option("--reference", default=None, metavar="RUN",
              help="Normalize to this run (a path, or the label of one of RESULTS) instead of the group median.")
@click.option("--group-by", default="device", type=click.Choice(["device", "mode", "none"]), show_default=True,
              help="Whose median a run is compared with (device: same device and power mode).")
@click.option("--min-gap", default="5%", show_default=True, help="An outlier is at least this far from the median.")
@click.option("--z", "z", default=3.5, show_default=True, type=float, help="Robust z-score (median/MAD) threshold.")
@click.option("--ceilings", default=None, metavar="PATTERNS",
              help="Comma-separated ceiling patterns, e.g. 'fp16.*,dram.bandwidth' (default: those most runs have).")
@click.option("--per-rank", is_flag=True,
              help="Take runs of several ranks (srun, mpirun) apart: one row per rank (host:rankN), so a slow node "
                   "stands out instead of hiding behind the merged profile's best rank.")
@click.option("--all", "show_all", is_flag=True, help="Print every run, however many.")
@click.option("--wide", "-w", is_flag=True, help="Every table column, whatever the terminal's width.")
@click.option("--json", "as_json", is_flag=True, help="Print the fleet as JSON.")
@click.option("--csv", "csv_path", default=None, type=click.Path(dir_okay=False), help="Write the table as CSV.")
@click.option("--plot", "plot_path", default=None, type=click.Path(dir_okay=False),
              help="Draw the fleet as a strip plot per ceiling (PNG).")
def compare(results, reference, group_by, min_gap, z, ceilings, per_rank, show_all, wide, as_json, csv_path,
            plot_path) -> None:
    """Compare RESULTS (run directories, profile.json files, globs; a directory without a profile.json is
    searched below, one with no run in or below it skipped and named on stderr, one with measurements.jsonl alone
    rebuilt as a partial run). Exit 0 when no run is an outlier, 1 when some are, 2 for bad input."""
    import sys
    from pathlib import Path

    from hwprobe.cli.outputs import PLOT_SUFFIXES, output_file
    from hwprobe.errors import InputError
    from hwprobe.fleet import compare as cmp
    from hwprobe.fleet import render
    from hwprobe.fleet.records import PROFILE, labels_for, load_many, load_run, profile_path
    from hwprobe.fleet.validate import parse_fraction

    csv_path = output_file(csv_path, "--csv") if csv_path else None           # before any work
    plot_path = output_file(plot_path, "--plot", PLOT_SUFFIXES) if plot_path else None
    skipped: list[Path] = []
    runs = load_many(list(results), skipped)
    for folder in skipped:             # the shell's glob and hwprobe's skip the same folders, and say so
        click.echo(f"skipped {folder}: no profile.json or measurements.jsonl in or below it", err=True)
    for r in runs:
        if r.rebuilt:
            click.echo(f"{r.label}: no profile.json; rebuilt from its measurements.jsonl (partial)", err=True)
    if per_rank:
        from hwprobe.fleet.acceptance import per_rank_records

        runs = per_rank_records(runs)
    ref = None
    if reference:
        ref = next((r for r in runs if r.label == reference), None)
        if ref is None:
            if not Path(reference).exists():
                raise InputError(f"--reference {reference!r} is neither a path nor the label of a run "
                                 f"(labels: {', '.join(r.label for r in runs[:5])}...)")
            paths = [Path(r.path) / PROFILE for r in runs] + [profile_path(Path(reference).resolve())]
            ref = load_run(reference, labels_for(paths)[-1])      # labelled as the runs are, not by its path
    patterns = [p.strip() for p in ceilings.split(",") if p.strip()] if ceilings else None
    fleet = cmp.compare(runs, ref, group_by=group_by, min_gap=parse_fraction(min_gap, "--min-gap"), z=z,
                        patterns=patterns)
    if csv_path:
        try:
            fleet.to_csv(csv_path)
        except OSError as e:
            raise InputError(f"--csv: cannot write {str(csv_path)!r}: {e.strerror or e}") from None
    if plot_path:
        from hwprobe.fleet.render import draw

        try:
            draw(fleet, plot_path)
        except OSError as e:
            raise InputError(f"--plot: cannot write {str(plot_path)!r}: {e.strerror or e}") from None
    if as_json:
        click.echo(json.dumps(fleet.to_dict(), indent=2, default=str))
    else:
        render.render_fleet(fleet, console(), show_all=show_all, wide=wide)
        for p in (csv_path, plot_path):
            if p:
                click.echo(f"wrote {p}")
    sys.exit(1 if fleet.outliers else 0)
