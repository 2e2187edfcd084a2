"""hwprobe list / specs: what is here, and the datasheet model."""

from __future__ import annotations

import json

import click

from hwprobe.cli import cli, console


@cli.command("list")
@click.argument("what", type=click.Choice(["devices", "probes", "suites", "models"]))
def list_(what) -> None:
    """List devices, probes, suites or built-in models (for hwprobe analyze)."""
    con = console()
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
    elif what == "models":
        from hwprobe.analysis import llm
        from hwprobe.models import zoo
        from hwprobe.report.fit import light_table

        for title, rows, work in (("CNNs: layer tables built from their papers (hwprobe analyze NAME)", zoo.listing(),
                                   "conv/FC work (224x224)"),
                                  ("LLMs: published config.json fields, no weights (hwprobe analyze NAME)",
                                   llm.listing(), "layers")):
            t = light_table(title)
            t.add_column("name", no_wrap=True)
            t.add_column("params", justify="right", no_wrap=True)
            t.add_column(work)
            t.add_column("from")
            for r in rows:
                t.add_row(*r)
            con.print(t)
    else:
        from hwprobe import suites

        for name, path in suites.available().items():
            s = suites.load(str(path))
            con.print(f"{name:10s} {s.target:3s} {len(s.entries):2d} probes  {s.description}")


@cli.command()
@click.argument("name", required=False)
@click.option("--device", "-d", default=None, help="Device to describe when no NAME is given.")
@click.option("--json", "as_json", is_flag=True)
@click.option("--wide", "-w", is_flag=True, help="Every column and whole lines, whatever the terminal's width.")
def specs(name, device, as_json, wide) -> None:
    """Theoretical peaks, bandwidth and ridge points: for a named SKU, or for the detected device."""
    from hwprobe import specs as sp

    if name:
        theory = sp.sku_theory(sp.find(name))
    else:
        from hwprobe.device import select
        from hwprobe.specs.live import device_theory

        theory = device_theory(select(device))
    if as_json:
        click.echo(json.dumps({"device": theory.label, "compute": theory.table(), "memory": theory.memory_table(),
                               "disagreements": theory.disagreements()}, indent=2, default=str))
    else:
        from hwprobe.report.specs import render

        render(theory, console(), wide=wide)


