"""The probe registry, by family: compute/, memory/, interconnect/, cpu/, calibration/ (prediction curves),
health (verdicts, hwprobe.health).
Every probe module is listed here once; modules import their GPU libraries lazily, inside the probe, so
listing probes never loads CuPy."""

from __future__ import annotations

import importlib

from hwprobe.errors import InputError
from hwprobe.probes.base import _REGISTRY, Probe, ProbeContext, probe

__all__ = ["Probe", "ProbeContext", "probe", "registry", "get"]

MODULES = (
    "health.verdicts",
    "cpu.compute",
    "cpu.stream",
    "compute.fma",
    "compute.mma",
    "compute.gemm",
    "compute.fp8",
    "compute.gemm_power",
    "compute.sparse",
    "memory.dram",
    "memory.cache",
    "memory.latency",
    "memory.l2map",
    "memory.hopper",
    "interconnect.host",
    "interconnect.p2p",
    "interconnect.nccl",
    "interconnect.ncclpairs",
    "compute.roofline",
    "calibration.launch",
    "calibration.gemm_shapes",
    "calibration.memkernels",
    "calibration.torch_kernels",
    "calibration.tp_host",
)


def registry() -> dict[str, Probe]:
    for mod in MODULES:
        importlib.import_module(f"hwprobe.probes.{mod}")
    return dict(sorted(_REGISTRY.items()))


def get(name: str) -> Probe:
    reg = registry()
    if name not in reg:
        raise InputError(f"unknown probe {name!r}; known probes: {', '.join(reg)}")
    return reg[name]
