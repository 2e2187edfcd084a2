"""hwprobe report / plot: stored results as tables, a self-contained HTML or Markdown report, and plots.

Both take a results directory or a profile.json (its measurements.jsonl is read when it lies beside it)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from hwprobe.cli import cli, console
from hwprobe.errors import InputError


@cli.command("report")
@click.argument("source", type=click.Path())
@click.option("--html", "html_out", type=click.Path(dir_okay=False), default=None,
              help="Write a self-contained HTML report (plots inline, opens offline) to this file.")
@click.option("--md", "md_out", type=click.Path(dir_okay=False), default=None,
              help="Write a Markdown report to this file (plots as SVG in <name>_files/ beside it).")
@click.option("--wide", "-w", is_flag=True, help="All table columns, whatever the terminal's width.")
@click.option("--json", "as_json", is_flag=True, help="Print the profile as JSON.")
def report_(source, html_out, md_out, wide, as_json) -> None:
    """Show a run again: tables in the terminal, or an HTML/Markdown report with every plot."""
    import time

    from hwprobe import report

    if as_json and (html_out or md_out):
        raise InputError("--json prints the profile on stdout; it does not combine with --html or --md "
                         "(run the command twice)")
    if as_json:
        from hwprobe.profile_build import load_profile

        click.echo(json.dumps(load_profile(source).to_dict(), indent=2, default=str))
        return
    if not (html_out or md_out):
        from hwprobe.report.source import load_run
        from hwprobe.report.terminal import render

        run = load_run(source)
        render(run.profile, console(), wide=wide, kind=run.kind)
        return
    from hwprobe.cli.outputs import output_file

    html_out = output_file(html_out, "--html") if html_out else None
    md_out = output_file(md_out, "--md") if md_out else None
    err = console(stderr=True)
    t0 = time.perf_counter()
    try:
        paths = report.write(source, html_out, md_out)
    except OSError as e:
        raise InputError(f"cannot write the report to {str(e.filename)!r}: {e.strerror or e}") from None
    took = time.perf_counter() - t0
    for path in paths:
        err.print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB)")
    err.print(f"report written in {took:.1f} s")


@cli.command()
@click.argument("sources", nargs=-1, required=True, type=click.Path())
@click.option("--kind", "-k", "kinds", default="all", show_default=True,
              help="Comma-separated: roofline, bandwidth, latency, gemm, align, sparse, power, gap, or all.")
@click.option("--out", "-o", default=None, type=click.Path(),
              help="Folder for the files (default: plots/ in the run's directory); a .png or .svg file name "
                   "for one kind.")
@click.option("--format", "-f", "formats", default="png,svg", show_default=True, help="Comma-separated: png, svg.")
def plot(sources, kinds, out, formats) -> None:
    """Draw a run's curves as PNG and SVG files; with several runs (hwprobe plot A B) they are overlaid."""
    from hwprobe.report import plots
    from hwprobe.report.source import load_runs

    wanted = plots.KINDS if kinds.strip() == "all" else tuple(k.strip() for k in kinds.split(",") if k.strip())
    bad = [k for k in wanted if k not in plots.KINDS]
    if bad:
        raise InputError(f"unknown plot kind {', '.join(bad)}; kinds: {', '.join(plots.KINDS)}, all")
    fmts = tuple(f.strip().lower() for f in formats.split(",") if f.strip())
    if not fmts or any(f not in plots.FORMATS for f in fmts):
        raise InputError(f"--format takes png and/or svg, not {formats!r}")
    runs = load_runs(sources)
    out_dir, name_of = _destination(out, runs, wanted)
    if name_of:
        fmts = (Path(out).suffix.lstrip(".").lower(),)
    try:
        drawn = plots.draw(runs, out_dir, wanted, fmts, name_of)
    except OSError as e:
        raise InputError(f"cannot write plots to {str(out_dir)!r}: {e.strerror or e}") from None
    err = console(stderr=True)
    for kind, why in drawn.left_out.items():
        err.print(f"{kind}: not drawn: {why}", markup=False)
    if not drawn.files:
        raise InputError(f"nothing to draw: {'; '.join(drawn.left_out.values())}")
    for paths in drawn.files.values():
        for p in paths:
            click.echo(str(p))


def _destination(out, runs, kinds):
    """(folder, file-name function or None): -o FILE.png names one kind's file, -o DIR a folder."""
    from hwprobe.report.plots import KINDS

    if out and Path(out).suffix.lower() in (".png", ".svg"):
        if len(kinds) != 1:
            raise InputError(f"-o {out} names one file, for one plot: give one --kind (e.g. --kind roofline), or "
                             f"a folder for {'every kind (--kind all, the default)' if kinds == KINDS else 'several'}")
        return Path(out).parent, (lambda _kind: Path(out).stem)
    if out and Path(out).suffix and not Path(out).is_dir():
        raise InputError(f"-o {out}: a plot file ends in .png or .svg; a folder is named without a suffix "
                         "(or made first)")
    if out:
        return Path(out), None
    if len(runs) == 1:
        return runs[0].path / "plots", None
    return Path("plots-compare"), None
