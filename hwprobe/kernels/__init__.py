"""CUDA C sources (.cu beside this file), compiled with NVRTC through CuPy for the device's arch.

CuPy caches compiled modules on disk (~/.cupy/kernel_cache), so a second run skips NVRTC.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources


def source(name: str) -> str:
    """A kernel file's text with its local `#include "x.cuh"` lines inlined (NVRTC needs no include path)."""
    text = resources.files(__package__).joinpath(name).read_text()
    return re.sub(r'^#include "([\w.]+\.cuh)"$', lambda m: source(m.group(1)).replace("#pragma once", ""),
                  text, flags=re.M)


def arch_flag(cc_major: int, cc_minor: int, *, arch_specific: bool = False) -> str:
    """``-arch=sm_XY``; ``arch_specific`` asks for sm_90a-style targets (wgmma, setmaxnreg)."""
    suffix = "a" if arch_specific and cc_major >= 9 else ""
    return f"-arch=sm_{cc_major}{cc_minor}{suffix}"


@cache
def load(name: str, options: tuple[str, ...] = (), name_expressions: tuple[str, ...] | None = None,
         arch_specific: bool = False):
    """Compile ``name`` (a .cu file here) for the current device and return the cupy.RawModule."""
    import cupy as cp

    dev = cp.cuda.Device()
    major, minor = (int(x) for x in dev.compute_capability)
    opts = (arch_flag(major, minor, arch_specific=arch_specific), "-std=c++17", *options)
    mod = cp.RawModule(code=source(name), options=opts, name_expressions=name_expressions)
    mod.compile()
    return mod
