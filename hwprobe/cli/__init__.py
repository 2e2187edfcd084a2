"""The command line: a thin layer over hwprobe.api, one module per command (see COMMANDS).

Exit codes: 0 ok, 1 a probe failed, 2 bad input, 130 interrupted."""

from __future__ import annotations

import os
import signal
import sys

# Started as the `hwprobe` command: record a Ctrl-C or SIGTERM from the first instruction on (while the command's
# modules import) to the last (after main's guard is gone), so that none is lost and any of them exits 130.
EARLY_SIGNALS: list[int] = []
AS_COMMAND = os.path.basename(sys.argv[0]) == "hwprobe" or sys.argv[0].endswith(os.path.join("hwprobe", "__main__.py"))
if AS_COMMAND:
    signal.signal(signal.SIGINT, lambda signum, frame: EARLY_SIGNALS.append(signum))
    signal.signal(signal.SIGTERM, lambda signum, frame: EARLY_SIGNALS.append(signum))

import importlib  # noqa: E402

import click  # noqa: E402

from hwprobe.errors import InputError  # noqa: E402


def console(stderr: bool = False):
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, highlight=False, width=None if stream.isatty() else piped_width())


def piped_width() -> int:
    """Width for output that goes to a file or a pipe: $COLUMNS where set (COLUMNS=80 hwprobe report ... | less),
    else a wide fixed width, so logs and CI keep every column."""
    try:
        cols = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        cols = 0
    return cols if cols >= 40 else PIPED_WIDTH


PIPED_WIDTH = 180


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="hwprobe")
def cli() -> None:
    """Measure what the hardware really delivers, beside its datasheet."""


def main(argv: list[str] | None = None) -> None:
    """Entry point: every input error is one line on stderr and exit code 2, never a traceback. Ctrl-C and
    SIGTERM are guarded from here to the last instruction: any of them, wherever it lands, exits 130. As the
    command, the process ends with os._exit right after the last check, so no signal can land in the
    interpreter's own shutdown (where Python would die of it instead)."""
    from hwprobe.interrupt import guarded

    before = len(EARLY_SIGNALS)
    code: int = 0
    try:
        with guarded(immediate=True) as guard:
            if before:
                guard.seen = True
            guard.check()
            _main(argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except KeyboardInterrupt:
        click.echo("hwprobe: interrupted", err=True)
        code = 130
    except Exception:       # a bug: its traceback, then the same exit path (MPI ended, no rank left waiting)
        if not AS_COMMAND:
            raise
        import traceback

        traceback.print_exc()
        code = 1
    if (guard.seen or len(EARLY_SIGNALS) > before) and code != 130:
        click.echo("hwprobe: interrupted", err=True)
        code = 130
    if AS_COMMAND:
        sys.stdout.flush()
        sys.stderr.flush()
        _end_mpi(code)
        os._exit(code)
    sys.exit(code)


def _end_mpi(code: int) -> None:
    """MPI_Finalize (or MPI_Abort) before os._exit, where this process started MPI: a rank that ends without it
    fails the launcher's job. Signals still only set a flag here (the early handlers are in place)."""
    if "mpi4py.MPI" in sys.modules:
        from hwprobe.distributed import shutdown

        shutdown(code)


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
