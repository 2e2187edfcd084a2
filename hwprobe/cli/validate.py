"""hwprobe validate: does this board, in this power mode, deliver what it should?"""

from __future__ import annotations

import json

import click

from hwprobe.cli import cli, console


@cli.command()
@click.argument("results", nargs=-1, required=True)
@click.option("--against", "ref", required=True, metavar="REF",
              help="A reference profile (results dir or profile.json), or a spec name (e.g. 'AGX Orin').")
@click.option("--expect", default=None, metavar="FRACTION",
              help="With a spec name: expect this fraction of theory for every ceiling (0.9 or 90%); default: "
                   "per kind of ceiling (see hwprobe/fleet/expect.py).")
@click.option("--tolerance", default=None, metavar="PCT|FILE",
              help="How far below the reference a ceiling may fall: 10% (default), 0.05, or a TOML file "
                   "(default = \"10%\", [ceilings] \"fp16.*\" = \"15%\"). Default: the reference's own "
                   "tolerance.toml where it has one, else 10%.")
@click.option("--require-all", is_flag=True, help="A reference ceiling the run did not measure fails.")
@click.option("--junit", "junit", default=None, type=click.Path(dir_okay=False), help="Write JUnit XML here.")
@click.option("--wide", "-w", is_flag=True, help="Every table column, whatever the terminal's width.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def validate(results, ref, expect, tolerance, require_all, junit, wide, as_json) -> None:
    """Check RESULTS (a run directory or profile.json) against a reference, ceiling by ceiling.

    Node acceptance: a run of several ranks (srun, mpirun), a run with health verdicts (the acceptance suite), or
    several RESULTS (run directories, globs; one per node from a prolog) are judged per node: each rank's ceilings
    and health verdicts, one pass/fail per node (docs/cluster-acceptance.md).

    Exit 0 when every ceiling (every node) passes, 1 when any fails, 2 for bad input."""
    import sys

    from hwprobe.cli.outputs import missing_folder, output_file, write_text, wrote
    from hwprobe.fleet import acceptance, render
    from hwprobe.fleet import validate as val
    from hwprobe.fleet.records import expand, load_run

    made = missing_folder(junit) if junit else None
    junit_path = output_file(junit, "--junit") if junit else None   # before anything prints
    paths = expand(list(results))
    expect_v = _expect(expect, val.parse_fraction) if expect is not None else None
    if acceptance.needs_nodes(paths):
        acc = acceptance.judge(list(results), ref, val.parse_tolerance(tolerance, ref), expect_v, require_all)
        if junit_path:
            write_text(junit_path, render.acceptance_junit(acc), "--junit")
        if as_json:
            click.echo(json.dumps(acc.to_dict(), indent=2, default=str))
        else:
            render.render_acceptance(acc, console(), wide)
        sys.exit(acc.exit_code)
    run = load_run(paths[0], strict=True)
    reference = val.load_reference(ref, run, expect_v)
    result = val.validate(run, reference, val.parse_tolerance(tolerance, ref), require_all=require_all)
    if junit_path:
        write_text(junit_path, render.junit_xml(result), "--junit")
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2, default=str))
    else:
        render.render_validation(result, console(), wide)
    if junit_path:                      # stderr: --json keeps stdout for the JSON alone
        click.echo(wrote(junit_path, made), err=True)
    sys.exit(result.exit_code)


def _expect(text: str, parse_fraction) -> float:
    """--expect: a fraction of theory above 0 (0 would expect nothing and divide by it)."""
    from hwprobe.errors import InputError

    v = parse_fraction(text, "--expect")
    if v <= 0:
        raise InputError(f"--expect {text!r} must be above 0: the fraction of theory a ceiling should reach (e.g. 0.9)")
    return v
