"""Shared fixtures. GPU tests (marked ``gpu``) skip themselves, with the reason, where no CUDA GPU is usable."""

from __future__ import annotations

import functools
import os

import pytest

# Whether the user set COLUMNS, decided once in the first process (pytest's, or xdist's controller) and passed on to
# the xdist workers, which inherit readline's COLUMNS=80 (below) into their os.environ as if a user had set it.
_USER_COLUMNS = "HWPROBE_TESTS_USER_COLUMNS"
os.environ.setdefault(_USER_COLUMNS, "1" if "COLUMNS" in os.environ else "")


@pytest.fixture(autouse=True, scope="session")
def _no_inherited_columns():
    """pytest imports readline, and GNU readline exports COLUMNS=80 into the process's environment (not into
    os.environ); every hwprobe started by a test would inherit it and, piped, print at 80 columns. A width the
    user set is kept; tests that want one pass COLUMNS themselves."""
    if not os.environ[_USER_COLUMNS]:
        os.environ.pop("COLUMNS", None)
        os.unsetenv("COLUMNS")
    yield


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
