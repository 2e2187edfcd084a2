"""Where compiled kernels are cached: a directory the user can write, never the package's source tree.

numba caches next to the module by default and CuPy under ~/.cupy; on a read-only install or without a HOME
both fail. hwprobe points them (unless the user already did, via NUMBA_CACHE_DIR / CUPY_CACHE_DIR) at
$XDG_CACHE_HOME/hwprobe or ~/.cache/hwprobe, else a per-user temp directory. When nothing is writable the
kernels are simply compiled again: an unwritable cache costs a compile, never a failed probe.
"""

from __future__ import annotations

import os
import tempfile
from functools import cache
from pathlib import Path


def _writable(d: Path) -> bool:
    try:
        d.mkdir(parents=True, exist_ok=True)
        probe = d / f".w{os.getpid()}"
        probe.write_text("")
        probe.unlink()
        return True
    except OSError:
        return False


@cache
def cache_root() -> Path | None:
    """The first writable of $XDG_CACHE_HOME/hwprobe, ~/.cache/hwprobe, <tmp>/hwprobe-<uid>; None if none is."""
    cands = []
    if os.environ.get("XDG_CACHE_HOME"):
        cands.append(Path(os.environ["XDG_CACHE_HOME"]) / "hwprobe")
    home = os.environ.get("HOME")
    if home and Path(home).is_dir():
        cands.append(Path(home) / ".cache" / "hwprobe")
    uid = os.getuid() if hasattr(os, "getuid") else 0
    cands.append(Path(tempfile.gettempdir()) / f"hwprobe-{uid}")
    return next((d for d in cands if _writable(d)), None)


def configure() -> bool:
    """Point numba's and CuPy's caches at a writable directory; False when none exists (compile every time)."""
    root = cache_root()
    for var, sub in (("NUMBA_CACHE_DIR", "numba"), ("CUPY_CACHE_DIR", "cupy")):
        given = os.environ.get(var)
        if given and _writable(Path(given)):
            continue
        if root is None:
            os.environ.pop(var, None)
            continue
        os.environ[var] = str(root / sub)
    import sys

    numba_config = sys.modules.get("numba.core.config")
    if numba_config is not None and os.environ.get("NUMBA_CACHE_DIR"):
        numba_config.CACHE_DIR = os.environ["NUMBA_CACHE_DIR"]
    return root is not None or bool(os.environ.get("NUMBA_CACHE_DIR"))
