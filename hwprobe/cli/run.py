"""hwprobe run: measure a suite on a device."""

from __future__ import annotations

import json
import sys

import click

from hwprobe.cli import cli, console


@cli.command()
@click.option("--device", "-d", default=None, help="GPU index, or 'cpu'. Default: GPU 0, else the CPU.")
@click.option("--suite", "-s", default=None, help="Suite name (see 'hwprobe list suites') or a TOML file.")
@click.option("--out", "-o", default=None, type=click.Path(file_okay=False), help="Results root (default results/).")
@click.option("--precision", "-p", "precisions", default=None,
              help="Comma-separated precisions to keep (compute probes only), e.g. fp16,int8.")
@click.option("--quick", is_flag=True, help="Small sizes and few repeats: a smoke run, not ceilings.")
@click.option("--json", "as_json", is_flag=True, help="Print the profile as JSON on stdout.")
@click.option("--quiet", "-q", is_flag=True, help="No progress lines.")
def run(device, suite, out, precisions, quick, as_json, quiet) -> None:
    """Run a suite and leave a results directory with measurements and profile.json."""
    from hwprobe import api
    from hwprobe.units import pct, si

    err = console(stderr=True)
    precs = tuple(p.strip() for p in precisions.split(",") if p.strip()) if precisions else None

    def on_probe(name: str, i: int, n: int) -> None:
        if quiet:
            return
        if i == 0:  # printed once the results directory exists, so bad input stays a single line
            if notice:
                err.print(notice)
            err.print(f"{dev.label}  suite {s.name!r} ({n} probes)")
        err.print(f"[bold][{i + 1}/{n}] {name}[/bold]")

    def on_measurement(m) -> None:
        if quiet or m.kind == "sweep":
            return
        if m.kind == "info":
            err.print(f"    {m.metric}: {' '.join(m.notes)[:160] or '; '.join(m.flags)[:160]}")
            return
        extra = ""
        if m.theory and m.theory.at_clock:
            clk = f" @ {m.theory.clock_mhz:.0f} MHz" if m.theory.clock_mhz else ""
            extra = f"  ({pct(m.fraction_of_theory)} of {si(m.theory.at_clock, m.unit)}{clk})"
        flag = "" if m.valid else f"  [red]INVALID: {'; '.join(m.flags)}[/red]"
        err.print(f"    {m.metric}: {si(m.value, m.unit)}{extra}{flag}")

    dev, s, notice = api.plan(device, suite, precs)
    res = api.run(device, suite, out, precisions=precs, quick=quick,
                  on_measurement=on_measurement, on_probe=on_probe)
    if as_json:
        click.echo(json.dumps(res.profile.to_dict(), indent=2, default=str))
    elif not quiet:
        from hwprobe import report

        report.render(res.profile, console())
    secs = res.profile.environment.get("probe_seconds", {})
    if secs and not quiet:
        err.print("probe wall times: " + ", ".join(f"{k} {v:.1f} s" for k, v in secs.items())
                  + f"; total {sum(secs.values()):.1f} s")
    err.print(f"results: {res.results_dir}")
    if res.interrupted:
        err.print("interrupted: partial profile written with what was measured")
        sys.exit(130)
    if res.failed:
        err.print(f"probes that failed while measuring: {', '.join(res.failed)}")
        sys.exit(1)


