"""Reports of a profile: terminal tables (terminal.py), a self-contained HTML page (html.py) and Markdown
(markdown.py) built from one document (document.py), plots (plots/), the live run progress (progress.py)
and the datasheet model's table (specs.py).

Importing this package stays light: rich and matplotlib load inside the functions that draw.
"""

from __future__ import annotations

from pathlib import Path

from hwprobe.profile import Profile


def render(p: Profile, console=None, wide: bool | None = None) -> None:
    """Print a profile's tables and sections to a rich console (see terminal.render)."""
    from hwprobe.report.terminal import render as _render

    _render(p, console, wide=wide)


def write(source: str | Path, html: str | Path | None = None, md: str | Path | None = None) -> list[Path]:
    """Write the HTML and/or Markdown report of one run, loading it and drawing its plots once."""
    from hwprobe.report import html as html_mod
    from hwprobe.report import markdown as md_mod
    from hwprobe.report import plots
    from hwprobe.report.source import load_run

    run = load_run(source)
    drawn = plots.svgs([run])
    out = []
    for target, mod in ((html, html_mod), (md, md_mod)):
        if target:
            try:
                out.append(mod.write(run, target, drawn))
            except OSError as e:       # a write() that fails (a full disk) names no file: name the report's
                if e.filename is None:
                    e.filename = str(target)
                raise
    return out


def write_html(source: str | Path, out: str | Path) -> Path:
    """Write the self-contained HTML report of a results directory or profile.json to ``out``."""
    from hwprobe.report.html import write

    return write(source, out)


def write_markdown(source: str | Path, out: str | Path) -> Path:
    """Write the Markdown report (plots as SVG files beside it) to ``out``."""
    from hwprobe.report.markdown import write

    return write(source, out)


__all__ = ["render", "write", "write_html", "write_markdown"]
