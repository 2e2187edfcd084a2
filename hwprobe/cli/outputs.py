"""Output paths checked before any work is done: a bad suffix or a folder that cannot be made is one line and
exit 2 up front, never a traceback after the table has printed (and the file lost)."""

from __future__ import annotations

from pathlib import Path

from hwprobe.errors import InputError

PLOT_SUFFIXES = (".png", ".svg", ".pdf")


def output_file(path: str | Path, option: str, suffixes: tuple[str, ...] | None = None) -> Path:
    """``path`` as a file to write: its suffix one of ``suffixes`` (when given), not a folder, and its folder made
    if missing (as pytest does for --junitxml). Raises InputError otherwise."""
    p = Path(path)
    if suffixes and p.suffix.lower() not in suffixes:
        raise InputError(f"{option} {str(p)!r}: the file name must end in {_either(suffixes)}")
    if p.is_dir():
        raise InputError(f"{option} {str(p)!r} is a folder: give a file name")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"{option} {str(p)!r}: cannot make its folder: {e.strerror or e}") from None
    if not p.parent.is_dir():
        raise InputError(f"{option} {str(p)!r}: {str(p.parent)!r} is not a folder")
    return p


def missing_folder(path: str | Path) -> Path | None:
    """The outermost folder above ``path`` that does not exist yet (output_file will make it), or None: a command
    that makes one says so beside the file it wrote."""
    top = None
    for parent in Path(path).parents:
        if parent.exists():
            break
        top = parent
    return top


def wrote(path: Path, made: Path | None = None) -> str:
    """The line that names a file written, and the folder made for it."""
    return f"wrote {path}" + (f" (made the folder {made})" if made else "")


def write_text(path: Path, text: str, option: str) -> None:
    """Write ``text``; a disk or permission failure is one line."""
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as e:
        raise InputError(f"{option}: cannot write {str(path)!r}: {e.strerror or e}") from None


def show(as_json: bool, doc, draw, written=()) -> None:
    """An analysis as JSON on stdout (``doc()``), or drawn on the terminal (``draw()``) followed by one line per
    file written: the one ending of every analyze path."""
    import json

    import click

    from hwprobe.cli import console

    if as_json:
        click.echo(json.dumps(doc(), indent=2, default=str))
        return
    draw()
    for p in written:
        if p:
            console().print(f"wrote {p}")


def _either(words: tuple[str, ...]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"
