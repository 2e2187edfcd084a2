"""Shared fixtures. GPU tests (marked ``gpu``) skip themselves, with the reason, where no CUDA GPU is usable."""

from __future__ import annotations

import functools

import pytest


@functools.cache
def gpu_unavailable_reason() -> str | None:
    try:
        import cupy as cp
    except Exception as e:  # ImportError, or a CUDA library that fails to load
        return f"CuPy not importable ({type(e).__name__}): install hwprobe[cuda13] on a GPU machine"
    try:
        n = cp.cuda.runtime.getDeviceCount()
    except Exception as e:
        return f"no usable CUDA driver/device: {e}"
    return None if n > 0 else "no CUDA device found"


def pytest_collection_modifyitems(config, items):
    reason = None
    for item in items:
        if "gpu" in item.keywords:
            reason = reason or gpu_unavailable_reason()
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
