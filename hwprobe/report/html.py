"""The report as one self-contained HTML file: inline CSS, plots as inline SVG, no script and no network, so
it opens offline in any browser and travels as a single attachment."""

from __future__ import annotations

import html
import time
from pathlib import Path

from hwprobe.report import document as doc
from hwprobe.report import tables as tb
from hwprobe.report import text as tx
from hwprobe.report.source import Run, load_run

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d1d1f;margin:0;background:#fafafa}
main{max-width:1560px;margin:0 auto;padding:18px 28px 60px;background:#fff}
h1{font-size:24px;margin:6px 0 2px}h2{font-size:19px;margin:34px 0 8px;padding-top:8px;border-top:2px solid #e5e5e5}
h3{font-size:15px;margin:18px 0 6px}.sub{color:#555;margin:0 0 10px}
nav{position:sticky;top:0;background:#fff;border-bottom:1px solid #ddd;padding:6px 0;z-index:2;font-size:13px}
nav a{margin-right:14px;color:#0b57d0;text-decoration:none}nav a:hover{text-decoration:underline}
table{border-collapse:collapse;margin:6px 0 4px;font-size:12px;font-variant-numeric:tabular-nums}
th,td{padding:3px 5px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
th{background:#f3f4f6;font-weight:600;vertical-align:bottom}td.num,th.num{text-align:right}td.num{white-space:nowrap}
td.wrap{min-width:9em}
tbody tr:nth-child(even){background:#fbfbfc}.scroll{overflow-x:auto}
table.kv td:first-child{color:#555;padding-right:18px}table.kv td{white-space:normal}
.note{color:#666;font-size:12.5px;margin:0 0 14px}.muted{color:#777}
figure{margin:10px 0 22px}figure svg{max-width:100%;height:auto;display:block}
figcaption{color:#555;font-size:12.5px;margin-top:2px}
ul.items{padding-left:20px;margin:4px 0 12px}ul.items li{margin:3px 0}
.about{font:11.5px ui-monospace,SFMono-Regular,Menlo,monospace;color:#666;background:#f3f4f6;padding:0 4px;
border-radius:3px;margin-right:6px}.missing{color:#8a5a00;background:#fff8e6;padding:6px 10px;border-radius:4px}
.partial{color:#b00020;font-weight:600}
"""


def render(run: Run, svgs: dict | None = None) -> str:
    """The whole page for one run (``svgs``: the plots already drawn, see plots.svgs)."""
    from hwprobe.report import plots

    drawn = svgs if svgs is not None else plots.svgs([run])

    def figure(kind: str) -> str:
        svg = drawn[kind]
        if isinstance(svg, plots.NoData):
            raise svg
        return svg

    sections = doc.build(run, figure)
    e = html.escape
    title = f"hwprobe report: {run.device_name}"
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{e(title)}</title><style>{CSS}</style></head><body><main>",
             f"<h1>{e(run.device_name)}</h1>",
             f'<p class="sub">{e(_subtitle(run))}</p>',
             "<nav>" + "".join(f'<a href="#{s.id}">{e(s.title)}</a>' for s in sections) + "</nav>"]
    for s in sections:
        parts.append(f'<section id="{s.id}"><h2>{e(s.title)}</h2>')
        parts += [_block(b) for b in s.blocks]
        parts.append("</section>")
    parts.append(f'<p class="note">Written by hwprobe {e(run.profile.hwprobe_version or "")} on '
                 f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} from {e(str(run.path))}.</p>")
    parts.append("</main></body></html>")
    return "\n".join(parts)


def _subtitle(run: Run) -> str:
    return doc.subtitle(run, code=repr, strong=str)


def _block(b) -> str:
    e = html.escape
    if isinstance(b, doc.Para):
        return f'<p class="{"partial" if b.warn else "muted" if b.muted else ""}">{e(b.text)}</p>'
    if isinstance(b, doc.KeyValues):
        rows = "".join(f"<tr><td>{e(k)}</td><td>{e(v)}</td></tr>" for k, v in b.rows)
        return f'<table class="kv"><tbody>{rows}</tbody></table>'
    if isinstance(b, doc.TableBlock):
        return table(b.table)
    if isinstance(b, doc.Items):
        head = f"<h3>{e(b.title)}</h3>" if b.title else ""
        if not b.items:
            return f'{head}<p class="muted">{e(b.empty)}</p>'
        return f'{head}<ul class="items">{"".join(_item(it) for it in b.items)}</ul>'
    if isinstance(b, doc.Figure):
        head = f'<h3 id="plot-{b.kind}">{e(b.title)}</h3>'
        if b.missing:
            return f'{head}<p class="missing">Not in this run: {e(b.missing)}.</p>'
        return f'{head}<figure data-kind="{b.kind}">{b.render}<figcaption>{e(b.caption)}</figcaption></figure>'
    raise TypeError(f"unknown block {type(b).__name__}")


def _item(it: tx.Item) -> str:
    e = html.escape
    about = f'<span class="about">{e(it.about)}</span>' if it.about else ""
    count = f' <span class="muted">({it.count} measurements)</span>' if it.count > 1 else ""
    return f"<li>{about}{e(it.text)}{count}</li>"


def table(t: tb.Table) -> str:
    """Every column that has a value on some row. The rates of a row share one unit column (as in the terminal)
    and headers wrap, so the compute table's 20 columns fit a 1400-pixel window."""
    e = html.escape
    order, rows = tb.unit_layout(t.visible(True), t.rows)
    head = "".join("<th>unit</th>" if c is None else
                   f'<th class="{"num" if c.kind != "text" else ""}">{e(c.header)}</th>' for c in order)
    body = ""
    for cells in rows:
        body += "<tr>" + "".join(
            f"<td>{e(text)}</td>" if c is None else
            f'<td class="{"num" if c.kind != "text" else ("wrap" if c.wide else "")}">{e(text)}</td>'
            for c, text in zip(order, cells, strict=True)) + "</tr>"
    note = f'<p class="note">{e(t.note)}</p>' if t.note else ""
    return (f'<h3>{e(t.title)}</h3><div class="scroll"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>{note}")


def write(source: str | Path | Run, out: str | Path, svgs: dict | None = None) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(source if isinstance(source, Run) else load_run(source), svgs), encoding="utf-8")
    return out
