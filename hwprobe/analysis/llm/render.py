"""An LLMAnalysis as terminal text (rich): the summary, memory, and per phase the parts and the per-op table."""

from __future__ import annotations

from hwprobe.analysis.llm import LLMAnalysis
from hwprobe.analysis.llm.report import PARTS, PhaseResult
from hwprobe.analysis.render import _pct, _t, eng

GiB = 1024 ** 3


def _gib(x) -> str:
    return "-" if x is None else f"{x / GiB:.3g} GiB"


def header(a: LLMAnalysis) -> list[str]:
    c, o, p = a.cfg, a.opts, a.params
    moe = (f", {c.experts} experts ({c.experts_per_tok} active), {p.active / 1e9:.3g} B active per token"
           if c.experts else "")
    lines = [f"[bold]{c.name}[/bold]  ({c.source}; {c.family}, {c.layers} layers, hidden {c.hidden}, "
             f"{c.heads} heads / {c.kv_heads} KV heads x {c.head_dim}, {p.total / 1e9:.4g} B parameters{moe})",
             f"weights {o.weights}, KV cache {o.kv}, batch {o.batch}, tensor parallel {o.tp}, runtime {o.runtime}; "
             + (f"device {a.device} ({a.profile or 'profile'})" if a.device else "no profile: counts only")]
    lines.append(f"KV cache: {eng(a.kv_bytes_per_token, 'B')} per token"
                 + (" per rank" if o.tp > 1 else ""))
    for ph, f in a.fits.items():
        verdict = {True: "fits", False: "[red]does NOT fit[/red]", None: "fit unknown"}[f.fits]
        lines.append(f"memory ({ph}, per rank): weights {_gib(f.weights_bytes)} + KV cache {_gib(f.kv_cache_bytes)}"
                     f" + activations ~{_gib(f.activation_bytes)} = {_gib(f.total_bytes)} of "
                     f"{_gib(f.device_bytes)}: {verdict}")
    return lines + [f"  {n}" for n in a.notes]


def summary(a: LLMAnalysis) -> list[str]:
    out = []
    pre, dec = a.phases.get("prefill"), a.phases.get("decode")
    if pre and pre.time_s is not None:
        out.append(f"[bold]time to first token[/bold] (prefill {pre.tokens} tokens x batch {pre.batch}): "
                   f"{_t(pre.time_s)}  ({eng(pre.tokens_per_s)} prompt tokens/s; roofline bound "
                   f"{_t(pre.roofline_s)})")
    if dec and dec.time_s is not None:
        out.append(f"[bold]time per output token[/bold] (decode at context {dec.context} x batch {dec.batch}): "
                   f"{_t(dec.time_s)}  ({eng(dec.tokens_per_s)} tokens/s; roofline bound {_t(dec.roofline_s)})")
    for r in (pre, dec):
        if r and r.missing:
            out.append(f"[yellow]{r.phase}: communication missing[/yellow] (left out of the time above): "
                       + "; ".join(r.missing))
        if r and r.power_note:
            out.append(f"{r.phase}: {r.power_note}")
        if r and r.host_note:
            out.append(f"{r.phase}: {r.host_note}")
    return out


def parts_line(r: PhaseResult) -> str:
    if r.time_s is None:
        return f"{r.phase}: {r.kernels} kernels, {eng(r.flops, 'FLOP')}, {eng(r.bytes, 'B')} moved"
    shares = ", ".join(f"{k} {_pct(r.parts[k] / r.time_s if r.time_s else None)}" for k in PARTS)
    extra = f"; {r.uncovered} kernels outside the calibration" if r.uncovered else ""
    return (f"{r.phase}: {r.kernels} kernels, {eng(r.flops, 'FLOP')}, {eng(r.bytes, 'B')} moved; "
            f"time by bound: {shares}{extra}")


def op_table(r: PhaseResult, show_all: bool = False):
    from hwprobe.report.fit import light_table

    rows = r.rows if show_all else r.rows[:25] + [x for x in r.rows[25:] if x.missing]
    t = light_table(f"{r.phase}: per op (summed over layers)"
                    + ("" if len(rows) == len(r.rows) else f", top {len(rows)} of {len(r.rows)} (--all for every op)"))
    timed = r.time_s is not None
    cols = ("op", "kind", "n", "shape (one)", "FLOPs", "bytes")
    cols += ("bound", "time", "share", "roofline") if timed else ()
    for c in cols:
        t.add_column(c, justify="left" if c in ("op", "kind", "shape (one)", "bound") else "right", no_wrap=True)
    for x in rows:
        cells = [x.group, x.kind, str(x.count), x.shape, eng(x.flops), eng(x.bytes, "B")]
        if timed:
            share = x.time_s / r.time_s if r.time_s else None
            cells += [x.bound, "missing" if x.missing else _t(x.time_s), _pct(share), _t(x.roofline_s)]
        t.add_row(*cells)
    return t


def render(a: LLMAnalysis, console, show_all: bool = False, wide: bool = False) -> None:
    for line in header(a):
        console.print(line)
    for line in summary(a):
        console.print(line)
    for r in a.phases.values():
        console.print(parts_line(r))
        from hwprobe.report.fit import print_table

        # at a narrow width the least needed columns go (and are named), never every cell cut short
        print_table(console, op_table(r, show_all), ("roofline", "bytes", "FLOPs", "n", "shape (one)", "kind"), wide)
