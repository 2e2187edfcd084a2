"""The report as Markdown with the same content as the HTML: pipe tables, lists, and the plots as PNG files
in a folder beside it (``report.md`` -> ``report_files/roofline.svg``), linked relatively so the pair can be
committed or attached together (GitHub and most Markdown viewers show SVG images)."""

from __future__ import annotations

from pathlib import Path

from hwprobe.report import document as doc
from hwprobe.report import tables as tb
from hwprobe.report import text as tx
from hwprobe.report.source import Run, load_run


def render(run: Run, out: Path, svgs: dict | None = None) -> str:
    """The Markdown for ``run``; its plots are written as SVG files into ``<out stem>_files/``."""
    from hwprobe.report import plots

    files = out.parent / f"{out.stem}_files"
    drawn = svgs if svgs is not None else plots.svgs([run])

    def figure(kind: str) -> str:
        svg = drawn[kind]
        if isinstance(svg, plots.NoData):
            raise svg
        files.mkdir(parents=True, exist_ok=True)
        path = files / f"{kind}.svg"
        path.write_text(svg, encoding="utf-8")
        return path.relative_to(out.parent).as_posix()

    sections = doc.build(run, figure)
    lines = [f"# {run.device_name}", "", _subtitle(run), "",
             " · ".join(f"[{s.title}](#{_anchor(s.title)})" for s in sections), ""]
    for s in sections:
        lines += [f"## {s.title}", ""]
        for b in s.blocks:
            lines += _block(b) + [""]
    return "\n".join(lines).rstrip() + "\n"


def _subtitle(run: Run) -> str:
    return doc.subtitle(run, code=lambda s: f"`{s}`", strong=lambda s: f"**{s}**")


def _anchor(title: str) -> str:
    """GitHub's heading anchor: lower case, spaces to dashes, punctuation dropped."""
    return "".join(c for c in title.lower().replace(" ", "-") if c.isalnum() or c in "-_")


def _esc(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _block(b) -> list[str]:
    if isinstance(b, doc.Para):
        return [f"**{b.text}**" if b.warn else f"_{b.text}_" if b.muted else b.text]
    if isinstance(b, doc.KeyValues):
        return ["| | |", "|---|---|"] + [f"| {_esc(k)} | {_esc(v)} |" for k, v in b.rows]
    if isinstance(b, doc.TableBlock):
        return table(b.table)
    if isinstance(b, doc.Items):
        head = [f"### {b.title}", ""] if b.title else []
        if not b.items:
            return head + [f"_{b.empty}_"]
        return head + [f"- {_item(it)}" for it in b.items]
    if isinstance(b, doc.Figure):
        head = [f"### {b.title}", ""]
        if b.missing:
            return head + [f"_Not in this run: {b.missing}._"]
        return head + [f"![{b.title}]({b.render})", "", f"_{b.caption}_"]
    raise TypeError(f"unknown block {type(b).__name__}")


def _item(it: tx.Item) -> str:
    about = f"`{it.about}` " if it.about else ""
    count = f" ({it.count} measurements)" if it.count > 1 else ""
    return f"{about}{_esc(it.text)}{count}"


def table(t: tb.Table) -> list[str]:
    cols = t.visible(True)
    out = [f"### {t.title}", "", "| " + " | ".join(c.header for c in cols) + " |",
           "|" + "|".join("---:" if c.kind != "text" else "---" for c in cols) + "|"]
    out += ["| " + " | ".join(_esc(tb.fmt(c, r)) for c in cols) + " |" for r in t.rows]
    if t.note:
        out += ["", f"_{t.note}_"]
    return out


def write(source: str | Path | Run, out: str | Path, svgs: dict | None = None) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(source if isinstance(source, Run) else load_run(source), out, svgs), encoding="utf-8")
    return out
