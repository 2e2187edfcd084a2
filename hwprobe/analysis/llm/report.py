"""Price a lowered LLM pass with a predictor and sum it up: time, the share of each part, the roofline bound beside.

The pricer is anything with ``time(op: KernelOp) -> OpTime`` (hwprobe.predict.model.Predictor). Identical kernels
(the same shape in every layer) are priced once. A collective the pricer cannot price (no measured links in the
profile: it raises, answers a note starting "missing", a zero time over several ranks, or a time that is not a
finite number) is kept as *missing*: the pass's time then leaves communication out and says so, never a silent
zero. Each kernel's time goes to the part its bound names: compute, memory, launch (the predictor's "latency":
a kernel held by its floor, not by its FLOPs or bytes) or comm.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Protocol

from hwprobe.lowering.llm.graph import group
from hwprobe.lowering.ops import COMM_KINDS, KernelOp
from hwprobe.predict.ops import OpTime
from hwprobe.vocab import Precision

PARTS = ("compute", "memory", "launch", "comm")
BOUND_PART = {"compute": "compute", "memory": "memory", "launch": "launch", "latency": "launch", "comm": "comm"}


class Pricer(Protocol):
    def time(self, op: KernelOp) -> OpTime: ...


@dataclass
class Priced:
    op: KernelOp
    t: OpTime | None
    missing: str = ""                  # why a collective has no price


@dataclass
class Row:
    """One role (e.g. q_proj) summed over the layers."""

    group: str
    kind: str
    count: int
    shape: str
    time_s: float = 0.0
    roofline_s: float = 0.0
    flops: float = 0.0
    bytes: float = 0.0
    bounds: dict[str, int] = field(default_factory=dict)
    missing: int = 0
    uncovered: int = 0

    @property
    def bound(self) -> str:
        if self.missing:
            return "missing"
        return max(self.bounds, key=self.bounds.get) if self.bounds else ""


@dataclass
class PhaseResult:
    phase: str
    batch: int
    tokens: int
    context: int
    kernels: int
    flops: float
    bytes: float
    rows: list[Row]
    time_s: float | None = None        # None: no pricer (counts only)
    roofline_s: float | None = None
    parts: dict[str, float] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    uncovered: int = 0
    power_note: str = ""               # what the power cap could add, said, not applied (Predictor.power_note)
    host_note: str = ""                # eager: the host's time per kernel and the GPU's wait for it (a queue)

    @property
    def tokens_per_s(self) -> float | None:
        """Prefill: prompt tokens per second; decode: generated tokens per second over the batch."""
        if not self.time_s:
            return None
        return self.batch * self.tokens / self.time_s


def op_bytes(op: KernelOp) -> float:
    """Bytes moved: given for memory kinds and attention; from the shape for a GEMM (weight at weight_bits)."""
    if op.bytes or op.kind != "gemm":
        return op.bytes
    a = 1 if op.precision in (Precision.FP8, Precision.INT8) else 2
    w = op.weight_bits / 8 if op.weight_bits else a
    return op.batch * (op.m * op.k * a + op.k * op.n * w + op.m * op.n * 2)


def _shape(op: KernelOp) -> str:
    if op.kind in ("gemm", "attention"):
        b = f"{op.batch}x" if op.batch > 1 else ""
        q = f" w{op.weight_bits}" if op.weight_bits else ""
        return f"{b}{op.m}x{op.n}x{op.k}{' causal' if op.causal else ''}{q}"
    if op.kind in COMM_KINDS:
        return f"{op.bytes / 1e6:.3g} MB x{op.ranks}"
    return f"{op.bytes / 1e6:.3g} MB"


def _price(ops: list[KernelOp], pricer: Pricer | None) -> list[Priced]:
    cache: dict[KernelOp, Priced] = {}
    out = []
    for op in ops:
        if pricer is None:
            out.append(Priced(op, None))
            continue
        key = replace(op, name="", layers=())
        if key not in cache:
            cache[key] = _price_one(key, pricer)
        p = cache[key]
        out.append(Priced(op, p.t, p.missing))
    return out


def _price_one(op: KernelOp, pricer: Pricer) -> Priced:
    if op.kind not in COMM_KINDS:
        return Priced(op, pricer.time(op))
    try:
        t = pricer.time(op)
    except Exception as e:  # noqa: BLE001 - any failure to price a collective is shown, not hidden
        return Priced(op, None, f"{op.kind} x{op.ranks}: {e}")
    unpriced = not math.isfinite(t.time_s) or t.time_s < 0 or (t.time_s == 0 and op.ranks > 1)
    if unpriced or t.note.startswith("missing"):
        return Priced(op, None, f"{op.kind} x{op.ranks}: {t.note or 'no measured link'}")
    return Priced(op, t)


def _rows(priced: list[Priced]) -> list[Row]:
    rows: dict[str, Row] = {}
    for p in priced:
        g = group(p.op.name)
        r = rows.setdefault(g, Row(g, p.op.kind, 0, _shape(p.op)))
        r.count += 1
        r.flops += p.op.total_flops
        r.bytes += op_bytes(p.op)
        if p.missing:
            r.missing += 1
        elif p.t is not None:
            r.time_s += p.t.time_s
            r.roofline_s += p.t.roofline_s
            r.bounds[p.t.bound] = r.bounds.get(p.t.bound, 0) + 1
            r.uncovered += 0 if p.t.covered else 1
    return sorted(rows.values(), key=lambda r: (-r.time_s, -r.bytes))


def price(phase: str, batch: int, tokens: int, context: int, ops: list[KernelOp],
          pricer: Pricer | None) -> PhaseResult:
    """Sum a pass: each kernel's time goes to the part that bounds it (compute, memory, launch, comm)."""
    priced = _price(ops, pricer)
    res = PhaseResult(phase, batch, tokens, context, len(ops), sum(o.total_flops for o in ops),
                      sum(op_bytes(o) for o in ops), _rows(priced))
    if pricer is None:
        return res
    res.parts = dict.fromkeys(PARTS, 0.0)
    res.time_s = res.roofline_s = 0.0
    for p in priced:
        if p.t is None:
            if p.missing and p.missing not in res.missing:
                res.missing.append(p.missing)
            continue
        res.time_s += p.t.time_s
        res.roofline_s += p.t.roofline_s
        part = BOUND_PART.get(p.t.bound, "compute")
        res.parts[part] += p.t.time_s
        res.uncovered += 0 if p.t.covered else 1
    note = getattr(pricer, "power_note", None)
    if note is not None:
        res.power_note = note([p.t for p in priced if p.t is not None], ops[0].precision if ops else "fp16")
    overhead = getattr(pricer, "run_overhead", None)
    if overhead is not None:    # once per pass: the graph replay, the library/framework switches (hwprobe.predict)
        timed = [p for p in priced if p.t is not None]
        parts = overhead([p.op for p in timed], [p.t for p in timed])
        extra = sum(parts.values())
        res.time_s += extra
        res.parts["launch"] += extra
        if "host_wait" in parts and hasattr(pricer, "eager_note"):
            res.host_note = pricer.eager_note(parts["host_wait"], len(timed))
    return res


def phase_dict(r: PhaseResult, all_rows: bool = True) -> dict:
    rows = r.rows if all_rows else r.rows[:25]
    total = r.time_s or 0.0
    return {
        "phase": r.phase, "batch": r.batch, "tokens": r.tokens, "context": r.context, "kernels": r.kernels,
        "flops": r.flops, "bytes": r.bytes, "time_s": r.time_s, "roofline_s": r.roofline_s,
        "tokens_per_s": r.tokens_per_s,
        "parts_s": r.parts, "shares": {k: (v / total if total else None) for k, v in r.parts.items()},
        "communication_missing": bool(r.missing), "missing": r.missing, "uncovered_kernels": r.uncovered,
        "power_note": r.power_note, "host_note": r.host_note,
        "ops": [{"op": x.group, "kind": x.kind, "count": x.count, "shape": x.shape, "time_s": x.time_s,
                 "share": (x.time_s / total if total else None), "bound": x.bound, "roofline_s": x.roofline_s,
                 "flops": x.flops, "bytes": x.bytes, "missing": x.missing, "uncovered": x.uncovered}
                for x in rows],
    }
