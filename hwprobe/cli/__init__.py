"""The command line: a thin layer over hwprobe.api, one module per command (see COMMANDS).

Exit codes: 0 ok, 1 a probe failed, 2 bad input, 130 interrupted."""

from __future__ import annotations

import os
import signal
import sys

# Started as the `hwprobe` command: remember a Ctrl-C or SIGTERM from the first instruction on (while the
# command's modules import), so that none is lost before main() installs its guard.
EARLY_SIGNALS: list[int] = []
if os.path.basename(sys.argv[0]) in ("hwprobe", "__main__.py"):
    signal.signal(signal.SIGINT, lambda signum, frame: EARLY_SIGNALS.append(signum))
    signal.signal(signal.SIGTERM, lambda signum, frame: EARLY_SIGNALS.append(signum))

import importlib  # noqa: E402

import click  # noqa: E402

from hwprobe.errors import InputError  # noqa: E402


def console(stderr: bool = False):
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    # Piped output (logs, CI) gets a wide fixed width so tables are not squeezed to 80 columns.
    return Console(stderr=stderr, highlight=False, width=None if stream.isatty() else 180)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="hwprobe")
def cli() -> None:
    """Measure what the hardware really delivers, beside its datasheet."""


def main(argv: list[str] | None = None) -> None:
    """Entry point: every input error is one line on stderr and exit code 2, never a traceback. Ctrl-C and
    SIGTERM are guarded from here to the last instruction: any of them, wherever it lands, exits 130."""
    from hwprobe.interrupt import guarded

    with guarded(immediate=True) as guard:
        if EARLY_SIGNALS:
            guard.seen = True
        try:
            guard.check()
        except KeyboardInterrupt:
            click.echo("hwprobe: interrupted", err=True)
            sys.exit(130)
        _main(argv)
        if guard.seen:       # a signal whose KeyboardInterrupt Python dropped, or one after the run's end
            click.echo("hwprobe: interrupted", err=True)
            sys.exit(130)


def _main(argv: list[str] | None) -> None:
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


# Each command lives in its own module and registers itself on ``cli`` when imported.
COMMANDS = ("run", "inspect", "show", "validate", "compare", "analyze", "classify", "export")
for _name in COMMANDS:
    importlib.import_module(f"hwprobe.cli.{_name}")
