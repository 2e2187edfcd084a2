"""hwprobe run: measure a suite on a device."""

from __future__ import annotations

import json
import sys

import click

from hwprobe.cli import cli, console
from hwprobe.errors import ResultsWriteError


@cli.command()
@click.option("--device", "-d", default=None,
              help="GPU index, several as 0,1 or 'all' (interconnect probes), or 'cpu'. Default: GPU 0, else the CPU.")
@click.option("--suite", "-s", default=None, help="Suite name (see 'hwprobe list suites') or a TOML file.")
@click.option("--out", "-o", default=None, type=click.Path(file_okay=False), help="Results root (default results/).")
@click.option("--precision", "-p", "precisions", default=None,
              help="Comma-separated precisions to keep (compute probes only), e.g. fp16,int8.")
@click.option("--quick", is_flag=True, help="Small sizes and few repeats: a smoke run, not ceilings.")
@click.option("--json", "as_json", is_flag=True, help="Print the profile as JSON on stdout.")
@click.option("--rounds", "-r", type=int, default=None,
              help="Run the suite's probes this many times, interleaved: each ceiling's spread and stability "
                   "(default: the suite's own).")
@click.option("--quiet", "-q", is_flag=True, help="No progress lines.")
@click.option("--verbose", "-v", is_flag=True, help="Also print what each probe is doing (its log).")
@click.option("--resume", default=None, type=click.Path(file_okay=False),
              help="A results directory whose run did not finish: measure only what it is missing, into it.")
def run(device, suite, out, precisions, quick, as_json, rounds, quiet, verbose, resume) -> None:
    """Run a suite and leave a results directory with measurements and profile.json."""
    from hwprobe.interrupt import guarded

    # Signals only set a flag from here on (checked between steps and samples): a KeyboardInterrupt raised
    # inside a JIT compile's C callback would be dropped, and the signal with it.
    with guarded(immediate=False) as guard:
        res = _measure(device, suite, out, precisions, quick, as_json, rounds, quiet, verbose, resume, guard)
        _summary(res, as_json, quiet)
        if res.interrupted or guard.seen:
            console(stderr=True).print("interrupted: partial profile written with what was measured")
            sys.exit(130)
        if res.failed:
            console(stderr=True).print(f"probes that failed while measuring: {', '.join(res.failed)}")
            sys.exit(1)


def _measure(device, suite, out, precisions, quick, as_json, rounds, quiet, verbose, resume, guard):
    from hwprobe import api
    from hwprobe.report.progress import RunProgress

    err = console(stderr=True)
    precs = tuple(p.strip() for p in precisions.split(",") if p.strip()) if precisions else None
    plan = api.resume_plan(resume) if resume else api.plan(device, suite, precs, rounds)
    guard.check()                     # a Ctrl-C before any measurement stops here, at once
    progress = RunProgress(err, plan, quiet=quiet, summary_follows=not as_json)
    try:
        with progress:
            return api.run(plan, out=out, quick=quick, on_measurement=progress.on_measurement,
                           on_probe=progress.on_probe, log=progress.log if verbose and not quiet else None,
                           resume=resume)
    except ResultsWriteError as e:    # the disk filled up or went read-only: the figures go to stdout
        click.echo(json.dumps([m.to_dict() for m in e.measurements], default=str))
        raise


def _summary(res, as_json: bool, quiet: bool) -> None:
    err = console(stderr=True)
    for warning in sharing_warnings(res.profile.environment):
        err.print(f"[yellow]warning: {warning}[/yellow]")
    if as_json:
        click.echo(json.dumps(res.profile.to_dict(), indent=2, default=str))
    elif not quiet:
        from hwprobe import report

        report.render(res.profile, console())        # its last table: each probe's wall time, slowest first
    from hwprobe.report.text import budget_note

    over = budget_note(res.profile.environment)
    if over:
        err.print(f"[yellow]note: this run {over}[/yellow]")
    err.print(f"results: {res.results_dir}")


def sharing_warnings(env: dict) -> list[str]:
    """Other processes on the GPU when the run began, and figures that look contended: the figures may be skewed."""
    out = []
    for idx, info in (env.get("gpu_sharing") or {}).items():
        procs = (info or {}).get("processes") or []
        if (info or {}).get("warning"):
            out.append(f"GPU {idx}: {info['warning']}")
        elif procs:
            names = ", ".join(f"{p.get('name') or p.get('pid')} ({(p.get('used_memory_bytes') or 0) / 2**30:.1f} GiB)"
                              for p in procs[:4])
            out.append(f"GPU {idx} was in use by {len(procs)} other process(es) when the run began: {names}; "
                       "the figures may be skewed")
    if env.get("contended"):
        out.append(f"{len(env['contended'])} figure(s) look contended (far below theory, or split samples): "
                   f"{', '.join(env['contended'][:5])}; do not use this run as a reference")
    return out

