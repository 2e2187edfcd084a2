"""What the memory probes move and where they sample: byte accounting (BabelStream semantics), working-set
size plans and the roofline trace's FLOP-per-byte plan. Pure Python, tested on the CPU."""

from __future__ import annotations

import math
from dataclasses import dataclass

# ---------------------------------------------------------------------------------------------------------------
# Byte accounting (BabelStream semantics: no write-allocate traffic counted)

# The one STREAM byte table: arrays one pass touches (the GPU's dram probe and the CPU's STREAM count the same)
STREAM_ARRAYS = {"read": 1, "write": 1, "copy": 2, "scale": 2, "add": 3, "triad": 3}


def stream_bytes(op: str, array_bytes: int) -> int:
    """Bytes one pass of ``op`` moves over arrays of ``array_bytes`` each: read 1x, write 1x, copy/scale 2x,
    add/triad 3x. A copy counts its read and its write."""
    if op not in STREAM_ARRAYS:
        raise ValueError(f"unknown stream op {op!r}; known: {', '.join(STREAM_ARRAYS)}")
    return STREAM_ARRAYS[op] * int(array_bytes)


def bytes_counted(op: str) -> str:
    """The human-readable byte convention stored in Measurement.bytes_counted."""
    return {
        "read": "bytes read (1x array)",
        "write": "bytes written (1x array), no write-allocate",
        "copy": "read + write (2x array)",
        "scale": "read + write (2x array)",
        "add": "2 reads + 1 write (3x array)",
        "triad": "2 reads + 1 write (3x array)",
        "memcpy_d2d": "read + write (2x bytes copied)",
    }[op]


# ---------------------------------------------------------------------------------------------------------------
# Sweep planning

def align_up(x: int, a: int) -> int:
    return -(-int(x) // a) * a


def align_down(x: int, a: int) -> int:
    return int(x) // a * a


def log_sizes(lo: int, hi: int, per_octave: int = 4, align: int = 256) -> list[int]:
    """Sizes from ``lo`` to ``hi`` (both included, after alignment), ``per_octave`` points per doubling,
    each rounded up to a multiple of ``align``; strictly increasing."""
    if lo <= 0 or hi < lo:
        raise ValueError(f"bad range {lo}..{hi}")
    n = int(math.floor(per_octave * math.log2(hi / lo) + 1e-9))
    raw = [lo * 2.0 ** (i / per_octave) for i in range(n + 1)] + [hi]
    out: list[int] = []
    for s in raw:
        v = min(align_up(s, align), align_down(hi, align)) if hi >= align else align
        if not out or v > out[-1]:
            out.append(v)
    return out


def refine_between(a: int, b: int, per_octave: int = 16, align: int = 256, max_points: int = 8) -> list[int]:
    """Extra sizes strictly between ``a`` and ``b`` (a knee's bracket), ``per_octave`` per doubling."""
    if b <= a:
        return []
    n = min(max_points, int(math.ceil(per_octave * math.log2(b / a))) - 1)
    if n <= 0:
        return []
    pts = [a * (b / a) ** ((i + 1) / (n + 1)) for i in range(n)]
    out = sorted({align_up(p, align) for p in pts})
    return [p for p in out if a < p < b]


def stream_array_bytes(l2_bytes: int, free_bytes: int, *, n_arrays: int = 3, target_bytes: int = 1 << 30,
                       min_l2_factor: float = 4.0, mem_fraction: float = 0.25, align: int = 1 << 21) -> int:
    """Bytes per array for a DRAM stream test: ``target_bytes`` if the memory budget allows, never below
    ``min_l2_factor`` x L2. Raises ValueError (the probe turns it into Skip) when the budget is too small."""
    need = align_up(max(min_l2_factor * l2_bytes, align), align)
    budget = align_down(mem_fraction * free_bytes / n_arrays, align)
    if budget < need:
        raise ValueError(
            f"{n_arrays} arrays of >= {need / 2**20:.0f} MiB ({min_l2_factor:g}x L2) do not fit in "
            f"{mem_fraction:.0%} of free memory ({free_bytes / 2**30:.1f} GiB)"
        )
    return max(need, min(align_down(target_bytes, align), budget))


# ---------------------------------------------------------------------------------------------------------------
# Plateaus and knees

# ---------------------------------------------------------------------------------------------------------------
# Roofline accounting and fit

@dataclass(frozen=True)
class RoofLanes:
    lanes: int            # independent arithmetic lanes per 16-byte vector
    fma_flops: int        # FLOPs (or OPs) per FMA instruction on one lane
    add_flops: int        # FLOPs of the final accumulate per lane
    kernel: str


ROOF_PRECISIONS = {
    "fp32": RoofLanes(4, 2, 1, "roof_fp32"),
    "fp64": RoofLanes(2, 2, 1, "roof_fp64"),
    "fp16": RoofLanes(4, 4, 2, "roof_fp16x2"),   # half2 lanes: HFMA2 = 2 FMAs; sum in fp32 = 2 FADDs
    "int32": RoofLanes(4, 2, 1, "roof_int32"),
}
VECTOR_BYTES = 16


def roofline_flops_per_vector(precision: str, m: int) -> int:
    r = ROOF_PRECISIONS[precision]
    return r.lanes * (m * r.fma_flops + r.add_flops)


def roofline_intensity(precision: str, m: int) -> float:
    """FLOP (or OP) per byte read for a chain of ``m`` FMAs per lane."""
    return roofline_flops_per_vector(precision, m) / VECTOR_BYTES


def roofline_plan(precision: str, lo: float = 0.125, hi: float = 1024.0,
                  per_octave: int = 1) -> list[tuple[int, float]]:
    """(m, intensity) pairs roughly log-spaced from ``lo`` to ``hi``; starts at the lowest intensity the
    kernel can do (m = 0: load + accumulate only), so it may start above ``lo``."""
    r = ROOF_PRECISIONS[precision]
    out: dict[int, float] = {}
    n = int(round(per_octave * math.log2(hi / lo)))
    for i in range(n + 1):
        target = lo * 2.0 ** (i / per_octave)
        m = max(0, round((target * VECTOR_BYTES / r.lanes - r.add_flops) / r.fma_flops))
        out[m] = roofline_intensity(precision, m)
    return sorted(out.items())


