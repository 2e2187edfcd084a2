"""The prediction in words and numbers: total, parts, the roofline bound beside it, the measured error of such
predictions, and the kernels that take the most time."""

from __future__ import annotations

from hwprobe.lowering.ops import GEMM_KINDS
from hwprobe.predict.estimate import Prediction
from hwprobe.units import si

RUNTIME_WORDS = {"graph": "replayed as a CUDA graph", "eager": "launched op by op from the host (eager)",
                 "fused": "with pointwise ops folded into their producers (TensorRT-style)"}


def prediction_lines(p: Prediction, top: int = 5) -> list[str]:
    total = p.time_s
    parts = p.parts()
    share = ", ".join(f"{k} {v / total:.0%}" for k, v in parts.items() if v > 0) if total else "-"
    err_txt = p.expected_error().text()
    head = (f"[bold]predicted time[/bold] ({RUNTIME_WORDS.get(p.runtime, p.runtime)}): {si(total, 's')} over "
            f"{len(p.kernels)} kernels")
    if p.roofline_s:
        head += f", {total / p.roofline_s:.1f}x what those kernels take at their roofs ({si(p.roofline_s, 's')})"
    lines = [head,
             f"  parts: {share}   ({err_txt})"]
    for n in p.notes:
        lines.append(f"  note: {n}")
    worst = sorted(p.kernels, key=lambda k: -k.time_s)[:top]
    if worst and total:
        lines.append("  kernels taking the most predicted time (beside each: its time at its roof, the layer "
                     "table's roof time):")
        for k in worst:
            shape = (f"{k.op.batch}x " if k.op.batch > 1 else "") + (
                f"{k.op.m}x{k.op.n}x{k.op.k}" if k.op.kind in GEMM_KINDS else f"{k.op.bytes / 1e6:.2f} MB")
            lines.append(f"    [{k.time_s / total:.1%}] {k.op.name[:40]} {k.op.kind} {shape}: {si(k.time_s, 's')} "
                         f"({k.bound}; at its roof {si(k.roofline_s, 's')})"
                         + ("" if k.covered else " [outside calibration]"))
    return [x for x in lines if x]
