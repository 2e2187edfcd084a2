"""What one analysis asks (Options) and where one layer lands at one precision (Placement): the data that
hwprobe.analysis.roofline (which places layers) and hwprobe.analysis.whatif (which compares precisions) share."""

from __future__ import annotations

from dataclasses import dataclass

from hwprobe.analysis.roofs import Alignment
from hwprobe.roofline import Roof


@dataclass(frozen=True)
class Options:
    precision: str = "fp32"
    convention: str = "standard"
    path: str = "auto"            # auto | library | instruction | best
    level: str = "dram"           # dram | l2 | auto (footprint fits the measured L2: the L2 slope)


@dataclass
class Placement:
    """One layer at one precision: the roof it meets and what that predicts."""

    precision: str
    unit: str
    path: str
    level: str
    ops: float
    bytes: float
    roof: Roof
    time_s: float
    bound: str
    alignment: Alignment | None = None
    note: str = ""
    storage: str = ""             # the precision tensors are stored in (``precision`` is the math's)
