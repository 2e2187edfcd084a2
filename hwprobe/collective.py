"""The measured NCCL curves of a profile, for pricing communication at the real message size.

A tensor-parallel layer all-reduces its activations (a few MiB per token batch), far below the 4 GiB where a
collective's ceiling sits: the time there is on the measured curve, not the ceiling. ``collective_curve`` gives the
points gpu.nccl measured for an op over N ranks (bytes, busbw, algbw, time per operation; nccl-tests' S and
definitions); ``collective_time`` interpolates that curve in log-log (time against bytes) and says when the size
lies outside the measured range (below it: the smallest size's time, a latency floor; above it: the largest size's
algorithm bandwidth carried on).

The curves live in the busbw ceiling's params of each collective link (``curves``: per variant, out of place and in
place; ``curve``: [size, busbw] only, in runs before in-place was measured, which were out of place).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from hwprobe import keys as K
from hwprobe.roofline import RooflineError

VARIANT_CHOICES = ("best", "out_of_place", "in_place")


@dataclass(frozen=True)
class CurvePoint:
    """One measured size: S in bytes (nccl-tests), bus and algorithm bandwidth (B/s), seconds per operation."""

    bytes: int
    busbw: float
    algbw: float
    time_s: float
    variant: str            # the variant this point came from ("best": the faster one at this size)


@dataclass(frozen=True)
class CollectiveTime:
    """The time of one operation of ``nbytes`` (S as nccl-tests counts it) from the measured curve."""

    op: str
    ranks: int
    nbytes: float
    seconds: float
    in_range: bool          # within the measured sizes (interpolated), else clamped/extrapolated
    how: str                # what was done, in words

    @property
    def algbw(self) -> float:
        return self.nbytes / self.seconds

    def __iter__(self):
        """(seconds, in_range, how): what hwprobe.predict unpacks when it prices a collective."""
        return iter((self.seconds, self.in_range, self.how))


# nccl-tests' collectives and how its busbw counts them (the probes time them; the predictor prices with them)
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "sendrecv")
SPLIT_OPS = ("all_gather", "reduce_scatter", "alltoall")     # S is n chunks of a per-rank count


def bus_factor(op: str, n: int) -> float:
    """busbw / algbw for ``op`` over ``n`` ranks (nccl-tests)."""
    if n < 1:
        raise ValueError(f"need at least one rank, not {n}")
    if op == "all_reduce":
        return 2 * (n - 1) / n
    if op in SPLIT_OPS:
        return (n - 1) / n
    if op in ("broadcast", "reduce", "sendrecv"):
        return 1.0
    raise ValueError(f"unknown collective {op!r}; known: {', '.join(OPS)}")



def _norm_op(op: str) -> str:
    o = str(op).strip().lower().replace("-", "_")
    o = {"allreduce": "all_reduce", "allgather": "all_gather", "reducescatter": "reduce_scatter",
         "all_to_all": "alltoall", "send_recv": "sendrecv"}.get(o, o)
    if o not in OPS:
        raise RooflineError(f"unknown collective {op!r}; known: {', '.join(OPS)}")
    return o


def _links(profile, op: str) -> list[tuple[str, Any]]:
    """(link name, busbw ceiling) of every collective link for ``op`` (process mode first, then the others)."""
    out = []
    for name, link in (getattr(profile, "links", None) or {}).items():
        c = link.ceilings.get("busbw")
        named = name.split(".")[1] if "." in name else name
        if link.kind == "collective" and c is not None and (c.params or {}).get(K.OP, named) == op:
            out.append((name, c))
    return sorted(out, key=lambda nc: (nc[0] != f"nccl.{op}", nc[0]))


def _variant_points(params: dict[str, Any], op: str, ranks: int) -> dict[str, list[CurvePoint]]:
    curves = params.get(K.CURVES)
    if curves:
        return {v: [CurvePoint(int(p[0]), float(p[1]), float(p[2]), float(p[3]), v) for p in pts]
                for v, pts in curves.items()}
    f = bus_factor(op, ranks)       # an older run: [size, busbw], out of place
    return {"out_of_place": [CurvePoint(int(s), float(b), float(b) / f, int(s) * f / float(b), "out_of_place")
                             for s, b in params.get(K.CURVE) or [] if b]}


def _best(by_variant: dict[str, list[CurvePoint]]) -> list[CurvePoint]:
    best: dict[int, CurvePoint] = {}
    for pts in by_variant.values():
        for p in pts:
            if p.bytes not in best or p.time_s < best[p.bytes].time_s:
                best[p.bytes] = p
    return [best[s] for s in sorted(best)]


def collective_curve(profile, op: str = "all_reduce", ranks: int | None = None,
                     variant: str = "best") -> list[CurvePoint]:
    """The measured points of ``op`` over ``ranks`` ranks (None: the only rank count measured, else the largest),
    in size order. ``variant``: "best" (the faster of out of place and in place at each size), "out_of_place" or
    "in_place". Raises RooflineError when the profile has no such curve."""
    return _pick(profile, _norm_op(op), ranks, variant)[1]


def _pick(profile, o: str, ranks: int | None, variant: str) -> tuple[int, list[CurvePoint]]:
    """(the rank count chosen, its points) for collective_curve and collective_time."""
    if variant not in VARIANT_CHOICES:
        raise RooflineError(f"variant must be one of {', '.join(VARIANT_CHOICES)}, not {variant!r}")
    cands = [(name, c) for name, c in _links(profile, o) if ranks is None or c.params.get(K.RANKS) == ranks]
    if not cands:
        have = sorted({(c.params.get(K.RANKS)) for _, c in _links(profile, o)} - {None})
        raise RooflineError(f"no measured {o} curve" + (f" over {ranks} ranks" if ranks else "")
                            + (f" (measured over {', '.join(map(str, have))} ranks)" if have else
                               " in this profile (run --suite multigpu on two or more GPUs)"))
    top = ranks
    if ranks is None:
        top = max(c.params.get(K.RANKS) or 0 for _, c in cands)
        cands = [(n, c) for n, c in cands if (c.params.get(K.RANKS) or 0) == top]
    _, ceiling = cands[0]
    by_variant = _variant_points(ceiling.params, o, int(ceiling.params.get(K.RANKS) or 2))
    pts = _best(by_variant) if variant == "best" else by_variant.get(variant, [])
    if not pts:
        raise RooflineError(f"no verified {variant.replace('_', '-')} points for {o} in this profile "
                            f"(it has: {', '.join(by_variant) or 'none'})")
    return int(top), pts


def collective_time(profile, op: str, nbytes: float, ranks: int | None = None,
                    variant: str = "best") -> CollectiveTime:
    """Seconds for one ``op`` of ``nbytes`` (S as nccl-tests counts it: the per-rank buffer of all_reduce, the whole
    gathered buffer of all_gather, ...), interpolated in log-log between the measured sizes around it. Outside
    the measured range: below it, the smallest size's time (latency-bound; never faster); above it, the largest
    size's algorithm bandwidth carried on. ``in_range`` and ``how`` say which."""
    if not isinstance(nbytes, (int, float)) or not math.isfinite(nbytes) or nbytes <= 0:
        raise RooflineError(f"nbytes must be a positive number of bytes, not {nbytes!r}")
    o = _norm_op(op)
    n, pts = _pick(profile, o, ranks, variant)
    lo, hi = pts[0], pts[-1]
    if nbytes < lo.bytes:
        return CollectiveTime(o, n, nbytes, lo.time_s, False,
                              f"below the smallest measured size ({lo.bytes} B): its time, a latency floor")
    if nbytes > hi.bytes:
        return CollectiveTime(o, n, nbytes, nbytes / hi.algbw, False,
                              f"above the largest measured size ({hi.bytes} B): its algbw "
                              f"({hi.algbw / 1e9:.4g} GB/s) carried on")
    exact = next((p for p in pts if p.bytes == nbytes), None)
    if exact is not None:
        return CollectiveTime(o, n, nbytes, exact.time_s, True, f"measured at {exact.bytes} B ({exact.variant})")
    for a, b in zip(pts, pts[1:], strict=False):
        if a.bytes < nbytes < b.bytes:
            w = math.log(nbytes / a.bytes) / math.log(b.bytes / a.bytes)
            t = math.exp(math.log(a.time_s) + w * (math.log(b.time_s) - math.log(a.time_s)))
            return CollectiveTime(o, n, nbytes, t, True,
                                  f"log-log between the measured {a.bytes} B and {b.bytes} B")
    raise AssertionError("unreachable: nbytes lies between two measured sizes")

