"""Predicted model time from the measured profile: the kernels a lowering produced (hwprobe.lowering) priced at
the calibrated efficiency of their own shapes, plus the runtime's per-kernel floor (eager, CUDA graph, fused)."""

from hwprobe.predict.ops import OpTime

__all__ = ["OpTime"]
