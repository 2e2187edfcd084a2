"""Precision what-if: FP32 -> TF32 -> FP16/BF16 -> FP8 -> INT8, per layer and in total, from the measured
roofs and the smaller bytes, with what limits each step ("memory-bound: INT8 halves the bytes: 1.9x")."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from hwprobe.analysis.placement import Options, Placement
from hwprobe.errors import InputError
from hwprobe.models.layers import Layer, Model
from hwprobe.roofline import RooflineError
from hwprobe.units import si
from hwprobe.vocab import ExecUnit, Precision

if TYPE_CHECKING:
    import pandas as pd

    from hwprobe.analysis.roofs import Source

# How a layer is placed at a precision (hwprobe.analysis.roofline.place, passed in: that module calls this one)
Place = Callable[["Source", Layer, str, Options], Placement]

CHAIN = (Precision.FP32, Precision.TF32, Precision.FP16, Precision.BF16, Precision.FP8, Precision.INT8)
PREVIOUS = {Precision.TF32: (Precision.FP32,), Precision.FP16: (Precision.TF32, Precision.FP32),
            Precision.BF16: (Precision.TF32, Precision.FP32),
            Precision.FP8: (Precision.FP16, Precision.BF16, Precision.TF32, Precision.FP32),
            Precision.INT8: (Precision.FP8, Precision.FP16, Precision.BF16, Precision.TF32, Precision.FP32)}


def rate_unit(precision: str) -> str:
    return "OP/s" if precision.startswith("int") else "FLOP/s"


def _bytes_verb(ratio: float) -> str:
    if abs(ratio - 1) < 1e-9:
        return "keeps the bytes"
    if abs(ratio - 2) < 1e-9:
        return "halves the bytes"
    return f"cuts the bytes {ratio:g}x"


def step_text(prev: Placement, cur: Placement) -> str:
    """Why one layer speeds up (or not) from ``prev``'s precision to ``cur``'s."""
    s = prev.time_s / cur.time_s if cur.time_s else float("inf")
    st = (cur.storage or cur.precision).upper()
    if cur.unit == ExecUnit.TENSOR_CORE:
        name = st
    elif cur.precision.upper() == st:
        name = f"{st} ({cur.unit})"
    else:
        name = f"{st} ({cur.precision} math on {cur.unit})"
    if cur.bound == "memory":
        ratio = prev.bytes / cur.bytes if cur.bytes else 1.0
        text = f"memory-bound: {name} {_bytes_verb(ratio)}: {s:.2g}x"
    else:
        u, v = rate_unit(cur.precision), rate_unit(prev.precision)
        text = f"compute-bound: {name} roof {si(cur.roof.peak, u)} vs {si(prev.roof.peak, v)}: {s:.2g}x"
    if cur.alignment and cur.alignment.factor and not cur.alignment.advice_only:
        text += f" (misaligned: {cur.alignment.factor:.2f}x slower)"
    return text


def placements(model: Model, source: Source, opts: Options, precision: str, place: Place) -> list[Placement] | str:
    """Every layer placed at ``precision``; a string saying why not where the source lacks a ceiling."""
    from dataclasses import replace

    o = replace(opts, precision=precision)
    try:
        return [place(source, layer, precision, o) for layer in model.layers]
    except (RooflineError, InputError) as e:
        return str(e)


def _total_text(prev_p: str, cur_p: str, prev: list[Placement], cur: list[Placement]) -> str:
    t_prev, t_cur = sum(p.time_s for p in prev), sum(p.time_s for p in cur)
    s = t_prev / t_cur if t_cur else float("inf")
    mem = sum(p.time_s for p in cur if p.bound == "memory") / t_cur if t_cur else 0.0
    # Credit the change to what bound each layer before the step: bytes for memory-bound, the roof otherwise.
    gain_mem = sum(a.time_s - b.time_s for a, b in zip(prev, cur, strict=True) if a.bound == "memory")
    gain_comp = sum(a.time_s - b.time_s for a, b in zip(prev, cur, strict=True) if a.bound == "compute")
    b_prev, b_cur = sum(p.bytes for p in prev), sum(p.bytes for p in cur)
    if abs(gain_mem) >= abs(gain_comp):
        text = f"memory-bound layers: {cur_p.upper()} {_bytes_verb(b_prev / b_cur)}: {s:.2g}x"
    else:
        tc = [p for p in cur if p.unit == ExecUnit.TENSOR_CORE]
        tp = [p for p in prev if p.bound == "compute"]
        roof = f" roof {si(tc[0].roof.peak, rate_unit(cur_p))}" if tc else ""
        was = f" vs {si(tp[0].roof.peak, rate_unit(tp[0].precision))}" if tp and tc else ""
        text = f"compute-bound layers: {cur_p.upper()}{roof}{was}: {s:.2g}x"
    text += f" (then {mem:.0%} of the time memory-bound)"
    bad = [p.alignment.factor for p in cur if p.alignment and p.alignment.factor and not p.alignment.advice_only]
    if bad:
        span = f"{min(bad):.2g}x" if min(bad) == max(bad) else f"{min(bad):.2g}-{max(bad):.2g}x"
        text += f"; {len(bad)} misaligned layer(s) pay {span}"
    return text


def whatif(model: Model, source: Source, opts: Options,
           place: Place) -> tuple[pd.DataFrame, dict[str, list[Placement]]]:
    """One row per precision of the chain (total predicted time, speed-ups, what limits the step), and every
    layer's placement per available precision."""
    import pandas as pd

    placed = {p: placements(model, source, opts, p, place) for p in CHAIN}
    ok = {p: v for p, v in placed.items() if not isinstance(v, str)}
    base = sum(x.time_s for x in ok["fp32"]) if "fp32" in ok else None
    rows = []
    for p in CHAIN:
        v = placed[p]
        if isinstance(v, str):
            rows.append({"precision": p, "available": False, "time_s": None, "speedup_vs_fp32": None,
                         "vs": None, "speedup_vs_previous": None, "bytes": None, "limit": v})
            continue
        t = sum(x.time_s for x in v)
        prev = next((q for q in PREVIOUS.get(p, ()) if q in ok), None)
        t_prev = sum(x.time_s for x in ok[prev]) if prev else None
        rows.append({"precision": p, "available": True, "time_s": t,
                     "speedup_vs_fp32": base / t if base and t else None, "vs": prev,
                     "speedup_vs_previous": t_prev / t if t_prev and t else None,
                     "bytes": sum(x.bytes for x in v),
                     "limit": _total_text(prev, p, ok[prev], v) if prev else "baseline"})
    return pd.DataFrame(rows), ok
