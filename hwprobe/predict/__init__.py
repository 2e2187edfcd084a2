"""Predicted model time from the measured profile: kernels priced at the calibrated efficiency of their own
shapes, plus the runtime's per-kernel floor (eager, CUDA graph, fused)."""

from hwprobe.predict.ops import KINDS, RUNTIMES, KernelOp, OpTime

__all__ = ["KINDS", "RUNTIMES", "KernelOp", "OpTime"]
