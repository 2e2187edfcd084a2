"""The probe registry. Every probe module is listed here once; modules import their GPU libraries
lazily, inside the probe, so listing probes never loads CuPy."""

from __future__ import annotations

import importlib

from hwprobe.errors import InputError
from hwprobe.probes.base import _REGISTRY, Probe, ProbeContext, probe

__all__ = ["Probe", "ProbeContext", "probe", "registry", "get"]

MODULES = (
    "cpu_compute",
    "cpu_stream",
    "gpu_fma",
    "gpu_mma",
    "gpu_gemm",
    "gpu_fp8",
    "gpu_gemm_power",
    "gpu_sparse",
    "gpu_dram",
    "gpu_cache",
    "gpu_latency",
    "gpu_host",
    "gpu_roofline",
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
