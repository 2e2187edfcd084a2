"""The command line: a thin layer over hwprobe.api. Exit codes: 0 ok, 1 a probe failed, 2 bad input."""

from __future__ import annotations

import json
import sys

import click

from hwprobe.errors import InputError


def _console(stderr: bool = False):
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    # Piped output (logs, CI) gets a wide fixed width so tables are not squeezed to 80 columns.
    return Console(stderr=stderr, highlight=False, width=None if stream.isatty() else 180)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="hwprobe")
def cli() -> None:
    """Measure what the hardware really delivers, beside its datasheet."""


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

    err = _console(stderr=True)
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

        report.render(res.profile, _console())
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


@cli.command("list")
@click.argument("what", type=click.Choice(["devices", "probes", "suites"]))
def list_(what) -> None:
    """List devices, probes or suites."""
    con = _console()
    if what == "devices":
        from hwprobe import device

        for g in device.gpus():
            con.print(f"{g.index}: {g.name}  {g.arch}  {g.sms} SMs  {g.mem_bytes / 1e9:.0f} GB")
        con.print(f"cpu: {device.cpu_info().label}")
    elif what == "probes":
        from hwprobe import probes

        for p in probes.registry().values():
            precs = f" [{', '.join(p.precisions)}]" if p.precisions else ""
            con.print(f"{p.name:20s} {p.target:3s} {p.family:12s} {p.summary}{precs}")
    else:
        from hwprobe import suites

        for name, path in suites.available().items():
            s = suites.load(str(path))
            con.print(f"{name:10s} {s.target:3s} {len(s.entries):2d} probes  {s.description}")


@cli.command()
@click.argument("name", required=False)
@click.option("--device", "-d", default=None, help="Device to describe when no NAME is given.")
@click.option("--json", "as_json", is_flag=True)
def specs(name, device, as_json) -> None:
    """Theoretical peaks, bandwidth and ridge points: for a named SKU, or for the detected device."""
    from hwprobe import specs as sp

    if name:
        theory = sp.sku_theory(sp.find(name))
    else:
        from hwprobe.device import select

        theory = sp.device_theory(select(device))
    if as_json:
        click.echo(json.dumps({"device": theory.label, "compute": theory.table(), "memory": theory.memory_table(),
                               "disagreements": theory.disagreements()}, indent=2, default=str))
    else:
        click.echo(theory.render())


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
        report.render(prof, _console())


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


def main(argv: list[str] | None = None) -> None:
    """Entry point: every input error is one line on stderr and exit code 2, never a traceback."""
    try:
        cli.main(args=argv, prog_name="hwprobe", standalone_mode=False)
    except InputError as e:
        click.echo(f"hwprobe: error: {e}", err=True)
        sys.exit(2)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.ClickException as e:
        click.echo(f"hwprobe: error: {e.format_message()}", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("hwprobe: aborted", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        click.echo("hwprobe: interrupted", err=True)
        sys.exit(130)


if __name__ == "__main__":
    main()
