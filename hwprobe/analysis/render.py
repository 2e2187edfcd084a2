"""An Analysis as terminal tables (rich) and as JSON-ready data."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from hwprobe.units import si

if TYPE_CHECKING:
    from hwprobe.analysis.roofline import Analysis

MAX_ROWS = 40          # longer models show their top rows by time unless --all


def eng(x, unit: str = "") -> str:
    """12345678 -> '12.3 M'; None/NaN -> '-'."""
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    for f, p in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= f:
            return f"{x / f:.3g} {p}{unit}"
    return f"{x:.3g} {unit}".rstrip()


def _t(x) -> str:
    return "-" if x is None or (isinstance(x, float) and not math.isfinite(x)) else si(x, "s")


def _pct(x) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{100 * x:.2g}%" if x < 0.01 else f"{100 * x:.0f}%"


def header(a: Analysis) -> list[str]:
    m, o = a.model, a.options
    lines = [f"[bold]{m.name}[/bold]  ({m.source}, {len(m.layers)} layers, batch {m.batch}, "
             f"{m.params / 1e6:.3g} M parameters, {m.macs / 1e9:.4g} G multiply-adds)",
             f"ceilings: {a.source_label}; precision {o.precision}; level {o.level}; path {o.path}"]
    return lines + [f"  {n}" for n in a.notes]


def layer_table(a: Analysis, show_all: bool = False):
    from hwprobe.report.fit import light_table

    df = a.layers
    roofs = "time_s" in df
    joined = "measured_s" in df and df["measured_s"].notna().any()
    rows = df if show_all or len(df) <= MAX_ROWS else df.sort_values("time_s" if roofs else "ops",
                                                                     ascending=False).head(25).sort_index()
    by = "roof time" if roofs else "operations"
    t = light_table(None if rows is df else f"top {len(rows)} of {len(df)} layers by {by} (--all for every layer)",
                    title_justify="center")
    cols = ["#", "layer", "op", "ops", "bytes", "op/B"]
    if roofs:       # the time a layer takes at its roof: the roofline bound, not the predicted time
        cols += ["ceiling", "attainable", "bound", "roof time", "datasheet"]
    if joined:
        cols += ["measured", "of roof", "kernel unit"]
    cols += ["flags"]
    for c in cols:
        t.add_column(c, justify="left" if c in ("layer", "op", "ceiling", "bound", "flags", "kernel unit") else "right",
                     overflow="fold" if c == "flags" else "ellipsis", max_width=48 if c == "flags" else None)
    for i, r in rows.iterrows():
        cells = [str(i), r["name"], r["op"], eng(r["ops"]), eng(r["bytes"], "B"), eng(r["intensity"])]
        if roofs:
            cells += [f"{r['precision']} {r['unit']} {r['path']}", eng(r["attainable"], "op/s"),
                      f"{r['bound']} ({r['level']})" if r["bound"] == "memory" else r["bound"], _t(r["time_s"]),
                      _t(r["datasheet_time_s"])]
        if joined:
            cells += [_t(r["measured_s"]), _pct(r["of_attainable"]), r["kernel_unit"] or "-"]
        flags = [x for x in (r.get("align_short") or "", "" if r["modelled"] else "not modelled", r.get("note") or "")
                 if x]
        cells.append("; ".join(flags))
        t.add_row(*cells)
    return t


def totals_lines(a: Analysis) -> list[str]:
    s = a.totals
    c = a.convention
    out = [f"total: {eng(s['ops'])}op, {eng(s['bytes'], 'B')} -> {s['intensity']:.4g} op/B "
           f"({c.name} convention)" if s.get("intensity") else f"total: {eng(s['ops'])}op, {eng(s['bytes'], 'B')}"]
    if "time_s" in s:
        ds = f"; datasheet {_t(s['datasheet_time_s'])}" if s.get("datasheet_time_s") else ""
        out.append(f"roofline bound {_t(s['time_s'])} per batch ({eng(s['attainable'], 'op/s')} on the measured "
                   f"roofs, every layer at its roof: a floor, not a prediction){ds}; "
                   f"{_pct(s['memory_bound_time_share'])} of the bound memory-bound")
    if s.get("not_modelled"):
        out.append(f"{s['not_modelled']} layer(s) not modelled: bytes only")
    return out


def whatif_table(a: Analysis):
    from hwprobe.report.fit import light_table

    t = light_table("precision what-if (measured roofs, storage bytes per precision)")
    for c in ("precision", "time", "vs fp32", "step", "what limits the step"):
        t.add_column(c, justify="left" if c in ("precision", "what limits the step", "step") else "right")
    for _, r in a.whatif.iterrows():
        if not r["available"]:
            t.add_row(r["precision"], "-", "-", "-", f"not in the ceilings: {r['limit']}")
            continue
        step = f"{r['speedup_vs_previous']:.2f}x vs {r['vs']}" if isinstance(r["vs"], str) else "-"
        t.add_row(r["precision"], _t(r["time_s"]), f"{r['speedup_vs_fp32']:.2f}x" if r["speedup_vs_fp32"] else "-",
                  step, r["limit"])
    return t


# Left out first at a narrow width (the layer table), until it fits: --wide shows them all.
NARROW_DROP = ("datasheet", "ceiling", "bytes", "kernel unit", "flags", "op/B", "attainable", "of roof")


def render(a: Analysis, con, show_all: bool = False, wide: bool = False) -> None:
    from hwprobe.analysis.advice import kernel_consumers, top_consumers

    for line in header(a):
        con.print(line)
    from hwprobe.report.fit import print_table

    print_table(con, layer_table(a, show_all), NARROW_DROP, wide)
    for line in totals_lines(a):
        con.print(line)
    if a.prediction is not None:
        from hwprobe.predict.render import prediction_lines

        for line in prediction_lines(a.prediction):
            con.print(line)
    if not a.whatif.empty:
        print_table(con, whatif_table(a), wide=wide)
    bad = a.layers[a.layers["align"].astype(bool)] if "align" in a.layers else a.layers.iloc[0:0]
    if len(bad):
        con.print("[bold]Tensor Core alignment[/bold] (channels per group / GEMM K,N; priced with the profile's "
                  "measured slowdown)")
        for _, r in bad.iterrows():
            con.print(f"  {r['name']}: {r['align']}")
    if a.timing is not None:
        _timing(a, con)
        if not a.timing.groups and a.timing.kernels:
            con.print("[bold]top kernels[/bold] (no kernel name matches a layer: kernel-level view; each "
                      "kernel's total time over all its instances)")
            for t, share, k, tip in kernel_consumers(a.timing):
                con.print(f"  [{share:.0%}] {k.name[:70]} - {_t(t)} total: {k.unit} {k.precision or ''} "
                          f"({k.confidence}) -> {tip}")
    if "time_s" in a.layers:
        what = ("measured" if a.timing is not None and any(g.measured_s for g in a.timing.groups)
                else "roofline bound")
        con.print(f"[bold]top 5 time consumers[/bold] ({what})")
        for i, c in enumerate(top_consumers(a, a.timing), 1):
            rate = f", {_pct(c.of_attainable)} of attainable" if c.of_attainable is not None else ""
            con.print(f"  {i}. [{c.share:.1%}] {c.name} - {_t(c.time_s)} ({c.bound}-bound{rate})")
            for tip in c.advice:
                con.print(f"       -> {tip}")
        if a.timing is not None and a.timing.nested:
            con.print("     (shares among the matched layers: this table's rows nest, so they don't add up)")
    from hwprobe.analysis.seed import seed_line

    line = seed_line(a)
    if line:
        con.print(line)


def _timing(a: Analysis, con) -> None:
    j = a.timing
    con.print(f"[bold]measured times[/bold]: {j.per}")
    for t in j.times:
        for n in t.notes:
            con.print(f"  note: {n}")
    n_rec = sum(g.records for g in j.groups)
    con.print(f"  matched {n_rec} record(s) to {sum(len(g.layers) for g in j.groups)} layer(s); "
              f"{len(j.untimed)} layer(s) without a time")
    total = None if j.nested else (sum(g.measured_s for g in j.groups)
                                   + sum((r.time_s or 0) for r in j.unmatched + j.reformats))
    if j.reformats:
        rt = sum(r.time_s or 0 for r in j.reformats)
        con.print(f"  {len(j.reformats)} TensorRT reformat layer(s) (layout conversions, in no model layer): "
                  f"{_t(rt)} ({rt / total:.1%} of the time)" if total else "")
    if j.unmatched:
        ut = sum(r.time_s or 0 for r in j.unmatched)
        names = ", ".join(r.name[:40] for r in sorted(j.unmatched, key=lambda r: -(r.time_s or 0))[:5])
        share = f" ({ut / total:.1%} of the time)" if total else (" (nested ranges: no shares)" if j.nested else "")
        con.print(f"  not matched to any layer: {len(j.unmatched)} record(s){share}: {names}"
                  + (" ..." if len(j.unmatched) > 5 else ""))
    off = [(r, k) for r, k in j.kernels if k.gemm_on_cuda_cores]
    if off:
        con.print(f"  {len(off)} kernel(s) ran GEMM/conv work on CUDA cores: "
                  + ", ".join(sorted({r.name[:40] for r, _ in off})[:5]))


def to_dict(a: Analysis) -> dict[str, Any]:
    from hwprobe.analysis.advice import top_consumers
    from hwprobe.analysis.seed import seed_row

    def records(df):
        return df.astype(object).where(df.notna(), None).to_dict(orient="records")

    out = {
        "model": {"name": a.model.name, "source": a.model.source, "layers": len(a.model.layers),
                  "batch": a.model.batch, "parameters": a.model.params, "multiply_adds": a.model.macs},
        "ceilings": a.source_label, "options": vars(a.options) if hasattr(a.options, "__dict__") else {},
        "convention": {"name": a.convention.name, "description": a.convention.description},
        "totals": a.totals, "notes": a.notes, "layers": records(a.layers),
        "whatif": records(a.whatif) if not a.whatif.empty else [],
    }
    if "time_s" in a.layers:
        out["top"] = [{"name": c.name, "time_s": c.time_s, "measured": c.measured, "share": c.share,
                       "bound": c.bound, "of_attainable": c.of_attainable, "advice": c.advice,
                       "kernel": c.kernel.to_dict() if c.kernel else None} for c in top_consumers(a, a.timing)]
    if a.timing is not None:
        j = a.timing
        out["timing"] = {"per": j.per, "matched_records": sum(g.records for g in j.groups),
                         "unmatched": [{"name": r.name, "time_s": r.time_s} for r in j.unmatched],
                         "reformats": [{"name": r.name, "time_s": r.time_s} for r in j.reformats],
                         "untimed_layers": j.untimed,
                         "kernels": [dict(k.to_dict(), time_s=r.time_s, total_s=r.total_s) for r, k in j.kernels]}
    if a.prediction is not None:
        out["prediction"] = a.prediction.to_dict()
    row = seed_row(a)
    if row:
        out["seed_model_table"] = row
    return out
