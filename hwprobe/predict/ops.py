"""A kernel's predicted time (``OpTime``): what the predictor (hwprobe.predict.model) answers for each
``KernelOp`` a lowering produced (hwprobe.lowering.ops)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hwprobe.lowering.ops import KernelOp


@dataclass
class OpTime:
    """A kernel's predicted time and its parts. ``time_s`` is what the runtime spends on it, never below
    ``roofline_s``, the kernel's roofline bound: its math at the library ceiling, its bytes at the DRAM slope
    (a memory-bound kernel's activations that fit in L2: at L2's measured slope, else none; a producer's output
    need not leave L2). ``extra['held_at_floor_s']``: seconds added where the calibration priced it below that
    bound."""

    op: KernelOp
    time_s: float
    compute_s: float = 0.0            # at the calibrated efficiency for this shape (not the peak)
    memory_s: float = 0.0             # bytes at the calibrated bandwidth for this size
    launch_s: float = 0.0             # the runtime's per-kernel floor (host launch for eager)
    comm_s: float = 0.0
    bound: str = ""                   # compute | memory | launch | comm
    roofline_s: float = 0.0
    covered: bool = True              # False: the shape lies outside what the calibration measured
    source: str = ""                  # which calibration curve priced it
    note: str = ""
    extra: dict = field(default_factory=dict)
